// The count walk (count_walk.cc, text_counts.h): masks of states that count text characters (strings
// under maxLength/minLength counters, string bodies) built from the vocabulary's tokens by text
// characters spanned, their exits from text and the deep nodes.
//  - TextCounts agrees with an independent reading of every token (code points decoded, overlong
//    forms, surrogates and cut-short characters checked) on the SmolLM2 and Llama 3 vocabularies:
//    upto(c) holds exactly the text tokens of at most c characters, each exit's path is text of its
//    k characters (plus a partial one) and stops being text at its byte, each deep node ends 16;
//  - masks equal the plain-parser reference walk (mask_reference.h) at every step of instances of
//    counted strings of many bounds (3 .. 65535, with minimums, in objects and arrays, with UTF-8,
//    escapes and quotes in the text), cold, and the count walk is what built them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "grammar/text_counts.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/mask_walk.h"

namespace keel::grammar::test {
namespace {

// Reads s as text: complete characters and whether a cut-short one ends it. Plain ASCII is
// printable but '"' and '\\'; UTF-8 is U+0080..U+10FFFF, no overlong form, no surrogate. False when
// s is not text (a cut-short character must begin some valid one).
bool read_text(const std::string& s, int& complete, bool& cut) {
  complete = 0;
  cut = false;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7f || b == '"' || b == '\\') return false;
      ++complete;
      ++i;
      continue;
    }
    const int len = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0) return false;
    uint32_t cp = b & (0xFFu >> (len + 1));
    int have = 1;
    for (; have < len && i + have < s.size(); ++have) {
      const auto c = static_cast<uint8_t>(s[i + have]);
      if ((c & 0xC0) != 0x80) return false;
      cp = cp << 6 | (c & 0x3F);
    }
    const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    // The smallest and largest code points the bytes present can still begin.
    const int missing = len - have;
    const uint32_t lo = cp << (6 * missing), hi = (cp << (6 * missing)) | ((1u << (6 * missing)) - 1);
    if (hi < min || lo > 0x10FFFF) return false;
    if (missing == 0 && (cp < min || (cp >= 0xD800 && cp <= 0xDFFF))) return false;
    if (missing > 0 && lo >= 0xD800 && hi <= 0xDFFF) return false;
    if (missing > 0) {
      cut = true;
      return i + have == s.size();
    }
    ++complete;
    i += len;
  }
  return true;
}

void check_text_counts(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  const VocabTrie& trie = *v.trie;
  const TextCounts& counts = trie.text_counts();
  const auto& nodes = trie.nodes();
  auto bytes_to = [&](uint32_t node, uint32_t depth) {  // the path's first `depth` bytes
    const int32_t id = trie.token_ids()[trie.subtree_tok_begin(node)];
    return trie.vocab().token_bytes[id].substr(0, depth);
  };
  int n_text = 0;
  for (uint32_t t = 0; t < trie.token_ids().size(); ++t) {
    const int32_t id = trie.token_ids()[t];
    int complete = 0;
    bool cut = false;
    const bool text = read_text(trie.vocab().token_bytes[id], complete, cut);
    const int count = complete + (cut ? 1 : 0);
    for (uint32_t c = 1; c <= TextCounts::kDepth; ++c) {
      const bool in = counts.upto(c)[id >> 5] >> (id & 31) & 1u;
      ASSERT_EQ(in, text && count <= static_cast<int>(c)) << name << " token " << id << " c " << c;
    }
    n_text += text;
  }
  EXPECT_GT(n_text, 1000);
  size_t n_exits = 0;
  for (const TextCounts::Group& g : counts.groups()) {
    for (uint32_t e = g.begin; e < g.end; ++e) {
      const uint32_t node = counts.exits()[e];
      ASSERT_EQ(nodes[node].byte, g.byte);
      int complete = 0;
      bool cut = false;
      ASSERT_TRUE(read_text(bytes_to(node, nodes[node].depth - 1), complete, cut)) << name << " exit " << node;
      EXPECT_EQ(complete, g.k) << name << " exit " << node;
      EXPECT_EQ(cut, g.partial) << name << " exit " << node;
      // The tail: the partial character's bytes (none at a boundary).
      ASSERT_TRUE(read_text(bytes_to(node, nodes[node].depth - 1 - counts.exit_tails()[e]), complete, cut));
      EXPECT_EQ(complete, g.k) << name << " exit " << node;
      EXPECT_FALSE(cut) << name << " exit " << node;
      EXPECT_EQ(counts.exit_tails()[e] != 0, g.partial) << name << " exit " << node;
      // The exit's byte ends text: no token below continues it as text.
      EXPECT_FALSE(read_text(bytes_to(node, nodes[node].depth), complete, cut)) << name << " exit " << node;
      ++n_exits;
    }
  }
  for (size_t i = 0; i < counts.deep().size(); ++i) {
    const uint32_t d = counts.deep()[i];
    int complete = 0;
    bool cut = false;
    ASSERT_TRUE(read_text(bytes_to(d, nodes[d].depth), complete, cut));
    EXPECT_EQ(complete, static_cast<int>(TextCounts::kDepth));
    EXPECT_FALSE(cut);
    EXPECT_GT(nodes[d].subtree_end, d + 1);
    // The tail: the 16th character's bytes before the deep node's own.
    ASSERT_TRUE(read_text(bytes_to(d, nodes[d].depth - 1 - counts.deep_tails()[i]), complete, cut));
    EXPECT_EQ(complete, static_cast<int>(TextCounts::kDepth) - 1) << name << " deep " << d;
    EXPECT_FALSE(cut) << name << " deep " << d;
    // The height: the most characters past 16 of the tokens below, 0 when one is not text.
    int height = 0;
    for (uint32_t t = trie.subtree_tok_begin(d); t < trie.subtree_tok_end(d) && height >= 0; ++t) {
      if (!read_text(trie.vocab().token_bytes[trie.token_ids()[t]], complete, cut)) {
        height = -1;
      } else {
        height = std::max(height, complete + (cut ? 1 : 0) - static_cast<int>(TextCounts::kDepth));
      }
    }
    EXPECT_EQ(counts.deep_heights()[i], std::max(height, 0)) << name << " deep " << d;
  }
  std::printf("%s: %d text tokens, %zu exits in %zu groups, %zu deep nodes, %zu KiB\n", name.c_str(), n_text,
              n_exits, counts.groups().size(), counts.deep().size(), counts.memory_bytes() >> 10);
}

