// Session 10's walk shortcuts for pattern positions, against the plain-parser walk:
//  - text-live states (StateWalker::text_live): a state from which every text string stays alive,
//    whichever states it passes (a search pattern's DFA: `.*response.*` moves on at 'r' and comes
//    back), takes every text subtree without visiting it;
//  - the search is asked only once a walk has gone into StateWalker::kTextLiveAfter nodes of text
//    subtrees from the state, and then answers as before;
//  - anchored patterns with a nested unbounded repetition are determinised (regex_to_symbol), so a
//    string under MaskBench's URL pattern converges to a few states instead of a new one per byte.
// Masks of strings under such patterns — cold, from caches of their own, then warm — must equal the
// reference walk (mask_reference.h), SmolLM2 and Llama 3; texts hold accented, CJK and emoji text.
#include <memory>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/state_walker.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/mask_walk.h"

namespace keel::grammar::test {
namespace {

constexpr const char* kUrlPattern = R"(^(https?:\\/\\/)?([\\da-z\\.-]+)\\.([a-z\\.]{2,6})([\\/\\w \\.-]*)*\\/?$)";

std::string schema_of(const std::string& pattern) {
  return R"({"type":"object","properties":{"s":{"type":"string","pattern":")" + pattern +
         R"("}},"required":["s"],"additionalProperties":false})";
}

struct Case {
  std::string schema;
  std::vector<std::string> texts;  // accepted outputs, masks compared at every token
};

std::vector<Case> cases() {
  return {
      // Search patterns (determinised, unanchored): every state text-live.
      {schema_of("response"), {"{\"s\":\"the response \u65e5\u672c caf\u00e9 \\\"q\\\" \U0001F600 end\"}"}},
      {schema_of("[0-9a-fA-F]+"), {"{\"s\":\"zz \u00fcber 12ab \u4e2d\u6587 xyz\"}"}},
      // One alternative anchored at the start: the start state moves on at every byte and loops one
      // byte later (MaskBench o89915).
      {schema_of("^dev|alpha|beta|rc|RC|stable$"), {"{\"s\":\"na\u00efve beta build \u00e9t\u00e9\"}", "{\"s\":\"dev\"}"}},
      // Text-live must fail: é's lead byte is alive, its continuation is not; '/' is dead twice.
      {schema_of("^[^\\u00e9]+$"), {"{\"s\":\"caf na\u00efve \u65e5\u672c \u00fcber\"}"}},
      {schema_of("^(/[^/]+)+$"), {"{\"s\":\"/caf\u00e9/\u65e5\u672c \u8a9e/x y\"}"}},
      // Ambiguous anchored URL pattern (MaskBench o42552, o82974): determinised.
      {schema_of(kUrlPattern), {R"({"s":"https://www.example.com/some path/to-page.html"})", R"({"s":"en.wikipedia.org"})"}},
      // A key by search pattern beside names, and values under a search pattern.
      {R"({"type":"object","properties":{"name":{"type":"string"}},"patternProperties":{"[a-zA-Z0-9-_]+":{"type":"string","pattern":"x"}},"additionalProperties":false})",
       {"{\"name\":\"x1\",\"Client-\u00e9\":\"\u00e9x\u00e9\",\"k_1\":\"axb\"}"}},
  };
}

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  int n_compared = 0;
  for (const Case& c : cases()) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = c.schema});
    ASSERT_TRUE(g.ok()) << c.schema << ": " << g.status().to_string();
    auto masks = std::make_shared<TokenMaskCache>(std::move(g).value(), v.trie);  // nothing shared
    for (const std::string& text : c.texts) {
      walk_and_compare(masks, v, text, name + " " + c.schema, &n_compared);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::printf("%s: %d masks equal the reference walk\n", name.c_str(), n_compared);
}

