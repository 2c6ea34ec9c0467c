// Plans an attention call on the host: the thread-block work items (sequence, kv head, query tokens,
// query heads) and the split-KV factor that gives the device enough blocks for short batches with long
// contexts. Pure function of the AttentionParams and shapes; called by CudaBackend::attention.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

struct AttentionPlan {
  std::vector<AttnItem> items;
  int n_splits = 1;     // key ranges that hold keys
  int grid_splits = 1;  // key ranges launched (>= n_splits; the rest are empty)
  int split_len = 0;    // keys per split, a multiple of 32
  bool tensor_cores = false;  // items are for attention_tc.cu (tc_rows rows each, one split)
  bool decode = false;        // items are for attention_decode.cu (one token x the whole group each)
  int tc_rows = 0;            // query rows per tensor-core item (attention_tc_rows() when planned)
  // A tensor-core plan's sequences with one new token (decode rows of a mixed batch), when the decode
  // kernel takes the heads: its items (decode_splits key ranges of decode_split_len keys each; one range
  // of all keys in mixed mode 0), launched after the tensor-core items (mode 2: beside them, on a second
  // stream). Empty otherwise (those rows are then tensor-core items too).
  std::vector<AttnItem> decode_items;
  int decode_split_len = 0;
  int decode_splits = 1;
};

// Fills `plan` (reusing its storage, so a plan repeated for every layer keeps its address and the
// staging memo copies it to the device once per step).
// Prefill (some sequence has >= kAttnTcMinTokens new tokens), bf16, head_dim 64/128, not fixed_grid:
// tensor-core items (tokens x the whole group, longest key ranges first), unless KEEL_CUDA_ATTN_TC=0;
// the sequences with one new token go to decode_items (the decode kernel, unsplit) unless
// KEEL_CUDA_ATTN_MIXED=0 or KEEL_CUDA_ATTN_DECODE=0.
// Decode (every sequence has at most one new token), bf16, head_dim 64/128, group <= 8: decode-kernel
// items (sequence x kv head, split-KV sized from the SM count), unless KEEL_CUDA_ATTN_DECODE=0.
// fixed_grid (graph steps): grid_splits depends on the items alone, not on the context lengths, so a
// captured launch fits every step with the same sequence count; split_len and n_splits are as without.
// Whether a tensor-core plan sends its one-token sequences to the decode kernel (default on;
// KEEL_CUDA_ATTN_MIXED=0 at start-up turns it off, the setter overrides it: tests and benchmarks).
bool attention_mixed_split();
void set_attention_mixed_split(bool on);
// How the decode items of a mixed plan run (KEEL_CUDA_ATTN_MIXED_SPLIT=0/1/2 at start-up, default 1;
// the setter overrides it): 0 one split each over all keys, after the tensor-core kernel (sessions
// 6-7); 1 split-KV as a decode step's plan splits (the same split search: wave fill, scratch bound);
// 2 as 1, launched on a second stream beside the tensor-core kernel (CudaBackend::attention).
int attention_mixed_mode();
void set_attention_mixed_mode(int mode);

void plan_attention(const AttentionParams& p, int n_heads, int n_kv, int head_dim, bool bf16, int n_sm, bool fixed_grid,
                    AttentionPlan& plan);

}  // namespace keel::backend::cuda
