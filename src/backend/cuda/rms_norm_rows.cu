// RMSNorm (optionally fused with the residual add) for many rows at bandwidth: prefill-sized batches.
// rms_norm.cu's kernels load and store 2 or 4 bytes per instruction; at 16k rows of 4,096 that ran at
// about 1.2 TB/s, a third of the copy rate. Here each thread moves 16-byte vectors: it loads NV vectors
// of residual (and of x) into registers, adds them (rounding to the activation type, as the stored
// residual later reads back), reduces the sum of squares over the block, then writes the residual and
// the normed row with 16-byte stores. The weight row (f32) is loaded before the reduction. One block
// per row; the sum runs in a different order than rms_norm.cu's (results agree to rounding).
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rms_norm_rows.h"

namespace keel::backend::cuda {
namespace {

constexpr int kMaxThreads = 512;

// v rounded to T and back (what a later load of the stored T reads).
template <typename T>
__device__ __forceinline__ float round_to(float v) {
  T t;
  store_f(&t, 0, v);
  return load_f(&t, 0);
}

__device__ float rows_block_sum(float v) {
  __shared__ float warp_sums[kMaxThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int n_warps = static_cast<int>(blockDim.x + 31) / 32;
  float total = 0.0f;
  for (int w = 0; w < n_warps; ++w) total += warp_sums[w];
  return total;
}

// residual, x, out: [n, d] with d % E == 0 (E = elements per 16 bytes), 16-byte aligned; w: [d] f32,
// 16-byte aligned. x == nullptr: plain RMSNorm of residual (not written). out may alias residual.
template <typename T, int NV>
__global__ void __launch_bounds__(kMaxThreads) rms_norm_rows_kernel(T* residual, const T* x, const float* w,
                                                                     float eps, int64_t d, T* out) {
  using V = Vec16<T>;
  constexpr int E = V::kN;
  pdl_trigger();
  pdl_wait();
  const int64_t nvec = d / E;
  auto* rrow = reinterpret_cast<V*>(residual + static_cast<int64_t>(blockIdx.x) * d);
  const auto* xrow = x != nullptr ? reinterpret_cast<const V*>(x + static_cast<int64_t>(blockIdx.x) * d) : nullptr;
  auto* orow = reinterpret_cast<V*>(out + static_cast<int64_t>(blockIdx.x) * d);
  V rv[NV] = {}, xv[NV] = {};
#pragma unroll
  for (int c = 0; c < NV; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
    if (i < nvec) {
      rv[c] = rrow[i];
      if (xrow != nullptr) xv[c] = xrow[i];
    }
  }
  float r[NV][E];
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < NV; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      float v = load_f(rv[c].v, e);
      if (xrow != nullptr) v = round_to<T>(v + load_f(xv[c].v, e));  // as later reads will see it
      r[c][e] = i < nvec ? v : 0.0f;
      ss += r[c][e] * r[c][e];
    }
  }
  // The weights before the reduction's barrier, so their latency overlaps it.
  float wv[NV][E];
#pragma unroll
  for (int c = 0; c < NV; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
#pragma unroll
    for (int q = 0; q < E / 4; ++q) {
      const float4 f = i < nvec ? reinterpret_cast<const float4*>(w)[i * (E / 4) + q] : float4{};
      wv[c][4 * q] = f.x;
      wv[c][4 * q + 1] = f.y;
      wv[c][4 * q + 2] = f.z;
      wv[c][4 * q + 3] = f.w;
    }
  }
  const float inv = rsqrtf(rows_block_sum(ss) / static_cast<float>(d) + eps);
#pragma unroll
  for (int c = 0; c < NV; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
    if (i >= nvec) continue;
    V o;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      store_f(o.v, e, r[c][e] * inv * wv[c][e]);
      if (xrow != nullptr) store_f(rv[c].v, e, r[c][e]);
    }
    if (xrow != nullptr) rrow[i] = rv[c];
    orow[i] = o;
  }
}

// The fewer vectors per thread (2 or 4) that cover a row's vectors with at most kMaxThreads threads;
// 0 when neither does (8 per thread spills registers in bf16).
int vectors_per_thread(int64_t nvec) {
  for (int nv : {2, 4}) {
    if (nvec <= static_cast<int64_t>(nv) * kMaxThreads) return nv;
  }
  return 0;
}

}  // namespace

bool rms_norm_rows_fits(const void* residual, const void* x, const float* w, int64_t d, const void* out, ActType t) {
  const int64_t e = t == ActType::kF32 ? 4 : 8;
  return d % e == 0 && d / e >= kRowsMinVectors && vectors_per_thread(d / e) > 0 && aligned16(residual) &&
         (x == nullptr || aligned16(x)) && aligned16(w) && aligned16(out);
}

void launch_rms_norm_rows(void* residual, const void* x, const float* w, float eps, int64_t n, int64_t d, void* out,
                          ActType t, cudaStream_t s) {
  if (n == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    const int64_t nvec = d / Vec16<T>::kN;
    const int nv = vectors_per_thread(nvec);
    const int threads = static_cast<int>((nvec + nv - 1) / nv + 31) / 32 * 32;
    const auto kernel = nv == 2 ? rms_norm_rows_kernel<T, 2> : rms_norm_rows_kernel<T, 4>;
    launch_pdl(kernel, dim3(static_cast<unsigned>(n)), dim3(threads), 0, s, static_cast<T*>(residual),
               static_cast<const T*>(x), w, eps, d, static_cast<T*>(out));
  });
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
