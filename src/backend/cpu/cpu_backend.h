// CpuBackend: the Backend op set on host memory with f32 activations, threaded over a ThreadPool
// and using the best kernel table the CPU supports (kernels.h). Made by create_backend("cpu").
// Used by one thread at a time (the model thread), as backend.h requires.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace keel::backend::cpu {

// n_threads counts the calling thread; 0 = ThreadPool::default_threads().
std::unique_ptr<Backend> make_cpu_backend(int n_threads);

}  // namespace keel::backend::cpu
