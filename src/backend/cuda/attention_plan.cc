#include "backend/cuda/attention_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_tc.h"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {

namespace {

bool tc_enabled() {
  static const bool on = env_on("KEEL_CUDA_ATTN_TC");
  return on;
}
// The decode splits' key unit: kAttnDecodeSplitKeys, or 32 when there are fewer items than SMs (a few
// sequences: the blocks of one item then read 32 keys each, one batch per warp, and the step waits on
// fewer dependent loads; batch-1 decode at 512 keys measured 4.83 -> 4.71 ms per step with 32 instead
// of 128); KEEL_CUDA_ATTN_SPLIT_KEYS (a multiple of 32 up to 1,024) sets it for every batch (A/B runs).
int decode_split_keys(int64_t n_items, int n_sm) {
  static const int forced = [] {
    const char* v = std::getenv("KEEL_CUDA_ATTN_SPLIT_KEYS");
    const int u = v != nullptr ? std::atoi(v) : 0;
    return u >= 32 && u <= 1024 && u % 32 == 0 ? u : 0;
  }();
  if (forced > 0) return forced;
  return n_items < n_sm ? 32 : kAttnDecodeSplitKeys;
}
bool decode_enabled() {
  static const bool on = env_on("KEEL_CUDA_ATTN_DECODE");
  return on;
}

// The key ranges of decode items (n_items of them, up to max_keys keys, whole groups): the count up to
// max_splits whose blocks fill whole waves best (resident blocks per SM x SMs), with splits x items x
// group <= 64 x SMs (the merge scratch's bound, cuda_ops.cc), splits <= kAttnDecodeMaxSplits (the
// in-kernel merge's) and each split at least the unit (decode_split_keys) long. fixed_grid: the grid
// takes the count found without the key limit (the items alone), the split length stays the one with
// it, so a graph step computes what an eager step does (the extra splits are empty: they exit at once
// and are not merged).
struct DecodeSplits {
  int split_len, n_splits, grid_splits;
};
DecodeSplits decode_splits(int64_t n_items, int max_keys, int group, int n_sm, bool fixed_grid) {
  // The model plans every layer of a step with the same sequences: the split search (up to 2 x 256
  // candidates) runs once per step, not once per layer (host time a graph replay waits for).
  struct Memo {
    int64_t n_items;
    int max_keys, n_sm, group;
    bool fixed_grid;
    DecodeSplits out;
  };
  thread_local Memo last{-1, 0, 0, 0, false, {0, 0, 0}};
  if (last.n_items == n_items && last.max_keys == max_keys && last.n_sm == n_sm && last.group == group &&
      last.fixed_grid == fixed_grid) {
    return last.out;
  }
  const auto wave = static_cast<double>(attention_decode_blocks_per_sm(group)) * n_sm;
  const int64_t by_scratch = std::min<int64_t>(
      kAttnDecodeMaxSplits, n_items > 0 ? std::max<int64_t>(1, 64LL * n_sm / (n_items * group)) : 1);
  // The first count of [1, max_splits] with the best wave fill: the search over a shorter range never
  // ends above the one over a longer range.
  auto best_splits = [&](int64_t max_splits) {
    int best = 1;
    double best_fill = 0;
    for (int64_t s = 1; s <= max_splits; ++s) {
      const double waves = static_cast<double>(n_items * s) / wave;
      const double fill = waves / std::ceil(waves);
      if (fill > best_fill + 1e-3) {
        best_fill = fill;
        best = static_cast<int>(s);
      }
    }
    return best;
  };
  const int unit = decode_split_keys(n_items, n_sm);
  const int splits = best_splits(std::min<int64_t>(by_scratch, std::max(1, max_keys / unit)));
  const int per_split = (max_keys + splits - 1) / splits;
  DecodeSplits out{};
  out.split_len = std::max(unit, (per_split + unit - 1) / unit * unit);
  out.n_splits = std::max(1, (max_keys + out.split_len - 1) / out.split_len);
  out.grid_splits = fixed_grid ? std::max(best_splits(by_scratch), out.n_splits) : out.n_splits;
  last = {n_items, max_keys, n_sm, group, fixed_grid, out};
  return out;
}

// Decode items: one per (sequence with a new token, kv head), the whole group each, split as above.
void plan_decode(const AttentionParams& p, int n_kv, int group, int n_sm, bool fixed_grid, AttentionPlan& plan) {
  int max_keys = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    if (sq.n_q == 0) continue;
    max_keys = std::max(max_keys, static_cast<int>(sq.ctx_slots.size()));
    for (int kvh = 0; kvh < n_kv; ++kvh) plan.items.push_back({static_cast<int32_t>(s), kvh, 0, 1, 0, group});
  }
  plan.decode = true;
  const DecodeSplits sp = decode_splits(static_cast<int64_t>(plan.items.size()), max_keys, group, n_sm, fixed_grid);
  plan.split_len = sp.split_len;
  plan.n_splits = sp.n_splits;
  plan.grid_splits = sp.grid_splits;
}

