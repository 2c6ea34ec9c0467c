// Device-side load/store of f32 and bf16 activations as float, shared by the .cu files.
#pragma once

#include <cuda_bf16.h>

#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

__device__ __forceinline__ float load_f(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_f(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_f(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// Calls fn(T{}) with T = float or __nv_bfloat16 for the activation type.
template <typename Fn>
void dispatch_act(ActType t, Fn&& fn) {
  if (t == ActType::kF32) {
    fn(float{});
  } else {
    fn(__nv_bfloat16{});
  }
}

// One 16-byte vector of T (8 bf16 or 4 f32 elements), for kernels that load and store 16 bytes at a time.
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
  T v[kN];
};

inline unsigned grid_1d(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace keel::backend::cuda
