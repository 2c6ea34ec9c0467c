// Block positions classified from one run-length walk (counter_runs.h): for every position of every
// `block` rule of string characters (strings under maxLength counters above 32: plain, non-ASCII
// heavy, in an array) or of such blocks (a bound above 512), the classification the run walk stored equals the seeded walk of that position
// alone (TokenMaskCache::classify in a cache that shares nothing) — accepted set and uncertain
// subtrees — on SmolLM2's and Llama 3's vocabularies; and the masks of an instance then equal the
// plain-parser walk (mask_reference.h).
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/counter_runs.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/shared_classes.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

const char* kSchema = R"({"type": "object", "properties": {
  "title": {"type": "string", "maxLength": 100},
  "body": {"type": "string", "minLength": 40, "maxLength": 1000},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 50}, "maxItems": 40}},
  "required": ["title", "body", "tags"]})";

const char* kInstance =
    R"({"title":"Déjà vu — 日本語のテキスト and \"quoted\" text\\n with escapes \u0007 done",)"
    R"("body":"The quick brown fox jumps over the lazy dog again and again, every day of the week; )"
    R"(a long body with tabs\t and emoji 🎉🎉 in it.","tags":["a","bb ccc dddd","eeeeeeeeeeeeeeeeeeee ffff"]})";

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = kSchema});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto store = std::make_shared<SharedClassifications>();
  auto masks = std::make_shared<TokenMaskCache>(*g, v.trie, store);
  const uint32_t stored = classify_blocks_by_runs(*masks);
  TokenMaskCache alone(*g, v.trie, std::make_shared<SharedClassifications>(64 << 20, 0));
  const Grammar& ir = (*g)->grammar();
  int compared = 0;
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {
    if (ir.rules[r].name != "block") continue;
    for (uint32_t p = (*g)->alt_starts(r)[0] + 1; (*g)->symbol(p).kind != FlatSymbol::Kind::kEnd; ++p) {
      auto key = position_key(**g, p, store->max_key_bytes());
      ASSERT_TRUE(key.has_value());
      // Blocks of array elements have items too long for the run walk's automaton; their positions
      // keep their walks.
      std::shared_ptr<const PositionMask> made = store->find(*key);
      if (made == nullptr) continue;
      const PositionMask& want = alone.get(p);
      ASSERT_EQ(made->uncertain, want.uncertain) << name << " position " << p;
      ASSERT_TRUE(accepted(*made, *v.trie) == accepted(want, *v.trie)) << name << " position " << p;
      ++compared;
    }
  }
  // The instance's masks, cold, with the blocks' classifications from the run walk.
  ASSERT_TRUE(accepts(**g, kInstance));
  const std::vector<int32_t> ids = v.tok->encode(kInstance, {.add_special = false, .parse_special = false});
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
  std::printf("%s: %u block classifications from run walks, %d positions equal their own walk, %zu masks equal\n",
              name.c_str(), stored, compared, ids.size() + 1);
  // A JSON string character's block (15 positions, shared by "title", "body" and the tags' strings)
  // and body's block of 16 blocks (15 positions, 16 to 240 items left).
  EXPECT_EQ(stored, 30u);
  EXPECT_GE(compared, 60);
}

TEST(CounterRuns, BlockClassificationsEqualTheirOwnWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(CounterRuns, BlockClassificationsEqualTheirOwnWalkLlama3) { check_vocabulary("llama-bpe"); }

// A block whose item is not prefix-free (a number: "1" continues as "12") is left to the walks.
TEST(CounterRuns, ItemsThatAreNotPrefixFreeAreLeftAlone) {
  RealVocab v = load_real_vocab("smollm");
  ASSERT_NE(v.trie, nullptr);
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kGbnf, .source = R"(root ::= "[" num{0,40} "]"
num ::= [0-9]+)"});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  TokenMaskCache masks(*g, v.trie);
  EXPECT_EQ(classify_blocks_by_runs(masks), 0u);
}

}  // namespace
}  // namespace keel::grammar::test