TEST(CountWalk, TextCountsMatchTokensSmolLM2) { check_text_counts("smollm"); }
TEST(CountWalk, TextCountsMatchTokensLlama3) { check_text_counts("llama-bpe"); }

// extra: token byte strings appended to the vocabulary (ids past the tokenizer's).
void check_masks(const std::string& name, const std::vector<std::string>& extra = {}) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  if (!extra.empty()) {
    Vocabulary more = v.trie->vocab();
    for (const std::string& t : extra) more.token_bytes.push_back(t);
    v.trie = std::make_shared<const VocabTrie>(std::move(more));
  }
  const std::string text =
      "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \\\"q\\\" \\n";
  struct Case {
    std::string schema, instance;
    GrammarSpec::Kind kind = GrammarSpec::Kind::kJsonSchema;
  };
  const std::vector<Case> cases = {
      {R"({"type":"string","maxLength":3})", "\"abc\""},
      {R"({"type":"string","maxLength":5})", "\"a\xc3\xa9\\\"\""},
      {R"({"type":"string","minLength":4,"maxLength":8})", "\"hello wo\""},
      {R"({"type":"string","maxLength":16})", "\"0123456789abcdef\""},
      {R"({"type":"string","maxLength":17})", "\"The quick brown f\""},
      {R"({"type":"string","maxLength":40})", "\"" + text + "\""},
      {R"({"type":"string","minLength":30,"maxLength":1000})", "\"" + text + text + "\""},
      {R"({"type":"string","maxLength":65535})", "\"" + text + "\""},
      {R"({"type":"string"})", "\"" + text + "\""},
      {R"({"type":"array","items":{"type":"string","maxLength":4}})", "[\"ab\",\"abcd\",\"\",\"x\\ny\"]"},
      {R"({"type":"object","properties":{"id":{"type":"string","minLength":2,"maxLength":12}},"required":["id"]})",
       "{\"id\":\"user-4711 ok\"}"},
      // Three characters of any kind, then only non-ASCII ones: the chain ends at 3 in a state that
      // rejects every plain byte but takes UTF-8 characters (not ended: the kernel positions serve it).
      {"root ::= [^\\x00-\\x1f] [^\\x00-\\x1f] [^\\x00-\\x1f] [^\\x00-\\x7f]+ \".\"", "caf\xc3\xa9\xc3\xa8.",
       GrammarSpec::Kind::kGbnf},
  };
  int n_compared = 0;
  uint64_t n_count = 0;
  for (const Case& c : cases) {
    GrammarStore store(v.trie, 64);  // cold: nothing shared between the cases
    auto masks = store.get_or_compile({.kind = c.kind, .source = c.schema});
    ASSERT_TRUE(masks.ok()) << c.schema << ": " << masks.status().to_string();
    GrammarMatcher m(*masks);
    walk_once(m, **masks, v, c.instance, name + " " + c.schema, 1, &n_compared);
    if (::testing::Test::HasFatalFailure()) return;
    if (c.kind == GrammarSpec::Kind::kJsonSchema) {
      EXPECT_GT(m.count_walks(), 0u) << c.schema;
    }
    n_count += m.count_walks();
  }
  std::printf("%s: %d masks equal the reference walk, %llu by the count walk\n", name.c_str(), n_compared,
              static_cast<unsigned long long>(n_count));
}

TEST(CountWalk, MasksEqualParserWalkSmolLM2) { check_masks("smollm"); }
// Tokens that break UTF-8 inside a character (a byte-level vocabulary may hold any bytes): their exit
// is walked from the partial character's state, not from the boundary before it.
TEST(CountWalk, BrokenCharactersSmolLM2) {
  check_masks("smollm", {"\xc3" "a", "ab\xe2\x82z", "\xe2\x82\"", "x\xf0\x9f\"}", "\xc3\xa9\xc3\"", "a\xc3\xc3"});
}
TEST(CountWalk, MasksEqualParserWalkLlama3) { check_masks("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
