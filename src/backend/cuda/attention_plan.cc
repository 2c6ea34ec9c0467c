#include "backend/cuda/attention_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_tc.h"

namespace keel::backend::cuda {

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}
bool tc_enabled() {
  static const bool on = env_on("KEEL_CUDA_ATTN_TC");
  return on;
}
bool decode_enabled() {
  static const bool on = env_on("KEEL_CUDA_ATTN_DECODE");
  return on;
}

// Splits of the keys so that items x splits fill the device (about 4 x SMs blocks) when the items
// alone do not and the contexts are long enough to share (more than min_keys); a split's length is a
// multiple of unit. fixed_grid: grid_splits depends on the items alone.
void plan_splits(int64_t n_items, int max_keys, int n_sm, int want_per_sm, int min_keys, int unit, bool fixed_grid,
                 AttentionPlan& plan) {
  const int64_t want_blocks = static_cast<int64_t>(want_per_sm) * n_sm;
  const int by_blocks = n_items > 0 ? static_cast<int>((want_blocks + n_items - 1) / n_items) : 1;
  plan.n_splits = 1;
  if (n_items > 0 && n_items < want_blocks && max_keys > min_keys) {
    const int by_keys = (max_keys + min_keys - 1) / min_keys;
    plan.n_splits = std::max(1, std::min(by_blocks, by_keys));
  }
  const int per_split = (max_keys + plan.n_splits - 1) / plan.n_splits;
  plan.split_len = std::max(unit, (per_split + unit - 1) / unit * unit);
  plan.n_splits = std::max(1, (max_keys + plan.split_len - 1) / plan.split_len);
  // by_blocks bounds n_splits, so the empty splits of a fixed grid only add zero terms to the merge.
  plan.grid_splits = fixed_grid && n_items < want_blocks ? std::max(by_blocks, plan.n_splits) : plan.n_splits;
}

// Decode items: one per (sequence with a new token, kv head), the whole group each.
void plan_decode(const AttentionParams& p, int n_kv, int group, int n_sm, bool fixed_grid, AttentionPlan& plan) {
  int max_keys = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    if (sq.n_q == 0) continue;
    max_keys = std::max(max_keys, static_cast<int>(sq.ctx_slots.size()));
    for (int kvh = 0; kvh < n_kv; ++kvh) plan.items.push_back({static_cast<int32_t>(s), kvh, 0, 1, 0, group});
  }
  plan_splits(static_cast<int64_t>(plan.items.size()), max_keys, n_sm, 4, kAttnDecodeSplitKeys,
              kAttnDecodeSplitKeys, fixed_grid, plan);
  plan.decode = true;
}

// Tensor-core items: kAttnTcRows / group tokens x the whole group each; the longest key ranges first,
// so the causal tail of the grid is made of short items.
void plan_tc(const AttentionParams& p, int n_heads, int n_kv, AttentionPlan& plan) {
  const int group = n_heads / n_kv;
  const int tokens_per_item = kAttnTcRows / group;
  int max_keys = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    max_keys = std::max(max_keys, static_cast<int>(sq.ctx_slots.size()));
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
  plan.tensor_cores = true;
}

}  // namespace

void plan_attention(const AttentionParams& p, int n_heads, int n_kv, int head_dim, bool bf16, int n_sm,
                    bool fixed_grid, AttentionPlan& plan) {
  plan.items.clear();
  plan.n_splits = 1;
  plan.tensor_cores = false;
  plan.decode = false;
  if (bf16 && attention_decode_supports(n_heads, n_kv, head_dim) && decode_enabled() &&
      std::all_of(p.seqs.begin(), p.seqs.end(), [](const AttnSeq& sq) { return sq.n_q <= 1; })) {
    plan_decode(p, n_kv, n_heads / n_kv, n_sm, fixed_grid, plan);
    return;
  }
  if (bf16 && !fixed_grid && attention_tc_supports(n_heads, n_kv, head_dim) && tc_enabled()) {
    const bool prefill = std::any_of(p.seqs.begin(), p.seqs.end(),
                                     [](const AttnSeq& sq) { return sq.n_q >= kAttnTcMinTokens; });
    if (prefill) {
      plan_tc(p, n_heads, n_kv, plan);
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
  // Two tiles at least (a split shorter than that is mostly set-up), lengths in whole tiles.
  plan_splits(static_cast<int64_t>(plan.items.size()), max_keys, n_sm, 2, 64, 32, fixed_grid, plan);
}

}  // namespace keel::backend::cuda
