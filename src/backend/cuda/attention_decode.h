// Decode attention (attention_decode.cu): one new query token per sequence, bf16, head_dim 64 or 128,
// GQA group 1..8. A block runs one (sequence, kv head) over one key range (split-KV) and computes the
// whole group per K/V row read. launch_attention dispatches here when AttnLaunch::decode is set
// (plan_attention sets it for batches whose sequences all have at most one new token).
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

inline constexpr int kAttnDecodeMaxGroup = 8;
// Keys per split are a multiple of this and at least this many (a shorter split is mostly set-up).
inline constexpr int kAttnDecodeSplitKeys = 128;
// Splits per item at most (the last block's merge keeps a weight per split and head in shared memory).
inline constexpr int kAttnDecodeMaxSplits = 256;

// Whether the decode kernel covers these heads (bf16 checked by the caller).
inline bool attention_decode_supports(int n_heads, int n_kv, int head_dim) {
  const int group = n_kv > 0 ? n_heads / n_kv : 0;
  return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= kAttnDecodeMaxGroup;
}
// Blocks of the kernel resident per SM (its launch bounds; registers grow with the group): a wave.
constexpr int attention_decode_blocks_per_sm(int group) { return group <= 5 ? 4 : group == 6 ? 3 : 2; }
void launch_attention_decode(const AttnLaunch& p, cudaStream_t s);
void attention_decode_set_smem_limits();  // dynamic shared memory above 48 KiB (called once at start-up)
// Merges the n_splits partial (acc, max, sum) triples into out (attention.cu, for its CUDA-core kernel;
// the decode kernel merges in its last block instead).
void launch_attention_combine(const AttnLaunch& p, ActType t, cudaStream_t s);

}  // namespace keel::backend::cuda
