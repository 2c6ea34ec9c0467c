// Subtrees accepted by loop classes (VocabTrie::subtree_classes, StateWalker::loops_all): a walk
// standing in a state whose every byte of some byte classes leads back to itself (a pattern's loop:
// `[a-z0-9_]+`, `\d+`, `.+` short of the byte that moves the pattern on) accepts a trie subtree of
// only those classes without visiting it. Checked: the byte classes partition the bytes as documented,
// each node's class set equals an independent scan of its subtree, and every mask of strings under
// unanchored and anchored patterns, pattern-keyed properties (`key_dfa`) and a regex grammar — cold,
// from caches of their own (every position classified by a walk, every uncertain subtree walked), then
// warm — equals the plain Earley walk of the vocabulary trie (mask_reference.h), SmolLM2 and Llama 3.
#include <memory>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/mask_cache.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/mask_walk.h"

namespace keel::grammar::test {
namespace {

TEST(LoopClasses, ByteClassesPartitionAsDocumented) {
  auto cls = [](char c) { return VocabTrie::byte_class(static_cast<uint8_t>(c)); };
  EXPECT_EQ(cls('0'), cls('9'));
  EXPECT_EQ(cls('a'), cls('f'));
  EXPECT_NE(cls('f'), cls('g'));
  EXPECT_EQ(cls('g'), cls('z'));
  EXPECT_EQ(cls('A'), cls('F'));
  EXPECT_NE(cls('F'), cls('G'));
  EXPECT_NE(cls('a'), cls('A'));
  EXPECT_NE(cls('/'), cls('.'));
  EXPECT_NE(cls('"'), cls('\\'));
  EXPECT_NE(cls('_'), cls('-'));
  std::vector<int> size(VocabTrie::kByteClasses, 0);
  for (int b = 0; b < 256; ++b) {
    const uint8_t c = VocabTrie::byte_class(static_cast<uint8_t>(b));
    ASSERT_LT(c, VocabTrie::kByteClasses) << b;
    ++size[c];
    // Printable ASCII other than letters and digits: a class of its own.
    const bool alnum = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
    if (b >= 0x20 && b < 0x7f && !alnum) {
      for (int o = 0; o < 256; ++o) {
        if (o == b) continue;
        ASSERT_NE(VocabTrie::byte_class(static_cast<uint8_t>(o)), c) << b << " " << o;
      }
    }
  }
  for (int c = 0; c < static_cast<int>(VocabTrie::kByteClasses); ++c) EXPECT_GT(size[c], 0) << "class " << c;
}

void check_subtree_classes(const VocabTrie& trie) {
  const auto& nodes = trie.nodes();
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    uint64_t want = 0;
    for (uint32_t j = i; j < nodes[i].subtree_end; ++j) want |= uint64_t{1} << VocabTrie::byte_class(nodes[j].byte);
    ASSERT_EQ(trie.subtree_classes(i), want) << "node " << i;
  }
}

TEST(LoopClasses, SubtreeClassesOfEveryNode) {
  Vocabulary v;
  v.token_bytes = {"a", "ab", "a/", "abc", "b", "b1", "\"", "\",", "z\xc3\xa9"};
  VocabTrie small(std::move(v));
  check_subtree_classes(small);
  RealVocab smol = load_real_vocab("smollm");
  ASSERT_NE(smol.trie, nullptr);
  check_subtree_classes(*smol.trie);
}

struct Case {
  GrammarSpec::Kind kind;
  std::string source;
  std::vector<std::string> texts;  // accepted outputs, masks compared at every token
};

std::vector<Case> cases() {
  return {
      // An unanchored pattern determinised (key_dfa rules): `.+` loops on all but '/' (MaskBench o66329).
      {GrammarSpec::Kind::kJsonSchema,
       R"({"type":"object","properties":{"doi":{"type":"string","pattern":"10\\..+/.+"}},"required":["doi"],"additionalProperties":false})",
       {R"({"doi":"10.1234/abcdef.ghi/jklmnop"})", R"({"doi":"see 10.5555/xyz_ABC-123 here"})"}},
      // Anchored classes that loop: letters, digits, underscores; hex.
      {GrammarSpec::Kind::kJsonSchema,
       R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z0-9_]+$"},"hex":{"type":"string","pattern":"^[0-9a-f]{2,}$"},"n":{"type":"string","pattern":"^\\d+(\\.\\d+)?$"}},"required":["id","hex","n"],"additionalProperties":false})",
       {R"({"id":"user_name_12345abcdefghij","hex":"deadbeefcafe0123456789","n":"31415926.535"})"}},
      // Classes that loop on part of a byte class only (a-m of g-z, 0-5 of the digits): such a class
      // must not count as looping.
      {GrammarSpec::Kind::kJsonSchema,
       R"({"type":"object","properties":{"s":{"type":"string","pattern":"^[a-m0-5]+$"}},"required":["s"],"additionalProperties":false})",
       {R"({"s":"abcdefghijklm012345mlkjihgfedcba"})"}},
      // Non-ASCII text under looping patterns: every character but é (its lead byte is alive, one
      // continuation is not), and `.+` with accented and CJK text (a UTF-8 lead byte leaves the loop's
      // state, so these subtrees are walked; a loop over whole characters was tried and not kept).
      {GrammarSpec::Kind::kJsonSchema,
       R"({"type":"object","properties":{"t":{"type":"string","pattern":"^[^\u00e9]+$"},"doi":{"type":"string","pattern":"10\\..+/.+"}},"required":["t","doi"],"additionalProperties":false})",
       {"{\"t\":\"cafe na\u00efve \u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8 \u00fcber\",\"doi\":\"10.12/caf\u00e9 \u65e5\u672c/\u00fcber alles\"}"}},
      // Anything but a slash, twice; and upper-case words.
      {GrammarSpec::Kind::kJsonSchema,
       R"({"type":"object","properties":{"path":{"type":"string","pattern":"^[^/]+/[^/]+$"},"w":{"type":"string","pattern":"^[A-Z][a-z]+( [A-Z][a-z]+)*$"}},"required":["path","w"],"additionalProperties":false})",
       {R"({"path":"some thing.with dots/and more stuff","w":"Hello World Again"})"}},
      // Keys by pattern beside listed names (key_dfa with names taken out).
      {GrammarSpec::Kind::kJsonSchema,
       R"({"type":"object","properties":{"name":{"type":"string"}},"patternProperties":{"^x-[a-z0-9]+$":{"type":"integer"}},"additionalProperties":false})",
       {R"({"name":"a","x-abcdefghijk123":1,"x-z":22})"}},
      // A regex grammar: the whole output matches.
      {GrammarSpec::Kind::kRegex, R"([a-z]+@[a-z0-9.]+\.(com|org))", {"someone@example.mail.org"}},
  };
}

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  int n_compared = 0;
  for (const Case& c : cases()) {
    auto g = compile_grammar({.kind = c.kind, .source = c.source});
    ASSERT_TRUE(g.ok()) << c.source << ": " << g.status().to_string();
    auto masks = std::make_shared<TokenMaskCache>(std::move(g).value(), v.trie);  // nothing shared
    for (const std::string& text : c.texts) {
      walk_and_compare(masks, v, text, name + " " + c.source, &n_compared);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::printf("%s: %d masks equal the reference walk\n", name.c_str(), n_compared);
}

TEST(LoopClasses, MasksEqualParserWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(LoopClasses, MasksEqualParserWalkLlama3) { check_vocabulary("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
