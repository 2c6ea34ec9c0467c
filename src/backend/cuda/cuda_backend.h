// CudaBackend: the Backend op set on one CUDA device, one stream. bf16 mode: bf16 activations and KV
// cache, bf16 matrix weights, cuBLAS GEMMs with f32 accumulation. f32 mode: f32 activations and KV
// cache, matrix weights dequantized to f32 as the cpu backend's dtype f32 does, true fp32 GEMMs/GEMVs
// (KEEL_CUDA_F32_Q8ACT=1 adds cpu dtype auto's 8-bit activation rounding; docs/cuda_backend.md). Made by
// create_backend("cuda") when built with KEEL_CUDA; used by one thread at a time (backend.h).
#pragma once

#include <memory>

#include "backend/backend.h"
#include "base/status.h"

namespace keel::backend::cuda {

// kUnavailable when there is no usable CUDA device (no driver, no GPU, bad ordinal). act: kBF16 or kF32.
Result<std::unique_ptr<Backend>> make_cuda_backend(int device, DType act);

}  // namespace keel::backend::cuda