bool g_mixed_split = env_on("KEEL_CUDA_ATTN_MIXED");
int g_mixed_mode = [] {
  const char* v = std::getenv("KEEL_CUDA_ATTN_MIXED_SPLIT");
  return v != nullptr && v[0] >= '0' && v[0] <= '2' && v[1] == '\0' ? v[0] - '0' : 1;
}();

// Tensor-core items: attention_tc_rows() / group tokens x the whole group each; the longest key ranges
// first, so the causal tail of the grid is made of short items. With split_decode, sequences with one
// new token become decode-kernel items instead (a tensor-core item would spend a 64- to 256-row block's
// MMAs on the group's few rows): one split of all their keys (mixed mode 0), or split as a decode step's
// items of the same count and keys would be (modes 1 and 2): a few decode rows of long contexts are
// then not a few blocks streaming 1,000+ keys each in turn.
void plan_tc(const AttentionParams& p, int n_heads, int n_kv, bool split_decode, int n_sm, AttentionPlan& plan) {
  const int group = n_heads / n_kv;
  plan.tc_rows = attention_tc_rows();
  const int tokens_per_item = plan.tc_rows / group;
  int max_keys = 0, max_decode_keys = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    const int keys = static_cast<int>(sq.ctx_slots.size());
    if (split_decode && sq.n_q == 1) {
      max_decode_keys = std::max(max_decode_keys, keys);
      for (int kvh = 0; kvh < n_kv; ++kvh) plan.decode_items.push_back({static_cast<int32_t>(s), kvh, 0, 1, 0, group});
      continue;
    }
    max_keys = std::max(max_keys, keys);
    for (int kvh = 0; kvh < n_kv; ++kvh) {
      for (int t0 = 0; t0 < sq.n_q; t0 += tokens_per_item) {
        plan.items.push_back({static_cast<int32_t>(s), kvh, t0, std::min(sq.n_q, t0 + tokens_per_item), 0, group});
      }
    }
  }
  auto keys = [&](const AttnItem& it) {
    const AttnSeq& sq = p.seqs[static_cast<size_t>(it.seq)];
    return static_cast<int>(sq.ctx_slots.size()) - sq.n_q + it.t1;
  };
  std::stable_sort(plan.items.begin(), plan.items.end(),
                   [&](const AttnItem& a, const AttnItem& b) { return keys(a) > keys(b); });
  plan.n_splits = plan.grid_splits = 1;
  plan.split_len = std::max(32, (max_keys + 31) / 32 * 32);
  const int unit = kAttnDecodeSplitKeys;
  plan.decode_split_len = std::max(unit, (max_decode_keys + unit - 1) / unit * unit);
  plan.decode_splits = 1;
  if (!plan.decode_items.empty() && g_mixed_mode > 0) {
    const DecodeSplits sp =
        decode_splits(static_cast<int64_t>(plan.decode_items.size()), max_decode_keys, group, n_sm, false);
    plan.decode_split_len = sp.split_len;
    plan.decode_splits = sp.n_splits;
  }
  plan.tensor_cores = true;
}

}  // namespace

