// Counter positions classified ahead of use (counter_prefill.h): the store finds the kernel positions
// of `block` and `exactly` rules (strings under maxLength/minLength), classifies them when the grammar
// is registered (lowest counts first, within its budget), and the masks of instances that stand on
// them equal the plain Earley walk of the vocabulary trie (mask_reference.h) at every step, with
// SmolLM2's and Llama 3's tokenizers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/counter_prefill.h"
#include "grammar/earley.h"
#include "grammar/grammar_store.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

// Block counters (maxLength above 32), linear ones (up to 32), minLength, a pattern under a length
// range, non-ASCII text.
const char* kCounterSchema = R"({"type": "object", "properties": {
  "title": {"type": "string", "maxLength": 100},
  "code": {"type": "string", "minLength": 2, "maxLength": 12},
  "tag": {"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 40},
  "note": {"type": "string", "maxLength": 20}},
  "required": ["title", "code", "tag", "note"], "additionalProperties": false})";

const char* kInstance =
    R"({"title":"The quick brown fox jumps over the lazy dog, déjà vu — 日本語のテキスト","code":"AB-12)"
    R"(_x","tag":"abcdefghijklmnopqrstuvw","note":"short \"q\" note ok"})";

constexpr std::chrono::microseconds kAmple{60'000'000};

TEST(CounterPrefill, FindsCounterPositionsLowestCountFirst) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = kCounterSchema});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const std::vector<uint32_t> pos = counter_positions(**g);
  ASSERT_GT(pos.size(), 40u);
  std::vector<uint32_t> sorted = pos;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a position listed twice";
  const Grammar& ir = (*g)->grammar();
  for (uint32_t p : pos) {
    // Inside a block or exactly rule, after its first symbol, before its end.
    ASSERT_NE((*g)->symbol(p).kind, FlatSymbol::Kind::kEnd);
    uint32_t end = p;
    while ((*g)->symbol(end).kind != FlatSymbol::Kind::kEnd) ++end;
    const std::string& name = ir.rules[(*g)->symbol(end).index].name;
    EXPECT_TRUE(name == "block" || name == "exactly" || name == "up_to" || name == "repeat") << name;
    const auto& starts = (*g)->alt_starts((*g)->symbol(end).index);
    EXPECT_EQ(std::find(starts.begin(), starts.end(), p), starts.end()) << "dot before the first symbol";
  }
  // A grammar without counters has none.
  auto plain = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"type": "string"})"});
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(counter_positions(**plain).empty());
}

TEST(CounterPrefill, BudgetBoundsTheWork) {
  RealVocab v = load_real_vocab("smollm");
  ASSERT_NE(v.trie, nullptr);
  const GrammarSpec spec{.kind = GrammarSpec::Kind::kJsonSchema, .source = kCounterSchema};
  GrammarStore none(v.trie, 4, 0, std::chrono::microseconds(0));
  auto m = none.get_or_compile(spec);
  ASSERT_TRUE(m.ok());
  for (uint32_t p : counter_positions((*m)->grammar())) EXPECT_FALSE((*m)->classified(p));
  // A budget that runs out at once still classifies the lowest count first, then stops.
  auto g = compile_grammar(spec);
  ASSERT_TRUE(g.ok());
  TokenMaskCache tiny(*g, v.trie);
  const CounterPrefillStats st = classify_counters_ahead(tiny, std::chrono::microseconds(1));
  EXPECT_LE(st.classified, 1u);
  EXPECT_GT(st.candidates, 40u);
}

// Every mask of the instance (cold, right after registration) against the reference walk, and how
// many steps stood on a counter position the store had classified ahead.
void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  GrammarStore store(v.trie, 4, 0, kAmple);
  auto masks = store.get_or_compile({.kind = GrammarSpec::Kind::kJsonSchema, .source = kCounterSchema});
  ASSERT_TRUE(masks.ok()) << masks.status().to_string();
  const CompiledGrammar& g = (*masks)->grammar();
  const std::vector<uint32_t> counters = counter_positions(g);
  for (uint32_t p : counters) ASSERT_TRUE((*masks)->classified(p)) << "not classified ahead: " << p;
  ASSERT_TRUE(accepts(g, kInstance));
  const std::vector<int32_t> ids = v.tok->encode(kInstance, {.add_special = false, .parse_special = false});
  std::vector<uint32_t> mask((*masks)->n_mask_words());
  std::vector<uint32_t> kernel;
  GrammarMatcher m(*masks);
  std::string prefix;
  int served = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    EarleyParser p(g);
    ASSERT_TRUE(p.push_bytes(prefix));
    p.kernel_positions(kernel);
    served += std::any_of(kernel.begin(), kernel.end(),
                          [&](uint32_t k) { return std::find(counters.begin(), counters.end(), k) != counters.end(); });
    m.fill_mask(mask);
    const int diff = count_differences(mask, reference_mask(g, *v.trie, prefix));
    ASSERT_EQ(diff, 0) << name << " step " << i << " after '" << prefix << "'";
    if (i == ids.size()) break;
    ASSERT_TRUE(mask[ids[i] >> 5] >> (ids[i] & 31) & 1u) << name << " step " << i;
    ASSERT_TRUE(m.accept_token(ids[i])) << name << " step " << i;
    prefix += v.trie->vocab().token_bytes[ids[i]];
  }
  std::printf("%s: %zu counter positions classified ahead; %d of %zu masks stood on one, all equal the reference\n",
              name.c_str(), counters.size(), served, ids.size() + 1);
  EXPECT_GT(served, 15);  // the path under test served the instance's strings
}

TEST(CounterPrefill, MasksEqualParserWalkSmolLM2) { check_vocabulary("smollm"); }

TEST(CounterPrefill, MasksEqualParserWalkLlama3) { check_vocabulary("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
