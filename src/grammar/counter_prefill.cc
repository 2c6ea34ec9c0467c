#include "grammar/counter_prefill.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <vector>

#include "grammar/counter_rules.h"
#include "grammar/counter_runs.h"
#include "grammar/repeat_runs.h"

namespace keel::grammar {

namespace {
// Positions a string meets after more items than this are left to the first mask (a `maxLength:
// 32767` counter's chain of 2,047 blocks would list 2,047).
constexpr uint32_t kMaxCount = 256;
}  // namespace

std::vector<uint32_t> counter_positions(const CompiledGrammar& g) {
  const Grammar& ir = g.grammar();
  auto named = [&](uint32_t rule, std::string_view name) {
    return rule < ir.rules.size() && ir.rules[rule].name == name;
  };
  // exactly[c] ::= exactly[c-1] x (c = 1 starts from `empty`): the count c of each exactly rule.
  std::vector<uint32_t> depth(g.n_rules(), 0);
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {  // exactly[c-1] is added before exactly[c]
    if (!named(r, counter_rules::kExactly) || g.alt_starts(r).size() != 1) continue;
    const FlatSymbol& first = g.symbol(g.alt_starts(r)[0]);
    const bool chained =
        first.kind == FlatSymbol::Kind::kRule && first.index < r && named(first.index, counter_rules::kExactly);
    depth[r] = chained ? depth[first.index] + 1 : 1;
  }
  // Counted in items of the string: a block, or a run of them, counts 16.
  auto width = [&](const FlatSymbol& sym) -> uint32_t {
    const bool blocks = sym.kind == FlatSymbol::Kind::kRule &&
                        (named(sym.index, counter_rules::kBlock) || named(sym.index, counter_rules::kUpTo));
    return blocks ? 16 : 1;
  };
  std::vector<std::tuple<uint32_t, uint32_t>> found;  // (count, position)
  for (uint32_t r = 0; r < ir.rules.size(); ++r) {
    const bool exactly = depth[r] > 0, other = named(r, counter_rules::kBlock) || named(r, counter_rules::kUpTo) ||
                                               named(r, counter_rules::kRepeat);
    if (!exactly && !other) continue;
    for (uint32_t start : g.alt_starts(r)) {
      // Kernel positions: the dot after at least one symbol, before another.
      uint32_t count = width(g.symbol(start));
      for (uint32_t p = start + 1; g.symbol(p).kind != FlatSymbol::Kind::kEnd; ++p) {
        const uint32_t at = exactly ? depth[r] * width(g.symbol(p)) : count;
        if (at <= kMaxCount) found.emplace_back(at, p);
        count += width(g.symbol(p));
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
  if (!positions.empty()) {
    classify_repeat_starts_by_runs(masks);  // counted strings' first positions, a walk each
    classify_blocks_by_runs(masks);         // the blocks' positions, one walk per item
  }
  for (uint32_t pos : positions) {
    if (Clock::now() - t0 >= budget) break;
    masks.get(pos);
    ++stats.classified;
  }
  return stats;
}

}  // namespace keel::grammar
