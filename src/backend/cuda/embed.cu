// Embedding lookup: one block per token row, bf16 (or, in the f32 mode, f32) table -> f32/bf16
// activations. Under overlap scheduling a row's id may come from the previous step's sampled tokens,
// still on the device.
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/pdl.cuh"

namespace keel::backend::cuda {
namespace {

template <typename W, typename T>
__global__ void embed_kernel(const W* table, const int32_t* ids, const int32_t* from, const int32_t* sampled, int64_t d,
                             T* out) {
  pdl_trigger();
  pdl_wait();  // ids may come from the previous step's sampling kernel
  const int64_t row = blockIdx.x;
  const int32_t k = from != nullptr ? from[row] : -1;
  const int32_t id = k >= 0 ? sampled[k] : ids[row];
  const W* src = table + static_cast<int64_t>(id) * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) store_f(out, row * d + i, load_f(src, i));
}

template <typename W>
void launch_table(const W* table, const int32_t* ids, const int32_t* from, const int32_t* sampled, int64_t n,
                  int64_t d, void* out, ActType t, cudaStream_t s) {
  if (n == 0) return;
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    launch_pdl(embed_kernel<W, T>, dim3(static_cast<unsigned>(n)), dim3(256), 0, s, table, ids, from, sampled, d,
               static_cast<T*>(out));
  });
  KEEL_CUDA_LAUNCHED();
}

}  // namespace

void launch_embed(const void* table, const int32_t* ids, const int32_t* from, const int32_t* sampled, int64_t n,
                  int64_t d, void* out, ActType t, cudaStream_t s) {
  launch_table(static_cast<const __nv_bfloat16*>(table), ids, from, sampled, n, d, out, t, s);
}

void launch_embed_f32_table(const float* table, const int32_t* ids, const int32_t* from, const int32_t* sampled,
                            int64_t n, int64_t d, void* out, ActType t, cudaStream_t s) {
  launch_table(table, ids, from, sampled, n, d, out, t, s);
}

}  // namespace keel::backend::cuda
