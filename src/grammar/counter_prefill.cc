#include "grammar/counter_prefill.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <vector>

namespace keel::grammar {

std::vector<uint32_t> counter_positions(const CompiledGrammar& g) {
  const Grammar& ir = g.grammar();
  auto named = [&](uint32_t rule, std::string_view name) {
    return rule < ir.rules.size() && ir.rules[rule].name == name;
  };
  // exactly[c] ::= exactly[c-1] x (c = 1 starts from `empty`): the count c of each exactly rule.
  std::vector<uint32_t> depth(g.n_rules(), 0);
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {  // exactly[c-1] is added before exactly[c]
    if (!named(r, "exactly") || g.alt_starts(r).size() != 1) continue;
    const FlatSymbol& first = g.symbol(g.alt_starts(r)[0]);
    const bool chained = first.kind == FlatSymbol::Kind::kRule && first.index < r && named(first.index, "exactly");
    depth[r] = chained ? depth[first.index] + 1 : 1;
  }
  // Counted in items of the string: a chain of blocks counts 16 items per block.
  std::vector<std::tuple<uint32_t, uint32_t>> found;  // (count, position)
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {
    const bool block = named(r, "block"), exactly = depth[r] > 0;
    if (!block && !exactly) continue;
    for (uint32_t start : g.alt_starts(r)) {
      // Kernel positions: the dot after at least one symbol, before another.
      for (uint32_t p = start + 1; g.symbol(p).kind != FlatSymbol::Kind::kEnd; ++p) {
        const FlatSymbol& item = g.symbol(p);
        const uint32_t per = exactly && item.kind == FlatSymbol::Kind::kRule && named(item.index, "block") ? 16 : 1;
        found.emplace_back(block ? p - start : depth[r] * per, p);
      }
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<uint32_t> out;
  out.reserve(found.size());
  for (const auto& [count, pos] : found) out.push_back(pos);
  return out;
}

CounterPrefillStats classify_counters_ahead(TokenMaskCache& masks, std::chrono::microseconds budget) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const std::vector<uint32_t> positions = counter_positions(masks.grammar());
  CounterPrefillStats stats{.candidates = static_cast<uint32_t>(positions.size())};
  for (uint32_t pos : positions) {
    if (Clock::now() - t0 >= budget) break;
    masks.get(pos);
    ++stats.classified;
  }
  return stats;
}

}  // namespace keel::grammar
