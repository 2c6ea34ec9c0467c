// Runs shared between states of one shape (state_shapes.h): a counted string under another key of
// an object, in another array item or another nesting meets its text chain's runs proved already.
//  - every mask equals the plain-parser reference walk (mask_reference.h) along instances where
//    strings of one bound stand in many contexts (object keys, array items, nested objects, a
//    string beside a pattern in anyOf, UTF-8 and escapes), and shared runs were used;
//  - subschemas that differ only in annotations (title, description) compile to one rule, so their
//    states share shapes (schema_compiler.cc);
//  - a GBNF grammar where one sub-rule's text continues differently after it in two contexts
//    (`"[" s s` takes 40 characters, `"(" s` 20; s is exactly 20, so inside it the two states differ
//    only in s's origin): the context is read by text there, so the two chains must not share
//    runs, whichever is walked first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "grammar/state_shapes.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/mask_walk.h"

namespace keel::grammar::test {
namespace {

// Walks each instance token by token in one grammar's cache, comparing every mask with the
// reference walk; returns the shared-run look-ups answered.
uint64_t check(const RealVocab& v, const std::string& source, const std::vector<std::string>& instances,
               GrammarSpec::Kind kind = GrammarSpec::Kind::kJsonSchema) {
  GrammarStore store(v.trie, 64);
  auto masks = store.get_or_compile({.kind = kind, .source = source});
  EXPECT_TRUE(masks.ok()) << source;
  if (!masks.ok()) return 0;
  int n_compared = 0;
  for (const std::string& instance : instances) {
    GrammarMatcher m(*masks);
    walk_once(m, **masks, v, instance, source, 1, &n_compared);
    if (::testing::Test::HasFatalFailure()) return 0;
  }
  const StateShapes* shapes = (*masks)->states().shapes();
  EXPECT_NE(shapes, nullptr);
  return shapes != nullptr ? shapes->hits() : 0;
}

void check_vocab(const std::string& name) {
  const RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  const std::string str = R"({"type":"string","maxLength":40})";
  const std::string titled = R"({"type":"string","maxLength":40,"title":"B","description":"another one"})";
  const uint64_t object =
      check(v,
            R"({"type":"object","properties":{"a":)" + str + R"(,"b":)" + titled + R"(,"c":{"anyOf":[)" + str +
                R"(,{"type":"string","pattern":"^[0-9]+x$"}]},"d":{"type":"object","properties":{"e":)" + str +
                R"(}},"f":{"type":"array","items":)" + str + R"(}},"additionalProperties":false})",
            {R"({"a":"the first value here","b":"caf)"
             "\xc3\xa9 na\xc3\xafve \xe2\x80\x94 r\xc3\xa8"
             R"(gle","c":"a third, with \"quotes\"",)"
             R"("d":{"e":"nested one level down here"},"f":["item one is long enough","two",""]})",
             R"({"a":"second instance here","c":"12x","f":["x"]})"});
  EXPECT_GT(object, 0u);
  // Text continues after s by the context: 8 characters after '[', 4 after '('. Both orders.
  const std::string gbnf = R"gbnf(root ::= "[" s s | "(" s
s ::= [^"\\\x00-\x1f]{20})gbnf";
  const std::string forty = "[the quick brown fox jumps over the lazy ", twenty = "(pack my box with fiv";
  check(v, gbnf, {forty, twenty, "(" + std::string(20, '=')}, GrammarSpec::Kind::kGbnf);
  check(v, gbnf, {twenty, forty, "[" + std::string(40, '-')}, GrammarSpec::Kind::kGbnf);
  std::printf("%s: shared runs used %llu\n", name.c_str(), static_cast<unsigned long long>(object));
}

TEST(StateShapes, AnnotationsShareRules) {
  auto rules = [](const std::string& b_title) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema,
                              .source = R"({"type":"object","properties":{"a":{"type":"string","maxLength":40},)"
                                        R"("b":{"type":"string","maxLength":40)" +
                                        b_title + R"(}},"required":["a","b"]})"});
    EXPECT_TRUE(g.ok());
    return g.ok() ? (*g)->grammar().rules.size() : size_t{0};
  };
  const size_t bare = rules("");
  EXPECT_GT(bare, 0u);
  EXPECT_EQ(rules(R"(,"title":"B","description":"the second","examples":["x"],"$comment":"c")"), bare);
  EXPECT_GT(rules(R"(,"minLength":1)"), bare);  // an assertion still makes b a rule of its own
}

TEST(StateShapes, MasksEqualParserWalkSmolLM2) { check_vocab("smollm"); }
TEST(StateShapes, MasksEqualParserWalkLlama3) { check_vocab("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
