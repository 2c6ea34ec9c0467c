#include "backend/cuda/launch_check.h"

#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_check.h"

namespace keel::backend::cuda {

void cuda_check_launch(const char* file, int line) {
  const cudaError_t err = cudaGetLastError();
  KEEL_CHECK(err == cudaSuccess, "kernel launch at {}:{}: {}", file, line, cudaGetErrorString(err));
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

bool pdl_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KEEL_CUDA_PDL");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

}  // namespace keel::backend::cuda
