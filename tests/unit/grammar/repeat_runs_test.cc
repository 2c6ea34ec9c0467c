// Counted strings' first positions classified from one walk (repeat_runs.h): for every position
// `'"' . repeat '"'` of a schema whose strings carry minLength/maxLength bounds of every shape the
// compiler emits (a minimum alone, so a `star` tail; a maximum alone, short (`exactly` chain) and long
// (blocks, blocks of blocks); both; a bound of one; a minimum longer than any token), the stored
// classification equals the seeded walk of that position alone (TokenMaskCache::classify in a cache
// that shares nothing): accepted set and uncertain subtrees; on SmolLM2's and Llama 3's vocabularies.
// Then an instance's masks, cold, equal the plain-parser walk (mask_reference.h); and a 20,000-character
// minimum alone (a copy per character) is classified for its grammar, equal to its walk.
#include <time.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/repeat_runs.h"
#include "grammar/shared_classes.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

const char* kSchema = R"({"type": "object", "properties": {
  "a": {"type": "string", "minLength": 3},
  "b": {"type": "string", "maxLength": 5},
  "c": {"type": "string", "maxLength": 100},
  "d": {"type": "string", "minLength": 2, "maxLength": 40},
  "e": {"type": "string", "minLength": 10, "maxLength": 1000},
  "f": {"type": "string", "minLength": 1, "maxLength": 1},
  "g": {"type": "string", "minLength": 300},
  "h": {"type": "string", "maxLength": 32767},
  "i": {"type": "string", "minLength": 7, "maxLength": 9}},
  "required": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]})";

std::string instance() {
  return R"({"a":"Déjà vu \"q\" \\ done","b":"ab\ncd","c":"日本語のテキスト and \u0007 text","d":"xy",)"
         R"("e":"The quick brown fox 🎉 jumps over the lazy dog","f":"é","g":")" +
         std::string(300, 'z') + R"(","h":"","i":"1234567"})";
}

// This thread's CPU time (the printed cost of the run walks; nothing is asserted on it).
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = kSchema});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto store = std::make_shared<SharedClassifications>();
  auto masks = std::make_shared<TokenMaskCache>(*g, v.trie, store);
  const double t0 = cpu_ms();
  const uint32_t stored = classify_repeat_starts_by_runs(*masks);
  const double walk_ms = cpu_ms() - t0;
  TokenMaskCache alone(*g, v.trie, std::make_shared<SharedClassifications>(64 << 20, 0));
  const Grammar& ir = (*g)->grammar();
  int compared = 0, unkeyed = 0;
  for (uint32_t p = 0; p + 2 < (*g)->n_positions(); ++p) {
    const FlatSymbol s = (*g)->symbol(p);
    if (s.kind != FlatSymbol::Kind::kRule || s.index >= ir.rules.size() || ir.rules[s.index].name != "repeat") continue;
    if ((*g)->symbol(p + 1).kind != FlatSymbol::Kind::kBytes || (*g)->symbol(p + 2).kind != FlatSymbol::Kind::kEnd) continue;
    // A sub-grammar over the store's key bound ("g"'s 300 copies) is not shared: its
    // classification is put into the grammar's own cache.
    auto key = position_key(**g, p, store->max_key_bytes());
    if (key) {
      ASSERT_NE(store->find(*key), nullptr) << name << " position " << p << " was not classified by the run walk";
    } else {
      ASSERT_TRUE(masks->classified(p)) << name << " position " << p << " was not classified by the run walk";
      ++unkeyed;
    }
    const PositionMask* made = &masks->get(p);
    const PositionMask& want = alone.get(p);
    ASSERT_EQ(made->uncertain, want.uncertain) << name << " position " << p;
    ASSERT_TRUE(accepted(*made, *v.trie) == accepted(want, *v.trie)) << name << " position " << p;
    ++compared;
  }
  // The instance's masks, cold, with the first positions' classifications from the run walk.
  const std::string text = instance();
  ASSERT_TRUE(accepts(**g, text));
  const std::vector<int32_t> ids = v.tok->encode(text, {.add_special = false, .parse_special = false});
  std::vector<uint32_t> mask(masks->n_mask_words());
  GrammarMatcher m(masks);
  std::string prefix;
  for (size_t i = 0; i <= ids.size(); ++i) {
    m.fill_mask(mask);
    ASSERT_EQ(count_differences(mask, reference_mask(**g, *v.trie, prefix)), 0) << name << " step " << i;
    if (i == ids.size()) break;
    ASSERT_TRUE(m.accept_token(ids[i])) << name << " step " << i;
    prefix += v.trie->vocab().token_bytes[ids[i]];
  }
  std::printf("%s: %u first positions from run walks (%.1f ms CPU), %d equal their own walk, %d unkeyed, %zu masks equal\n",
              name.c_str(), stored, walk_ms, compared, unkeyed, ids.size() + 1);
  // Every string's; "g" has a key over the bound ("h"'s blocks of blocks of blocks fit).
  EXPECT_EQ(stored, 9u);
  EXPECT_EQ(compared, 9);
  EXPECT_EQ(unkeyed, 1);
}

