// Skinny matmul for decode (n <= 8 tokens): out[n, m] = x[n, k] . w[m, k]^T (+ bias), bf16 operands
// (or f32 ones in the f32 precision mode), for up to three weights sharing x in one launch (Q/K/V,
// gate/up), f32 accumulation. Memory bound on the weights, so one warp streams one weight row with 16-byte loads
// (8 in flight per lane) and reuses it for every token; x is tiny and stays in L1/L2. cuBLAS picks
// kernels for n = 1 that read the weights at about half the bandwidth, hence this path.
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

namespace keel::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// acc += dot of one 16-byte vector of weights with one of x: 8 bf16 or 4 f32 elements.
__device__ __forceinline__ void fma_vec(const uint4& w, const uint4& x, float& acc, __nv_bfloat16 /*tag*/) {
  const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* xh = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(wh[i]), b = __bfloat1622float2(xh[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
}

__device__ __forceinline__ void fma_vec(const uint4& w, const uint4& x, float& acc, float /*tag*/) {
  const float4 a = reinterpret_cast<const float4&>(w), b = reinterpret_cast<const float4&>(x);
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  acc = fmaf(a.w, b.w, acc);
}

// The row's segment (up to kGemvMaxSegments weights sharing x, one launch): its weight, bias and
// output, and the row within it.
struct SegRow {
  const void* w;
  const float* bias;
  void* out;
  int64_t m, row;
};

__device__ __forceinline__ SegRow seg_row(const GemvGroup& g, int64_t row) {
  int s = 0;
  if (g.n_seg > 1 && row >= g.m[0]) {
    row -= g.m[0];
    s = 1;
    if (g.n_seg > 2 && row >= g.m[1]) {
      row -= g.m[1];
      s = 2;
    }
  }
  // Selects, not an indexed parameter array (which would go through local memory).
  const void* w = s == 0 ? g.w[0] : (s == 1 ? g.w[1] : g.w[2]);
  const float* b = s == 0 ? g.bias[0] : (s == 1 ? g.bias[1] : g.bias[2]);
  void* o = s == 0 ? g.out[0] : (s == 1 ? g.out[1] : g.out[2]);
  const int64_t m = s == 0 ? g.m[0] : (s == 1 ? g.m[1] : g.m[2]);
  return {w, b, o, m, row};
}

// W: the type of x and the weights (bf16, or f32 in the f32 mode); T: the output's.
template <typename W, typename T, int kMaxN>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) gemv_kernel(const W* x, GemvGroup g, int n, int64_t k) {
  pdl_trigger();
  const int lane = threadIdx.x % 32;
  const int64_t grow = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const bool active = grow < g.m_total;
  const SegRow sr = seg_row(g, active ? grow : 0);
  const int64_t row = sr.row, m = sr.m;
  const int64_t kv = k / (16 / sizeof(W));  // 16-byte vectors per row
  const uint4* wr = reinterpret_cast<const uint4*>(static_cast<const W*>(sr.w) + row * k);
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  constexpr int kUnroll = 8;
  int64_t i = lane;
  // The first batch of weights (no kernel's output) is requested before pdl_wait: under PDL it
  // streams while the kernel before (the one writing x) ends.
  uint4 wv[kUnroll];
  if (active && i + 32 * (kUnroll - 1) < kv) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + i + 32 * u);  // streamed once: evict first
  }
  pdl_wait();  // x comes from the kernel before
  if (!active) return;
  float acc[kMaxN];
#pragma unroll
  for (int t = 0; t < kMaxN; ++t) acc[t] = 0.0f;
  for (; i + 32 * (kUnroll - 1) < kv; i += 32 * kUnroll) {
    if (i != lane) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + i + 32 * u);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int t = 0; t < kMaxN; ++t) {
        if (t < n) fma_vec(wv[u], __ldg(xr + t * kv + i + 32 * u), acc[t], W{});
      }
    }
  }
  for (; i < kv; i += 32) {
    const uint4 wv = __ldcs(wr + i);
#pragma unroll
    for (int t = 0; t < kMaxN; ++t) {
      if (t < n) fma_vec(wv, __ldg(xr + t * kv + i), acc[t], W{});
    }
  }
#pragma unroll
  for (int t = 0; t < kMaxN; ++t) {
    float v = acc[t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0 && t < n) store_f(static_cast<T*>(sr.out), t * m + row, v + (sr.bias != nullptr ? sr.bias[row] : 0.0f));
  }
}

template <typename W, typename T, int kMaxN>
void launch_n(const void* x, const GemvGroup& g, int n, int64_t k, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>((g.m_total + kWarpsPerBlock - 1) / kWarpsPerBlock);
  launch_pdl(gemv_kernel<W, T, kMaxN>, dim3(blocks), dim3(kWarpsPerBlock * 32), 0, s, static_cast<const W*>(x), g, n,
             k);
}

template <typename W, typename T>
void launch_w(const void* x, GemvGroup& g, int n, int64_t k, cudaStream_t s) {
  g.m_total = 0;
  for (int i = 0; i < g.n_seg; ++i) g.m_total += g.m[i];
  if (n == 0 || g.m_total == 0) return;
  if (n == 1) {
    launch_n<W, T, 1>(x, g, n, k, s);
  } else if (n == 2) {
    launch_n<W, T, 2>(x, g, n, k, s);
  } else if (n <= 4) {
    launch_n<W, T, 4>(x, g, n, k, s);
  } else {
    launch_n<W, T, 8>(x, g, n, k, s);
  }
  KEEL_CUDA_LAUNCHED();
}

}  // namespace

void launch_gemv_group(const void* x, GemvGroup g, int n, int64_t k, ActType t, cudaStream_t s) {
  dispatch_act(t, [&](auto tag) { launch_w<__nv_bfloat16, decltype(tag)>(x, g, n, k, s); });
}

void launch_gemv_group_f32(const float* x, GemvGroup g, int n, int64_t k, cudaStream_t s) {
  launch_w<float, float>(x, g, n, k, s);
}

}  // namespace keel::backend::cuda
