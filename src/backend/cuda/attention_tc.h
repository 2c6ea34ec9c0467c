// Tensor-core prefill attention (attention_tc.cu): bf16 only, head_dim 64 or 128, one split, items
// planned by plan_attention with tensor_cores set (attention_tc_rows() rows = tokens x whole GQA group).
// CudaBackend::attention launches it with the plan's row count; launch_attention (attention.cu)
// dispatches here with attention_tc_rows() when AttnLaunch::tensor_cores is set.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

inline constexpr int kAttnTcMinRows = 64;    // the smaller block; every GQA group the kernel takes divides it
inline constexpr int kAttnTcMinTokens = 16;  // a sequence with at least this many new tokens is prefill

// Query rows per thread block: 256 (8 warps of 2 x 16 rows, the default), 128 (4 warps of 2 x 16 rows)
// or 64 (4 warps of 16 rows, the kernel before session 6). KEEL_CUDA_ATTN_TC_ROWS=64|128|256 picks it
// at start-up; set_attention_tc_rows overrides it (tests and benchmarks run each). Other values are
// ignored.
int attention_tc_rows();
void set_attention_tc_rows(int rows);

// Whether the tensor-core kernel covers these heads (bf16 checked by the caller).
inline bool attention_tc_supports(int n_heads, int n_kv, int head_dim) {
  const int group = n_heads / n_kv;
  return (head_dim == 64 || head_dim == 128) && group >= 1 && kAttnTcMinRows % group == 0;
}
// rows: the row count the items were planned for (64, 128 or 256).
void launch_attention_tc(const AttnLaunch& p, int rows, cudaStream_t s);
void attention_tc_set_smem_limits();

}  // namespace keel::backend::cuda
