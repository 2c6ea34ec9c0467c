#include "tensor/dtype.h"

#include <array>

#include "tensor/blocks.h"

namespace keel::tensor {
namespace {

constexpr std::array<DTypeInfo, 11> kInfos = {{
    {"f32", 1, 4, false},
    {"f16", 1, 2, false},
    {"bf16", 1, 2, false},
    {"q4_0", kQK4_0, sizeof(BlockQ4_0), true},
    {"q4_1", kQK4_0, sizeof(BlockQ4_1), true},
    {"q8_0", kQK8_0, sizeof(BlockQ8_0), true},
    {"q4_k", kQK_K, sizeof(BlockQ4_K), true},
    {"q6_k", kQK_K, sizeof(BlockQ6_K), true},
    {"q8_k", kQK_K, sizeof(BlockQ8_K), true},
    {"f8_e4m3", 1, 1, false},
    {"i32", 1, 4, false},
}};
static_assert(kInfos[static_cast<size_t>(DType::kQ4_K)].name == "q4_k");
static_assert(kInfos[static_cast<size_t>(DType::kQ8_K)].block_bytes == 292);
static_assert(kInfos[static_cast<size_t>(DType::kI32)].name == "i32" && kInfos.size() == 11);

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

std::string_view ggml_type_name(uint32_t ggml_type) {
  // ggml.h's enum ggml_type; ids 4, 5 (q4_2, q4_3) and 31-33 (q4_0_4_4 ...) are retired.
  constexpr std::array<std::string_view, 42> kNames = {
      "f32",        "f16",        "q4_0",       "q4_1",  "q4_2",     "q4_3",     "q5_0",     "q5_1",    "q8_0",
      "q8_1",       "q2_K",       "q3_K",       "q4_K",  "q5_K",     "q6_K",     "q8_K",     "iq2_xxs", "iq2_xs",
      "iq3_xxs",    "iq1_s",      "iq4_nl",     "iq3_s", "iq2_s",    "iq4_xs",   "i8",       "i16",     "i32",
      "i64",        "f64",        "iq1_m",      "bf16",  "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0",   "tq2_0",
      "iq4_nl_4_4", "iq4_nl_4_8", "iq4_nl_8_8", "mxfp4", "nvfp4",    "q1_0",
  };
  return ggml_type < kNames.size() ? kNames[ggml_type] : "unknown";
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
