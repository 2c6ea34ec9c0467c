#include "backend/cuda/launch_check.h"

#include "backend/cuda/cuda_check.h"

namespace keel::backend::cuda {

void cuda_check_launch(const char* file, int line) {
  const cudaError_t err = cudaGetLastError();
  KEEL_CHECK(err == cudaSuccess, "kernel launch at {}:{}: {}", file, line, cudaGetErrorString(err));
}

}  // namespace keel::backend::cuda
