// The first column whose first bytes lead mostly to a state t keeps its mask for t
// (GrammarMatcher::fill_by_first_byte, first_byte_mask.cc): every entry a mask adds to the store is
// checked against an independent reading of that column — the state each first byte leads to, from a
// fresh parser at the same text on the same state table, and the tokens, the plain-parser walk
// (mask_reference.h) — so a later column that swaps subtrees into it starts from the truth. Typing
// keys of an object with names that share prefixes and other keys allowed, SmolLM2 and Llama 3.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compile.h"
#include "grammar/earley.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "unit/grammar/mask_reference.h"

namespace keel::grammar::test {
namespace {

const char* kSchema = R"({"type": "object", "properties": {
  "alpha": {"type": "integer"}, "alphabet": {"type": "string"}, "beta": {"type": "boolean"},
  "gamma_ray": {"type": "integer"}, "\u00e9p\u00e9e": {"type": "integer"}},
  "additionalProperties": {"type": "integer"}})";

const char* kInstance = R"({"alpha":1,"alphabet":"x","beta":true,"aardvark":2,"alphx":3,"gamma_rays":4,"zeta":5,"zz":6})";

void check_vocabulary(const std::string& name) {
  RealVocab v = load_real_vocab(name);
  ASSERT_NE(v.trie, nullptr);
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = kSchema});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto masks = std::make_shared<TokenMaskCache>(*g, v.trie);
  const auto& nodes = v.trie->nodes();
  GrammarMatcher m(masks);
  std::vector<uint32_t> mask(masks->n_mask_words());
  const std::vector<int32_t> ids = v.tok->encode(kInstance, {.add_special = false, .parse_special = false});
  std::string prefix;
  int checked = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    // The state most first bytes lead to from here, read by a fresh parser on the same table.
    std::vector<StateTable::State> at(256, StateTable::kDead);
    std::vector<uint32_t> seen;
    for (uint32_t top = 0; top < nodes.size(); top = nodes[top].subtree_end) {
      EarleyParser p(**g, &masks->states());
      ASSERT_TRUE(p.push_bytes(prefix));
      if (p.push_byte(nodes[top].byte)) at[nodes[top].byte] = p.state();
    }
    std::vector<StateTable::State> sorted(at);
    std::sort(sorted.begin(), sorted.end());
    StateTable::State t = StateTable::kNone;
    size_t best = 0;
    for (size_t a = 0; a < sorted.size();) {
      size_t b = a;
      while (b < sorted.size() && sorted[b] == sorted[a]) ++b;
      if (sorted[a] != StateTable::kDead && b - a > best) best = b - a, t = sorted[a];
      a = b;
    }
    const bool had = t != StateTable::kNone && masks->load_first_byte(t) != nullptr;
    m.fill_mask(mask);
    if (t != StateTable::kNone && !had) {
      if (auto kept = masks->load_first_byte(t)) {
        // Made from this column: its first bytes' states and its tokens (the mask without EOS).
        for (int b = 0; b < 256; ++b) {
          bool top = false;
          for (uint32_t n = 0; n < nodes.size(); n = nodes[n].subtree_end) top |= nodes[n].byte == b;
          if (top) {
            ASSERT_EQ(kept->at[b], at[b]) << name << " step " << i << " byte " << b;
          }
        }
        std::vector<uint32_t> want = reference_mask(**g, *v.trie, prefix);
        for (int32_t e : v.trie->vocab().eos_ids) want[e >> 5] &= ~(1u << (e & 31));
        ASSERT_EQ(count_differences(kept->bits, want), 0) << name << " step " << i;
        ++checked;
      }
    }
    ASSERT_EQ(count_differences(mask, reference_mask(**g, *v.trie, prefix)), 0) << name << " step " << i;
    if (i == ids.size()) break;
    ASSERT_TRUE(m.accept_token(ids[i])) << name << " step " << i;
    prefix += v.trie->vocab().token_bytes[ids[i]];
  }
  std::printf("%s: %d first-byte masks kept from a column's positions, each equal to that column\n", name.c_str(), checked);
  EXPECT_GE(checked, 3);
}

TEST(FirstByteFirstColumn, KeptMaskIsTheColumnsSmolLM2) { check_vocabulary("smollm"); }

TEST(FirstByteFirstColumn, KeptMaskIsTheColumnsLlama3) { check_vocabulary("llama-bpe"); }

}  // namespace
}  // namespace keel::grammar::test
