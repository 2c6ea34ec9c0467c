// RMSNorm, optionally fused with the residual add: one block per row; the sum of squares is reduced
// in f32 over the (rounded) residual that is stored, so out is the norm of what residual holds.
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

namespace keel::backend::cuda {
namespace {

__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) / 32;
  float total = 0.0f;
  for (int w = 0; w < n_warps; ++w) total += warp_sums[w];
  return total;
}

template <typename T>
__global__ void rms_norm_kernel(T* residual, const T* x, const float* w, float eps, int64_t d, T* out) {
  pdl_trigger();
  pdl_wait();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * d;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float r = load_f(residual, base + i);
    if (x != nullptr) {
      r += load_f(x, base + i);
      store_f(residual, base + i, r);
      r = load_f(residual, base + i);  // the rounded value, as later reads will see it
    }
    ss += r * r;
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(d) + eps);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) store_f(out, base + i, load_f(residual, base + i) * inv * w[i]);
}

// The same for rows of at most kRegsPerThread * blockDim.x elements, the row held in registers: all
// loads of a thread are issued before any store (the loop above makes each load wait for the previous
// store, since they may alias), so a decode-sized row costs about one memory latency instead of
// d / blockDim.x of them. Same sums in the same order: results equal the loop's.
constexpr int kRegsPerThread = 16;

__device__ __forceinline__ float round_as(float v, const float*) { return v; }
__device__ __forceinline__ float round_as(float v, const __nv_bfloat16*) {
  return __bfloat162float(__float2bfloat16_rn(v));
}

template <typename T>
__global__ void rms_norm_regs_kernel(T* residual, const T* x, const float* w, float eps, int64_t d, T* out) {
  pdl_trigger();
  pdl_wait();
  const int64_t base = static_cast<int64_t>(blockIdx.x) * d;
  float r[kRegsPerThread], xv[kRegsPerThread], wv[kRegsPerThread];
#pragma unroll
  for (int c = 0; c < kRegsPerThread; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
    r[c] = i < d ? load_f(residual, base + i) : 0.0f;
    xv[c] = i < d && x != nullptr ? load_f(x, base + i) : 0.0f;
    wv[c] = i < d ? w[i] : 0.0f;
  }
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < kRegsPerThread; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
    if (i >= d) break;
    if (x != nullptr) {
      r[c] = round_as(r[c] + xv[c], residual);  // the rounded value, as later reads will see it
      store_f(residual, base + i, r[c]);
    }
    ss += r[c] * r[c];
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(d) + eps);
#pragma unroll
  for (int c = 0; c < kRegsPerThread; ++c) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(c) * blockDim.x;
    if (i < d) store_f(out, base + i, r[c] * inv * wv[c]);
  }
}

}  // namespace

void launch_rms_norm(void* residual, const void* x, const float* w, float eps, int64_t n, int64_t d, void* out,
                     ActType t, cudaStream_t s) {
  if (n == 0) return;
  const int threads = d >= 2048 ? 512 : d >= 512 ? 256 : d >= 128 ? 128 : 32;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    const auto kernel = d <= static_cast<int64_t>(kRegsPerThread) * threads ? rms_norm_regs_kernel<T> : rms_norm_kernel<T>;
    launch_pdl(kernel, dim3(static_cast<unsigned>(n)), dim3(threads), 0, s, static_cast<T*>(residual),
               static_cast<const T*>(x), w, eps, d, static_cast<T*>(out));
  });
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
