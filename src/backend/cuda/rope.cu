// RoPE in place: one thread per (token, head, rotated pair). Angles in f32 with full-precision
// sincosf, as the CPU reference computes them.
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(T* x, const int32_t* positions, const float* inv_freq, RopeLaunch p) {
  const int half = p.rot_dims / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.n * p.n_heads * half) return;
  const int i = static_cast<int>(idx % half);
  const int64_t row = idx / half;  // token * n_heads + head
  const int64_t token = row / p.n_heads;
  float sn, cs;
  sincosf(static_cast<float>(positions[token]) * inv_freq[i], &sn, &cs);
  cs *= p.attn_factor;
  sn *= p.attn_factor;
  const int64_t a = row * p.head_dim + (p.neox ? i : 2 * i);
  const int64_t b = a + (p.neox ? half : 1);
  const float x0 = load_f(x, a), x1 = load_f(x, b);
  store_f(x, a, x0 * cs - x1 * sn);
  store_f(x, b, x0 * sn + x1 * cs);
}

}  // namespace

void launch_rope(void* x, const int32_t* positions, const float* inv_freq, const RopeLaunch& p, ActType t,
                 cudaStream_t s) {
  const int64_t n_threads = p.n * p.n_heads * (p.rot_dims / 2);
  if (n_threads == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    rope_kernel<T><<<grid_1d(n_threads, 256), 256, 0, s>>>(static_cast<T*>(x), positions, inv_freq, p);
  });
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
