// The fused decode GEMV (gemv.cu): the block's pre-norm inside the GEMV, SiLU-mul as the gate/up
// GEMV's epilogue and RoPE + the KV-pool write as the Q/K/V GEMV's (docs/cuda_backend.md "Fused decode GEMVs"). Called by CudaBackend (fused_ops.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

// The fused form (weights, residual and outputs all bf16, or all f32 with f32 = true): each block
// computes its x = rms_norm(residual + add) * w itself (n * k elements in shared memory, at most
// 48 KiB), and the last block writes the new residual (when add != nullptr) and x to h.
struct GemvNorm {
  void* residual;     // [n, k]
  const void* add;    // [n, k], or null: the residual is only read
  const float* w;     // [k]
  float eps;
  void* h;            // [n, k]
  unsigned* counter;  // a zero; the last block sets it back to zero
};
// The epilogue: kNone writes each segment's out; kSiluMul: g holds the gate (segment 0) and up
// (segment 1) weights, m[0] == m[1], and out[0] [n, m[0]] = silu(x . gate^T) * (x . up^T), each
// product rounded to the output type first; kRopeKv: g holds Q, K and V (segments 0, 1, 2, rows whole
// heads of rope.head_dim), written to their outputs with RoPE applied to q and k as rope_write_kv's
// kernel does it, and k (roped) and v also to the KV pool rows rope.slots.
enum class GemvEpilogue { kNone, kSiluMul, kRopeKv };
struct GemvRope {
  const int32_t* positions;  // [n]
  const int32_t* slots;      // [n]
  const float* inv_freq;     // [rot_dims / 2]
  int head_dim, rot_dims, n_kv;
  bool neox;
  float attn_factor;
  void* k_cache;  // [n_slots, n_kv, head_dim]
  void* v_cache;
};
void launch_gemv_fused(GemvGroup g, const GemvNorm& norm, GemvEpilogue epi, const GemvRope& rope, int n, int64_t k,
                       bool f32, cudaStream_t s);

}  // namespace keel::backend::cuda
