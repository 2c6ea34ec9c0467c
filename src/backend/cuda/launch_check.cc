#include "backend/cuda/launch_check.h"

#include <cstdlib>
#include <cstring>
#include <utility>

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

bool pdl_launch(PdlKind kind) {
  enum class Mode { kOff, kAll, kGemv, kNoAttn };
  static const Mode mode = [] {
    const char* v = std::getenv("KEEL_CUDA_PDL");
    if (v == nullptr || std::strcmp(v, "gemv") == 0) return Mode::kGemv;
    if (std::strcmp(v, "1") == 0) return Mode::kAll;
    if (std::strcmp(v, "noattn") == 0) return Mode::kNoAttn;
    return Mode::kOff;
  }();
  thread_local PdlKind last = PdlKind::kOther;  // kernels are launched (and graphs captured) per thread
  const PdlKind prev = std::exchange(last, kind);
  switch (mode) {
    case Mode::kAll: return true;
    case Mode::kGemv: return kind == PdlKind::kGemv && prev == PdlKind::kGemv;
    case Mode::kNoAttn: return prev != PdlKind::kAttention;
    default: return false;
  }
}

}  // namespace keel::backend::cuda
