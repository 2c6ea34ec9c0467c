// Skinny matmul for decode (n <= 8 tokens): out[n, m] = x[n, k] . w[m, k]^T (+ bias), bf16 operands,
// f32 accumulation. Memory bound on the weights, so one warp streams one weight row with 16-byte loads
// (8 in flight per lane) and reuses it for every token; x is tiny and stays in L1/L2. cuBLAS picks
// kernels for n = 1 that read the weights at about half the bandwidth, hence this path.
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ void fma8(const uint4& w, const uint4& x, float& acc) {
  const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(wh[i]), b = __bfloat1622float2(xh[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
}

template <typename T, int kMaxN>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, const float* bias, T* out, int n, int64_t k, int64_t m) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= m) return;
  const int64_t k8 = k / 8;  // 16-byte vectors per row
  const uint4* wr = reinterpret_cast<const uint4*>(w + row * k);
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  float acc[kMaxN];
#pragma unroll
  for (int t = 0; t < kMaxN; ++t) acc[t] = 0.0f;
  constexpr int kUnroll = 8;
  int64_t i = lane;
  for (; i + 32 * (kUnroll - 1) < k8; i += 32 * kUnroll) {
    uint4 wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + i + 32 * u);  // streamed once: evict first
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int t = 0; t < kMaxN; ++t) {
        if (t < n) fma8(wv[u], __ldg(xr + t * k8 + i + 32 * u), acc[t]);
      }
    }
  }
  for (; i < k8; i += 32) {
    const uint4 wv = __ldcs(wr + i);
#pragma unroll
    for (int t = 0; t < kMaxN; ++t) {
      if (t < n) fma8(wv, __ldg(xr + t * k8 + i), acc[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < kMaxN; ++t) {
    float v = acc[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0 && t < n) store_f(out, t * m + row, v + (bias != nullptr ? bias[row] : 0.0f));
  }
}

template <typename T, int kMaxN>
void launch_n(const void* x, const void* w, const float* bias, void* out, int n, int64_t k, int64_t m, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>((m + kWarpsPerBlock - 1) / kWarpsPerBlock);
  gemv_kernel<T, kMaxN><<<blocks, kWarpsPerBlock * 32, 0, s>>>(static_cast<const __nv_bfloat16*>(x),
                                                               static_cast<const __nv_bfloat16*>(w), bias,
                                                               static_cast<T*>(out), n, k, m);
}

}  // namespace

void launch_gemv(const void* x, const void* w, const float* bias, void* out, int n, int64_t k, int64_t m, ActType t,
                 cudaStream_t s) {
  if (n == 0 || m == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    if (n == 1) {
      launch_n<T, 1>(x, w, bias, out, n, k, m, s);
    } else if (n == 2) {
      launch_n<T, 2>(x, w, bias, out, n, k, m, s);
    } else if (n <= 4) {
      launch_n<T, 4>(x, w, bias, out, n, k, m, s);
    } else {
      launch_n<T, 8>(x, w, bias, out, n, k, m, s);
    }
  });
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
