// Tensor-core prefill attention (attention_tc.cu): bf16 only, head_dim 64 or 128, one split, items
// planned by plan_attention with tensor_cores set (kAttnTcRows rows = tokens x whole GQA group).
// launch_attention dispatches here when AttnLaunch::tensor_cores is set.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

inline constexpr int kAttnTcRows = 64;       // query rows per thread block
inline constexpr int kAttnTcMinTokens = 16;  // a sequence with at least this many new tokens is prefill

// Whether the tensor-core kernel covers these heads (bf16 checked by the caller).
inline bool attention_tc_supports(int n_heads, int n_kv, int head_dim) {
  const int group = n_heads / n_kv;
  return (head_dim == 64 || head_dim == 128) && group >= 1 && kAttnTcRows % group == 0;
}
void launch_attention_tc(const AttnLaunch& p, cudaStream_t s);
void attention_tc_set_smem_limits();

}  // namespace keel::backend::cuda
