// Element-wise ops: SiLU-gating, add, bias add, KV-pool row writes and row gathers. Memory bound;
// one thread per element (per 4 bytes for row copies; per 16-byte vector for SiLU-gating when the
// operands allow, unless KEEL_CUDA_ROW_KERNELS=0).
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

namespace keel::backend::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void silu_mul_kernel(const T* gate, const T* up, T* out, int64_t n) {
  pdl_trigger();
  pdl_wait();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = load_f(gate, i);
  store_f(out, i, g / (1.0f + expf(-g)) * load_f(up, i));
}

// The same over 16-byte vectors (8 bf16 or 4 f32 elements per thread): n_vec vectors, every pointer
// 16-byte aligned. Each element is computed as silu_mul_kernel computes it (same results); the wide
// loads and stores move the bytes at bandwidth where one element per thread did not (prefill sizes).
template <typename T>
__global__ void silu_mul_vec_kernel(const Vec16<T>* gate, const Vec16<T>* up, Vec16<T>* out, int64_t n_vec) {
  pdl_trigger();
  pdl_wait();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_vec) return;
  const Vec16<T> g = gate[i], u = up[i];
  Vec16<T> o;
#pragma unroll
  for (int e = 0; e < Vec16<T>::kN; ++e) {
    const float gf = load_f(g.v, e);
    store_f(o.v, e, gf / (1.0f + expf(-gf)) * load_f(u.v, e));
  }
  out[i] = o;
}

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store_f(out, i, load_f(a, i) + load_f(b, i));
}

template <typename T>
__global__ void add_bias_kernel(T* out, const float* bias, int64_t n, int64_t m) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * m) store_f(out, i, load_f(out, i) + bias[i % m]);
}

template <typename T>
__global__ void write_kv_kernel(const T* k, const T* v, const int32_t* slots, int64_t n, int64_t w, T* kc, T* vc) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * w) return;
  const int64_t dst = static_cast<int64_t>(slots[i / w]) * w + i % w;
  kc[dst] = k[i];
  vc[dst] = v[i];
}

// Rows of `row_units` units of U (4 or 1 bytes).
template <typename U>
__global__ void gather_rows_kernel(const U* x, const int32_t* rows, int64_t row_units, U* out) {
  pdl_trigger();
  pdl_wait();
  const int64_t r = blockIdx.y;
  const U* src = x + static_cast<int64_t>(rows[r]) * row_units;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < row_units;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[r * row_units + i] = src[i];
  }
}

}  // namespace

void launch_silu_mul(const void* gate, const void* up, void* out, int64_t n, ActType t, cudaStream_t s) {
  if (n == 0) return;
  static const bool vec_on = env_on("KEEL_CUDA_ROW_KERNELS");
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int64_t e = Vec16<T>::kN;
    if (vec_on && n % e == 0 && aligned16(gate) && aligned16(up) && aligned16(out)) {
      launch_pdl(silu_mul_vec_kernel<T>, dim3(grid_1d(n / e, kThreads)), dim3(kThreads), 0, s,
                 static_cast<const Vec16<T>*>(gate), static_cast<const Vec16<T>*>(up), static_cast<Vec16<T>*>(out),
                 n / e);
      return;
    }
    launch_pdl(silu_mul_kernel<T>, dim3(grid_1d(n, kThreads)), dim3(kThreads), 0, s, static_cast<const T*>(gate),
               static_cast<const T*>(up), static_cast<T*>(out), n);
  });
  KEEL_CUDA_LAUNCHED();
}

void launch_add(const void* a, const void* b, void* out, int64_t n, ActType t, cudaStream_t s) {
  if (n == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<grid_1d(n, kThreads), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                              static_cast<T*>(out), n);
  });
  KEEL_CUDA_LAUNCHED();
}

void launch_add_bias(void* out, const float* bias, int64_t n, int64_t m, ActType t, cudaStream_t s) {
  if (n * m == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    add_bias_kernel<T><<<grid_1d(n * m, kThreads), kThreads, 0, s>>>(static_cast<T*>(out), bias, n, m);
  });
  KEEL_CUDA_LAUNCHED();
}

void launch_write_kv(const void* k, const void* v, const int32_t* slots, int64_t n, int64_t w, void* k_cache,
                     void* v_cache, ActType t, cudaStream_t s) {
  if (n * w == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    write_kv_kernel<T><<<grid_1d(n * w, kThreads), kThreads, 0, s>>>(
        static_cast<const T*>(k), static_cast<const T*>(v), slots, n, w, static_cast<T*>(k_cache),
        static_cast<T*>(v_cache));
  });
  KEEL_CUDA_LAUNCHED();
}

void launch_gather_rows(const void* x, const int32_t* rows, int64_t r, int64_t row_bytes, void* out, cudaStream_t s) {
  if (r == 0 || row_bytes == 0) return;
  const bool words = row_bytes % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 4 == 0;
  const int64_t units = words ? row_bytes / 4 : row_bytes;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(grid_1d(units, kThreads), 64)), static_cast<unsigned>(r));
  if (words) {
    launch_pdl(gather_rows_kernel<uint32_t>, grid, dim3(kThreads), 0, s, static_cast<const uint32_t*>(x), rows, units,
               static_cast<uint32_t*>(out));
  } else {
    launch_pdl(gather_rows_kernel<uint8_t>, grid, dim3(kThreads), 0, s, static_cast<const uint8_t*>(x), rows, units,
               static_cast<uint8_t*>(out));
  }
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
