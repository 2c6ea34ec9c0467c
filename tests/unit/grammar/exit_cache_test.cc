// The count walk's exit cache (count_walk.cc): the tokens taken below an exit group (k characters
// of text, then a closing quote or a backslash), kept by the state after the group's byte and read
// back at the next masks of a counted string instead of walking the group's nodes again.
//  - every mask equals the plain-parser reference walk (mask_reference.h) along instances where the
//    same group meets different states after its byte in one matcher (two counted properties whose
//    closing quotes lead to different continuations, array items, escapes), and the cache was read;
//  - a long counted string reads the closing quote's groups back at nearly every mask;
//  - a counted GBNF class that leaves out one UTF-8 character ('\u00e9': C3 A9, one continuation
//    of a lead byte whose others lead on alike) is not taken as every text character
//    (StateWalker::continuations_reach must check each continuation's state, not the first only).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/mask_walk.h"

namespace keel::grammar::test {
namespace {

struct Run {
  uint64_t count_walks = 0, hits = 0;
  int masks = 0;
};

// Walks `instance` token by token, comparing every mask with the reference walk.
Run check(const RealVocab& v, const std::string& schema, const std::string& instance,
          GrammarSpec::Kind kind = GrammarSpec::Kind::kJsonSchema) {
  Run r;
  GrammarStore store(v.trie, 64);
  auto masks = store.get_or_compile({.kind = kind, .source = schema});
  EXPECT_TRUE(masks.ok()) << schema;
  if (!masks.ok()) return r;
  GrammarMatcher m(*masks);
  walk_once(m, **masks, v, instance, schema, 1, &r.masks);
  if (::testing::Test::HasFatalFailure()) return r;
  r.count_walks = m.count_walks();
  r.hits = m.exit_cache_hits();
  return r;
}

void check_vocab(const std::string& name) {
  const RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  // Two properties under the same bound, one character apart: the group (k, '"') of "a" leads on
  // to ',' and of "b" to '}' (a cache keyed by the group alone takes `",` after b's text).
  const Run two = check(v,
                        R"({"type":"object","properties":{"a":{"type":"string","maxLength":30},)"
                        R"("b":{"type":"string","maxLength":30}},"required":["a","b"],"additionalProperties":false})",
                        R"({"a":"the first value here","b":"the second value, here too"})");
  EXPECT_GT(two.count_walks, 0u);
  EXPECT_GT(two.hits, 0u);
  // Array items and escapes: each item's closing quote follows a different column; the state after
  // a backslash is new at every count.
  const Run items = check(v, R"({"type":"array","items":{"type":"string","maxLength":24}})",
                          R"(["alpha beta gamma","x\"y\\z \n w","","delta epsilon"])");
  EXPECT_GT(items.count_walks, 0u);
  // A long counted string: the closing quote's groups read back at almost every mask after the first.
  const Run long_run = check(v, R"({"type":"string","minLength":10,"maxLength":400})",
                             "\"" + std::string(6, ' ') + "Lorem ipsum dolor sit amet, consectetur adipiscing elit, "
                             "sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad "
                             "minim veniam, quis nostrud exercitation ullamco laboris.\"");
  EXPECT_GT(long_run.count_walks, 10u);
  EXPECT_GE(long_run.hits, long_run.count_walks - 1);
  const Run gap = check(v, R"gbnf(root ::= "\"" [^"\\\x00-\x1f\u00e9]{0,40} "\"")gbnf",
                        "\"caf\xc3\xa8 na\xc3\xafve \xe2\x80\x94 r\xc3\xa8gle\"", GrammarSpec::Kind::kGbnf);
  EXPECT_GT(gap.masks, 0);
  std::printf("%s: count walks %llu / %llu / %llu, exit cache hits %llu / %llu / %llu\n", name.c_str(),
              static_cast<unsigned long long>(two.count_walks), static_cast<unsigned long long>(items.count_walks),
              static_cast<unsigned long long>(long_run.count_walks), static_cast<unsigned long long>(two.hits),
              static_cast<unsigned long long>(items.hits), static_cast<unsigned long long>(long_run.hits));
}

TEST(ExitCache, MasksEqualParserWalkSmolLM2) { check_vocab("smollm"); }
TEST(ExitCache, MasksEqualParserWalkLlama3) { check_vocab("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