bool attention_mixed_split() { return g_mixed_split; }
void set_attention_mixed_split(bool on) { g_mixed_split = on; }
int attention_mixed_mode() { return g_mixed_mode; }
void set_attention_mixed_mode(int mode) { g_mixed_mode = std::clamp(mode, 0, 2); }

void plan_attention(const AttentionParams& p, int n_heads, int n_kv, int head_dim, bool bf16, int n_sm,
                    bool fixed_grid, AttentionPlan& plan) {
  plan.items.clear();
  plan.decode_items.clear();
  plan.n_splits = 1;
  plan.tensor_cores = false;
  plan.decode = false;
  plan.tc_rows = 0;
  plan.decode_split_len = 0;
  plan.decode_splits = 1;
  const bool decode_ok = bf16 && attention_decode_supports(n_heads, n_kv, head_dim) && decode_enabled();
  if (decode_ok &&
      std::all_of(p.seqs.begin(), p.seqs.end(), [](const AttnSeq& sq) { return sq.n_q <= 1; })) {
    plan_decode(p, n_kv, n_heads / n_kv, n_sm, fixed_grid, plan);
    return;
  }
  if (bf16 && !fixed_grid && attention_tc_supports(n_heads, n_kv, head_dim) && tc_enabled()) {
    const bool prefill = std::any_of(p.seqs.begin(), p.seqs.end(),
                                     [](const AttnSeq& sq) { return sq.n_q >= kAttnTcMinTokens; });
    if (prefill) {
      plan_tc(p, n_heads, n_kv, decode_ok && g_mixed_split, n_sm, plan);
      return;
    }
  }
  const int group = n_heads / n_kv;
  const int heads_per_item = std::min(group, kAttnRowsPerBlock);
  const int tokens_per_item = std::max(1, kAttnRowsPerBlock / heads_per_item);
  int max_keys = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    max_keys = std::max(max_keys, static_cast<int>(sq.ctx_slots.size()));
    for (int kvh = 0; kvh < n_kv; ++kvh) {
      for (int t0 = 0; t0 < sq.n_q; t0 += tokens_per_item) {
        for (int g0 = 0; g0 < group; g0 += heads_per_item) {
          plan.items.push_back({static_cast<int32_t>(s), kvh, t0, std::min(sq.n_q, t0 + tokens_per_item), g0,
                                std::min(group, g0 + heads_per_item)});
        }
      }
    }
  }
  // Split the keys when the items alone leave SMs idle and the contexts are long enough to share.
  constexpr int kMinSplitKeys = 64;  // two tiles: a split shorter than that is mostly set-up
  const int64_t want_blocks = 2 * static_cast<int64_t>(n_sm);
  const auto n_items = static_cast<int64_t>(plan.items.size());
  const int by_blocks = n_items > 0 ? static_cast<int>((want_blocks + n_items - 1) / n_items) : 1;
  if (n_items > 0 && n_items < want_blocks && max_keys > kMinSplitKeys) {
    const int by_keys = (max_keys + kMinSplitKeys - 1) / kMinSplitKeys;
    plan.n_splits = std::max(1, std::min(by_blocks, by_keys));
  }
  const int per_split = (max_keys + plan.n_splits - 1) / plan.n_splits;
  plan.split_len = std::max(32, (per_split + 31) / 32 * 32);
  plan.n_splits = std::max(1, (max_keys + plan.split_len - 1) / plan.split_len);
  // by_blocks bounds n_splits, so the empty splits of a fixed grid only add zero terms to the merge.
  plan.grid_splits = fixed_grid && n_items < want_blocks ? std::max(by_blocks, plan.n_splits) : plan.n_splits;
}

}  // namespace keel::backend::cuda
