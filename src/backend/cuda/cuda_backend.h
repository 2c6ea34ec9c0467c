// CudaBackend: the Backend op set on one CUDA device, bf16 activations (f32 tensors work too, except
// as matmul inputs), bf16 matrix weights with cuBLAS GEMMs (f32 accumulate), one stream. Made by
// create_backend("cuda") when built with KEEL_CUDA; used by one thread at a time (backend.h).
#pragma once

#include <memory>

#include "backend/backend.h"
#include "base/status.h"

namespace keel::backend::cuda {

// kUnavailable when there is no usable CUDA device (no driver, no GPU, bad ordinal).
Result<std::unique_ptr<Backend>> make_cuda_backend(int device);

}  // namespace keel::backend::cuda
