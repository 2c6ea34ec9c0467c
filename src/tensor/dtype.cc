#include "tensor/dtype.h"

#include <array>

namespace keel::tensor {
namespace {

constexpr std::array<DTypeInfo, 11> kInfos = {{
    {"f32", 1, 4, false},
    {"f16", 1, 2, false},
    {"bf16", 1, 2, false},
    {"q4_0", 32, 2 + 16, true},
    {"q4_1", 32, 2 + 2 + 16, true},
    {"q8_0", 32, 2 + 32, true},
    {"q4_k", 256, 2 + 2 + 12 + 128, true},
    {"q6_k", 256, 128 + 64 + 16 + 2, true},
    {"q8_k", 256, 4 + 256 + 2 * 16, true},
    {"f8_e4m3", 1, 1, false},
    {"i32", 1, 4, false},
}};

}  // namespace

const DTypeInfo& dtype_info(DType t) { return kInfos[static_cast<size_t>(t)]; }

std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 8: return DType::kQ8_0;
    case 12: return DType::kQ4_K;
    case 14: return DType::kQ6_K;
    case 15: return DType::kQ8_K;
    case 26: return DType::kI32;
    case 30: return DType::kBF16;
    default: return std::nullopt;
  }
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "F8_E4M3") return DType::kF8E4M3;
  if (name == "I32") return DType::kI32;
  return std::nullopt;
}

}  // namespace keel::tensor