TEST(RepeatRuns, FirstPositionsEqualTheirOwnWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(RepeatRuns, FirstPositionsEqualTheirOwnWalkLlama3) { check_vocabulary("llama-bpe"); }

// A second grammar with the same bounds finds them in the store: nothing is walked again.
TEST(RepeatRuns, SharedAcrossGrammars) {
  RealVocab v = load_real_vocab("smollm");
  ASSERT_NE(v.trie, nullptr);
  auto store = std::make_shared<SharedClassifications>();
  auto g1 = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"type": "string", "minLength": 4, "maxLength": 70})"});
  auto g2 = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema,
                             .source = R"({"type": "array", "items": {"type": "string", "minLength": 4, "maxLength": 70}})"});
  ASSERT_TRUE(g1.ok() && g2.ok());
  TokenMaskCache m1(*g1, v.trie, store), m2(*g2, v.trie, store);
  EXPECT_EQ(classify_repeat_starts_by_runs(m1), 1u);
  EXPECT_EQ(classify_repeat_starts_by_runs(m2), 0u);
}

// An item that is not prefix-free (a number: "1" continues as "12") is left to the walks.
TEST(RepeatRuns, ItemsThatAreNotPrefixFreeAreLeftAlone) {
  RealVocab v = load_real_vocab("smollm");
  ASSERT_NE(v.trie, nullptr);
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kGbnf, .source = R"(root ::= "[" num{3,40} "]"
num ::= [0-9]+)"});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  TokenMaskCache masks(*g, v.trie);
  EXPECT_EQ(classify_repeat_starts_by_runs(masks), 0u);
}


// A long minimum (a copy per character, no shared key) is classified for its grammar; printed: the
// run walk's CPU time, which is the compile's share of it.
TEST(RepeatRuns, LongMinimum) {
  RealVocab v = load_real_vocab("llama-bpe");
  ASSERT_NE(v.trie, nullptr);
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"type": "string", "minLength": 20000})"});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  TokenMaskCache masks(*g, v.trie);
  const double t0 = cpu_ms();
  EXPECT_EQ(classify_repeat_starts_by_runs(masks), 1u);
  std::printf("minLength 20000: %.1f ms CPU\n", cpu_ms() - t0);
  TokenMaskCache alone(*g, v.trie, std::make_shared<SharedClassifications>(64 << 20, 0));
  int compared = 0;
  for (uint32_t p = 1; p < (*g)->n_positions(); ++p) {
    if (!masks.classified(p)) continue;
    EXPECT_EQ(masks.get(p).uncertain, alone.get(p).uncertain);
    EXPECT_TRUE(accepted(masks.get(p), *v.trie) == accepted(alone.get(p), *v.trie));
    ++compared;
  }
  EXPECT_EQ(compared, 1);
}

}  // namespace
}  // namespace keel::grammar::test
