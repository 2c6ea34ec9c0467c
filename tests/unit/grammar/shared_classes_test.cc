// Shared classifications keyed by what follows the dot (shared_classes.h, position_key): in a rule
// that is not left-recursive, every position with the same symbols left (and the same sub-grammars
// below them) shares one classification — `exactly[c] ::= exactly[c-1] . x` for every count c, a
// block's positions in counters of any bound. Each classification made through the shared keys must
// equal the one a cache that shares nothing makes for that position itself, for every position of
// grammars with counters, left-recursive loops and look-alike suffixes, on SmolLM2's and Llama 3's
// vocabularies.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/mask_cache.h"
#include "grammar/shared_classes.h"
#include "unit/grammar/mask_reference.h"

namespace keel::grammar::test {
namespace {

// Counters of several bounds (blocks, linear chains, minLength copies), a plain string (its body a
// left-recursive `star ::= star . char`), a pattern under a length.
const char* kSchema = R"({"type": "object", "properties": {
  "title": {"type": "string", "maxLength": 100},
  "code": {"type": "string", "minLength": 2, "maxLength": 12},
  "tag": {"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 40},
  "note": {"type": "string", "maxLength": 20},
  "text": {"type": "string", "maxLength": 60},
  "name": {"type": "string"},
  "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 5}},
  "required": ["title", "code", "tag", "note", "text", "name", "ids"]})";

// `loop ::= loop . "a"` (left-recursive: loops after each "a") and `pair ::= "b" . "a"` (ends after
// one) have the same symbols after the dot; only the first is left-recursive. So are `more ::= more
// . "ab"` and `two ::= "x" . "ab"`.
const char* kGbnf = R"(root ::= "[" loop "]" pair two more
loop ::= loop "a" | "a"
pair ::= "b" "a"
two ::= "x" "a" "b"
more ::= more "a" "b" | "c")";

// Every position before a symbol, classified by a cache sharing nothing (keys longer than 0 bytes
// are not shared) and by one whose positions share through their keys; returns how many positions
// found their classification made for another position.
int check_grammar(const GrammarSpec& spec, const RealVocab& v) {
  auto g = compile_grammar(spec);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return 0;
  auto store = std::make_shared<SharedClassifications>();
  TokenMaskCache alone(*g, v.trie, std::make_shared<SharedClassifications>(64 << 20, 0));
  TokenMaskCache shared(*g, v.trie, store);
  std::set<std::string> keys;
  int reused = 0;
  for (uint32_t p = 0; p < (*g)->n_positions(); ++p) {
    if ((*g)->symbol(p).kind == FlatSymbol::Kind::kEnd) continue;
    if (auto key = position_key(**g, p, store->max_key_bytes()); key && !keys.insert(*key).second) ++reused;
    const PositionMask& a = alone.get(p);
    const PositionMask& b = shared.get(p);
    EXPECT_EQ(a.uncertain, b.uncertain) << "position " << p;
    EXPECT_TRUE(accepted(a, *v.trie) == accepted(b, *v.trie)) << "position " << p;
    if (::testing::Test::HasFailure()) return reused;
  }
  return reused;
}

void check_vocabulary(const std::string& name, const char* schema) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  check_grammar({.kind = GrammarSpec::Kind::kGbnf, .source = kGbnf}, v);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const int reused = check_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema}, v);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::printf("%s: %d schema positions found another's classification, all equal\n", name.c_str(), reused);
  // The counters' chains share: `exactly[c] ::= exactly[c-1] . x` for every c.
  EXPECT_GT(reused, 40);
}

TEST(SharedClasses, SuffixKeysClassifyLikeEachPositionAloneSmolLM2) { check_vocabulary("smollm", kSchema); }

// Fewer counters (each position costs a walk of the 128k-token trie twice).
TEST(SharedClasses, SuffixKeysClassifyLikeEachPositionAloneLlama3) {
  check_vocabulary("llama-bpe", R"({"type": "object", "properties": {
    "title": {"type": "string", "maxLength": 100}, "code": {"type": "string", "minLength": 2, "maxLength": 12},
    "name": {"type": "string"}}, "required": ["title", "code", "name"]})");
}

TEST(SharedClasses, KeysKeepLeftRecursiveRulesWhole) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kGbnf, .source = kGbnf});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  // The position after the first symbol of each rule's first alternative, by rule name.
  auto after_first = [&](const std::string& rule) {
    const Grammar& ir = (*g)->grammar();
    for (uint32_t r = 0; r < ir.rules.size(); ++r)
      if (ir.rules[r].name == rule) return (*g)->alt_starts(r)[0] + 1;
    ADD_FAILURE() << "no rule " << rule;
    return 0u;
  };
  auto key = [&](uint32_t p) { return *position_key(**g, p, 4096); };
  EXPECT_NE(key(after_first("loop")), key(after_first("pair")));
  EXPECT_NE(key(after_first("more")), key(after_first("two")));
  // The same symbols left in two rules that are not left-recursive: one key.
  auto counters = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"type": "string", "maxLength": 9})"});
  ASSERT_TRUE(counters.ok());
  std::set<std::string> chain;
  const Grammar& ir = (*counters)->grammar();
  for (uint32_t r = 0; r < ir.rules.size(); ++r)
    if (ir.rules[r].name == "exactly") chain.insert(*position_key(**counters, (*counters)->alt_starts(r)[0] + 1, 4096));
  EXPECT_EQ(chain.size(), 1u);
}

}  // namespace
}  // namespace keel::grammar::test
