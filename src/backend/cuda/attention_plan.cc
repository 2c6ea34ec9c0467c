#include "backend/cuda/attention_plan.h"

#include <algorithm>

namespace keel::backend::cuda {

void plan_attention(const AttentionParams& p, int n_heads, int n_kv, int n_sm, bool fixed_grid, AttentionPlan& plan) {
  plan.items.clear();
  plan.n_splits = 1;
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
