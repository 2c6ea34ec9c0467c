// CpuBackend: the Backend op set on host memory with f32 activations, threaded over a ThreadPool
// and using the best kernel table the CPU supports (kernels.h). Made by create_backend("cpu").
// Used by one thread at a time (the model thread), as backend.h requires.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace keel::backend::cpu {

// n_threads counts the calling thread; 0 = ThreadPool::default_threads(). dequantize_weights (dtype
// f32): quantized matrices are dequantized to f32 at upload and dotted with f32 activations, instead
// of the default integer dots with activations rounded to 8 bits (Q8A / Q8_K, kernels.h) -- the
// arithmetic the cuda backend's f32 mode uses, at 4-8x the weight memory.
std::unique_ptr<Backend> make_cpu_backend(int n_threads, bool dequantize_weights = false);

}  // namespace keel::backend::cpu