TEST(TextLive, MasksEqualParserWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(TextLive, MasksEqualParserWalkLlama3) { check_vocabulary("llama-bpe"); }

// A walker asks text_live of a state only after going into kTextLiveAfter nodes of text subtrees
// from it: until then a text subtree is walked (not accepted) and the state's answer stays unknown.
// `[0-9a-f]+` as a search pattern once a digit was met (any text loops) from a fresh table: the
// first search runs out of parser steps (~50 states to intern), is marked to be asked again (3), and
// after as many nodes again the second search, on the states the first interned, says yes; every
// text subtree after it is accepted. A state that is not text-live (`^[a-z]{3}$`'s first letter)
// is answered no at the first ask and still walks every subtree after it.
TEST(TextLive, SearchWaitsForTheWalk) {
  Vocabulary vocab;
  for (char a = 'a'; a <= 'z'; ++a) {  // per first letter a subtree of 1 + 26 + 26 * 26 = 703 nodes
    vocab.token_bytes.push_back(std::string(1, a));
    for (char b = 'a'; b <= 'z'; ++b) {
      vocab.token_bytes.push_back(std::string{a, b});
      for (char c = 'a'; c <= 'z'; ++c) vocab.token_bytes.push_back(std::string{a, b, c});
    }
  }
  const auto trie = std::make_shared<const VocabTrie>(std::move(vocab));
  std::vector<uint32_t> tops;  // the depth-1 nodes, in order
  for (uint32_t i = 0; i < trie->nodes().size(); i = trie->nodes()[i].subtree_end) tops.push_back(i);
  ASSERT_EQ(tops.size(), 26u);
  ASSERT_EQ(trie->nodes()[tops[0]].subtree_end - tops[0], 703u);
  const uint32_t ask = (StateWalker::kTextLiveAfter + 702) / 703;  // subtrees walked before an ask
  const uint32_t again = 2 * ask + 1;                              // the second ask
  ASSERT_LT(again, tops.size());
  for (const bool live : {true, false}) {
    auto g = compile_grammar(
        {.kind = GrammarSpec::Kind::kJsonSchema, .source = schema_of(live ? "[0-9a-f]+" : "^[a-z]{3}$")});
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    StateTable table;
    EarleyParser p(**g, &table);
    ASSERT_TRUE(p.push_bytes(R"({"s":"a)"));
    const StateTable::State s = p.state();
    ASSERT_NE(s, StateTable::kNone);
    StateWalker walk(p, table);
    for (uint32_t k = 0; k < tops.size(); ++k) {
      const bool accepted = walk.accepts_subtree(*trie, tops[k]);
      EXPECT_EQ(accepted, live && k >= again) << live << " subtree " << k;
      const int want = k < ask ? 0 : !live ? 1 : k < again ? 3 : 2;
      EXPECT_EQ(table.text_live(s), want) << live << " subtree " << k;
    }
  }
}

// The URL pattern's host and path loop: 40 more letters of a host meet no new parser state once the
// pattern is determinised (as rules, every byte made new columns: a walk of the whole trie per mask).
TEST(TextLive, AmbiguousAnchoredPatternConverges) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema_of(kUrlPattern)});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  Vocabulary vocab;
  vocab.token_bytes = {"a", "."};
  auto masks = std::make_shared<TokenMaskCache>(std::move(g).value(), std::make_shared<const VocabTrie>(std::move(vocab)));
  GrammarMatcher m(masks);
  ASSERT_TRUE(m.accept_bytes(R"({"s":"https://www.example.)"));
  std::vector<uint32_t> mask(masks->n_mask_words());
  auto letters = [&](int n) {
    for (int k = 0; k < n; ++k) {
      ASSERT_TRUE(m.accept_bytes("x"));
      m.fill_mask(mask);
    }
  };
  letters(20);
  const size_t states = masks->states().size();
  letters(40);
  EXPECT_EQ(masks->states().size(), states);
}

}  // namespace
}  // namespace keel::grammar::test
