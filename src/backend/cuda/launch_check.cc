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

namespace {
thread_local PdlKind g_last_pdl = PdlKind::kOther;  // kernels are launched (and graphs captured) per thread
}  // namespace

PdlKind pdl_previous() { return g_last_pdl; }

bool pdl_allowed(PdlKind kind, PdlKind prev) {
  enum class Mode { kOff, kAll, kGemv, kNoAttn, kGemvO, kGemvAO };
  static const Mode mode = [] {
    const char* v = std::getenv("KEEL_CUDA_PDL");
    if (v == nullptr || std::strcmp(v, "gemv") == 0) return Mode::kGemv;
    if (std::strcmp(v, "1") == 0) return Mode::kAll;
    if (std::strcmp(v, "noattn") == 0) return Mode::kNoAttn;
    if (std::strcmp(v, "gemv_o") == 0) return Mode::kGemvO;
    if (std::strcmp(v, "gemv_ao") == 0) return Mode::kGemvAO;
    return Mode::kOff;
  }();
  const bool gemv_after_gemv = kind == PdlKind::kGemv && prev == PdlKind::kGemv;
  switch (mode) {
    case Mode::kAll: return true;
    case Mode::kGemv: return gemv_after_gemv;
    case Mode::kNoAttn: return prev != PdlKind::kAttention;
    case Mode::kGemvO: return gemv_after_gemv || (kind == PdlKind::kGemv && prev == PdlKind::kAttention);
    case Mode::kGemvAO:
      return gemv_after_gemv || (kind == PdlKind::kGemv && prev == PdlKind::kAttention) ||
             (kind == PdlKind::kAttention && prev == PdlKind::kGemv);
    default: return false;
  }
}

bool pdl_launch(PdlKind kind) { return pdl_allowed(kind, std::exchange(g_last_pdl, kind)); }

}  // namespace keel::backend::cuda
