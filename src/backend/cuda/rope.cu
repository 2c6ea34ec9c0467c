// RoPE in place: one thread per (token, head, rotated pair). Angles in f32 with full-precision
// sincosf, as the CPU reference computes them. rope_write_kv_kernel: RoPE of q and k and the K/V pool
// write in one launch (the same arithmetic, so its results equal rope + rope + write_kv bitwise).
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

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

// One thread per (token, head of q then of k, pair j of head_dim / 2): j < rot_dims / 2 rotates pair j
// in place (as rope_kernel), the others are the pass-through pairs past rot_dims; a k thread also
// writes its two (roped) k elements and the same two v elements into the pool row of slots[token].
template <typename T>
__global__ void rope_write_kv_kernel(T* q, T* k, const T* v, const int32_t* positions, const int32_t* slots,
                                     const float* inv_freq, RopeLaunch p, int64_t n_kv, T* kc, T* vc) {
  pdl_trigger();
  pdl_wait();
  const int64_t pairs = p.head_dim / 2, heads = p.n_heads + n_kv;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.n * heads * pairs) return;
  const int j = static_cast<int>(idx % pairs);
  const int64_t head = idx / pairs % heads, token = idx / pairs / heads;
  const bool is_k = head >= p.n_heads;
  const int64_t row = is_k ? token * n_kv + (head - p.n_heads) : token * p.n_heads + head;
  T* x = (is_k ? k : q) + row * p.head_dim;
  const int half = p.rot_dims / 2;
  int64_t a, b;
  if (j < half) {
    float sn, cs;
    sincosf(static_cast<float>(positions[token]) * inv_freq[j], &sn, &cs);
    cs *= p.attn_factor;
    sn *= p.attn_factor;
    a = p.neox ? j : 2 * j;
    b = a + (p.neox ? half : 1);
    const float x0 = load_f(x, a), x1 = load_f(x, b);
    store_f(x, a, x0 * cs - x1 * sn);
    store_f(x, b, x0 * sn + x1 * cs);
  } else {
    a = p.rot_dims + 2 * static_cast<int64_t>(j - half);
    b = a + 1;
  }
  if (!is_k) return;
  const int64_t dst = static_cast<int64_t>(slots[token]) * n_kv * p.head_dim + (row % n_kv) * p.head_dim;
  const T* vr = v + row * p.head_dim;
  kc[dst + a] = x[a];  // the rounded values this thread just stored
  kc[dst + b] = x[b];
  vc[dst + a] = vr[a];
  vc[dst + b] = vr[b];
}

}  // namespace

void launch_rope_write_kv(void* q, void* k, const void* v, const int32_t* positions, const int32_t* slots,
                          const float* inv_freq, const RopeLaunch& p, int64_t n_kv, void* k_cache, void* v_cache,
                          ActType t, cudaStream_t s) {
  const int64_t n_threads = p.n * (p.n_heads + n_kv) * (p.head_dim / 2);
  if (n_threads == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    launch_pdl(rope_write_kv_kernel<T>, dim3(grid_1d(n_threads, 256)), dim3(256), 0, s, static_cast<T*>(q),
               static_cast<T*>(k), static_cast<const T*>(v), positions, slots, inv_freq, p, n_kv,
               static_cast<T*>(k_cache), static_cast<T*>(v_cache));
  });
  KEEL_CUDA_LAUNCHED();
}

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
