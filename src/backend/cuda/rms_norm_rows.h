// RMSNorm with the residual add for prefill-sized batches at bandwidth (rms_norm_rows.cu): 16-byte
// loads and stores, the row in registers. CudaBackend uses it for rms_norm / add_rms_norm of more than
// kGemvMaxTokens rows when it fits (rms_norm_rows_fits), unless KEEL_CUDA_ROW_KERNELS=0; smaller
// batches and odd shapes keep rms_norm.cu's kernels. Same contract as launch_rms_norm (kernels.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels.cuh"

namespace keel::backend::cuda {

// Rows shorter than this many 16-byte vectors keep rms_norm.cu's kernels (too few threads per block).
inline constexpr int64_t kRowsMinVectors = 64;

// Whether launch_rms_norm_rows takes rows of d elements of t at these addresses: d a whole number of
// 16-byte vectors, at least kRowsMinVectors and at most 2,048 of them (bf16 rows of
// 512-16,384, f32 rows of 256-8,192), every pointer 16-byte aligned.
bool rms_norm_rows_fits(const void* residual, const void* x, const float* w, int64_t d, const void* out, ActType t);
// residual [n, d] += x (when x != nullptr); out = residual / rms(residual) * w (f32 [d]).
void launch_rms_norm_rows(void* residual, const void* x, const float* w, float eps, int64_t n, int64_t d, void* out,
                          ActType t, cudaStream_t s);

}  // namespace keel::backend::cuda
