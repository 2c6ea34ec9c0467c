// The text-run shortcut (VocabTrie::text_height, StateWalker::text_run): a walk standing in a state
// that loops on every text character (a JSON string body) accepts a whole trie subtree of text
// tokens (plain ASCII and UTF-8, a last character possibly cut short) without visiting it.
//  - text heights equal a direct reading of every token of the subtree (an independent UTF-8 check)
//    on the SmolLM2 and Llama 3 vocabularies;
//  - text_run is unbounded in states that take every character and come back (a string body, a key
//    complement's tail), what is left under a maxLength counter, and 0 inside a character, a listed
//    name or a pattern over some characters;
//  - masks equal the plain-parser reference walk (mask_reference.h) at every step of instances full
//    of UTF-8, escapes and partial-character tokens, for string bodies, maxLength counters (linear
//    and block-counted), key complements, patterns and enums, with both real vocabularies, cold and
//    warm.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/state_walker.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/mask_walk.h"

namespace keel::grammar::test {
namespace {

// Characters of `s` read as text: plain ASCII (printable, not '"' or '\\') or UTF-8 U+0080..U+10FFFF
// without surrogates, the last one possibly cut short; -1 when s is not such text.
int text_chars(const std::string& s) {
  int n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7f || b == '"' || b == '\\') return -1;
      ++i;
      continue;
    }
    int len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (len == 0 || b < 0xC2 || b > 0xF4) return -1;
    uint32_t cp = b & (0x7F >> len);
    size_t k = 1;
    for (; k < static_cast<size_t>(len) && i + k < s.size(); ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return -1;
      cp = cp << 6 | (c & 0x3F);
    }
    if (k == static_cast<size_t>(len)) {  // complete: no overlong form, no surrogate, <= U+10FFFF
      const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    } else {  // cut short: the bytes present must begin some valid character
      const auto c = static_cast<uint8_t>(s[i + 1 < s.size() ? i + 1 : i]);
      if (k >= 2 && ((b == 0xE0 && c < 0xA0) || (b == 0xED && c > 0x9F) || (b == 0xF0 && c < 0x90) ||
                     (b == 0xF4 && c > 0x8F)))
        return -1;
    }
    i += k;
  }
  return n;
}

void check_text_heights(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  const VocabTrie& trie = *v.trie;
  const auto& nodes = trie.nodes();
  int n_text = 0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const auto b = nodes[i].byte;
    int expect = 0;
    if ((b < 0x80 && VocabTrie::plain(b)) || (b >= 0xC2 && b <= 0xF4)) {
      for (uint32_t t = trie.subtree_tok_begin(i); t < trie.subtree_tok_end(i); ++t) {
        const int n = text_chars(trie.vocab().token_bytes[trie.token_ids()[t]].substr(nodes[i].depth - 1));
        if (n < 0) {
          expect = 0;
          break;
        }
        expect = std::max(expect, std::min(n, 255));
      }
    }
    ASSERT_EQ(trie.text_height(i), expect) << name << " node " << i;
    n_text += expect != 0;
  }
  std::printf("%s: %zu trie nodes, %d start text subtrees\n", name.c_str(), nodes.size(), n_text);
  EXPECT_GT(n_text, 1000);
}

TEST(TextRun, TextHeightsMatchTokensSmolLM2) { check_text_heights("smollm"); }
TEST(TextRun, TextHeightsMatchTokensLlama3) { check_text_heights("llama-bpe"); }

// text_run after `prefix` with a parser of `schema`.
uint32_t text_run_after(const std::string& schema, const std::string& prefix) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema});
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  StateTable table;
  EarleyParser p(**g, &table);
  EXPECT_TRUE(p.push_bytes(prefix)) << prefix;
  StateWalker walk(p, table);
  return walk.text_run(0);
}

TEST(TextRun, RunsCountWhatEveryCharacterSequenceTakes) {
  EXPECT_EQ(text_run_after(R"({"type":"string"})", "\"ab"), 254u);  // a loop: unbounded
  EXPECT_EQ(text_run_after(R"({"type":"string"})", "\"a\xc3\xa9"), 254u);
  EXPECT_EQ(text_run_after(R"({"type":"object","properties":{"name":{}}})", "{\"x"), 254u);  // key complement tail
  EXPECT_EQ(text_run_after(R"({"type":"string","maxLength":10})", "\"a\xc3\xa9"), 8u);  // a counter: what is left
  const uint32_t blocks = text_run_after(R"({"type":"string","maxLength":40})", "\"ab");  // counted in blocks of 16
  EXPECT_GT(blocks, 0u);
  EXPECT_LE(blocks, 38u);
  EXPECT_EQ(text_run_after(R"({"type":"string"})", "\"a\xc3"), 0u);  // inside a character
  EXPECT_EQ(text_run_after(R"({"type":"string","pattern":"^[a-z\u00e0-\u00ff]*$"})", "\"ab"), 0u);  // some characters only
  EXPECT_EQ(text_run_after(R"({"type":"object","properties":{"name":{}}})", "{\"na"), 0u);  // inside a listed name
}

// Instances with UTF-8 of every length, escapes and text that tokenizers split inside characters.
void check_masks(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  GrammarStore store(v.trie, 64);
  const std::string text = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 \\\"q\\\" \\n\xd0\xbf\xd1\x80\xd0\xb8";
  struct Case {
    std::string schema, instance;
  };
  const std::vector<Case> cases = {
      {R"({"type":"string"})", "\"" + text + "\""},
      {R"({"type":"string","maxLength":12})", "\"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e h\xc3\xa9llo\""},
      {R"({"type":"string","maxLength":100})", "\"" + text + "\""},
      {R"({"type":"object","properties":{"na\u00efve":{"type":"string"}},"required":["na\u00efve"]})",
       "{\"na\xc3\xafve\":\"" + text + "\",\"\xe6\x97\xa5\xe6\x9c\xac\":\"\xf0\x9f\x98\x80\"}"},
      {R"({"type":"string","pattern":"^[a-z\u00e0-\u00ff ]*$"})", "\"h\xc3\xa9llo w\xc3\xb6rld\""},
      {R"({"type":"array","items":{"type":"string","minLength":2}})", "[\"" + text + "\",\"\xc3\xa9\xc3\xa9\"]"},
      {R"({"enum":["caf\u00e9","\u65e5\u672c","plain"]})", "\"\xe6\x97\xa5\xe6\x9c\xac\""},
  };
  int n_compared = 0;
  for (const Case& c : cases) {
    auto masks = store.get_or_compile({.kind = GrammarSpec::Kind::kJsonSchema, .source = c.schema});
    ASSERT_TRUE(masks.ok()) << c.schema << ": " << masks.status().to_string();
    walk_and_compare(*masks, v, c.instance, name + " " + c.schema, &n_compared);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("%s: %d masks equal the reference walk\n", name.c_str(), n_compared);
}

TEST(TextRun, MasksEqualParserWalkSmolLM2) { check_masks("smollm"); }
TEST(TextRun, MasksEqualParserWalkLlama3) { check_masks("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
