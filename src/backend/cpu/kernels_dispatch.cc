// Picks the kernel table for the running CPU. This file is compiled for the baseline ISA: it only
// reads CPUID (through __builtin_cpu_supports) and hands out pointers into the SIMD files.
#include <cstdlib>
#if KEEL_CPU_SIMD
#include <cpuid.h>
#endif
#include <string_view>

#include "backend/cpu/kernels.h"
#include "base/log.h"

namespace keel::backend::cpu {

#if KEEL_CPU_SIMD
// Defined in kernels_avx2.cc / kernels_avx512.cc, which are compiled with their ISA's flags.
const Kernels& avx2_table();
const Kernels& avx512_table();
#endif

tensor::DType activation_format(tensor::DType weight) {
  switch (weight) {
    case tensor::DType::kQ4_0:
    case tensor::DType::kQ4_1:
    case tensor::DType::kQ8_0:
      return tensor::DType::kQ8_0;
    case tensor::DType::kQ4_K:
    case tensor::DType::kQ6_K:
      return tensor::DType::kQ8_K;
    default:
      return tensor::DType::kF32;
  }
}

QuantDotFn quant_dot(const Kernels& k, tensor::DType t) {
  switch (t) {
    case tensor::DType::kQ4_0: return k.dot_q4_0;
    case tensor::DType::kQ4_1: return k.dot_q4_1;
    case tensor::DType::kQ8_0: return k.dot_q8_0;
    case tensor::DType::kQ4_K: return k.dot_q4_k;
    case tensor::DType::kQ6_K: return k.dot_q6_k;
    default: return nullptr;
  }
}

QuantDotRowsFn quant_dot_rows(const Kernels& k, tensor::DType t) {
  switch (t) {
    case tensor::DType::kQ4_0: return k.dot_rows_q4_0;
    case tensor::DType::kQ4_1: return k.dot_rows_q4_1;
    case tensor::DType::kQ8_0: return k.dot_rows_q8_0;
    default: return nullptr;
  }
}

#if KEEL_CPU_SIMD
// F16C through CPUID leaf 1 (ECX bit 29): clang does not accept "f16c" in __builtin_cpu_supports.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0;
}
#endif

const Kernels* avx2_kernels() {
#if KEEL_CPU_SIMD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()) {
    return &avx2_table();
  }
#endif
  return nullptr;
}

const Kernels* avx512_kernels() {
#if KEEL_CPU_SIMD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && cpu_has_f16c() && __builtin_cpu_supports("fma")) {
    return &avx512_table();
  }
#endif
  return nullptr;
}

namespace {
const Kernels& pick_kernels() {
  const char* env = std::getenv("KEEL_CPU_KERNELS");
  const std::string_view want = env ? env : "";
  const Kernels* best = nullptr;
  if (want.empty() || want == "avx512") best = avx512_kernels();
  if (!best && (want.empty() || want == "avx512" || want == "avx2")) best = avx2_kernels();
  if (!best) best = &scalar_kernels();
  if (!want.empty() && want != best->name) {
    KEEL_LOG_WARN("KEEL_CPU_KERNELS={} not available on this CPU; using {}", want, best->name);
  }
  return *best;
}
}  // namespace

const Kernels& cpu_kernels() {
  static const Kernels& k = pick_kernels();
  return k;
}

}  // namespace keel::backend::cpu
