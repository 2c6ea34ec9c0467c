// Element types of weights and activations, with the block layout of quantized GGUF types.
// Quantized types store rows as whole blocks: a row of n elements takes n / block_size blocks.
// Plain constexpr data: any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace keel::tensor {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ4_0,    // 32 elements: f16 scale d, 16 bytes of 4-bit q; x = d * (q - 8)
  kQ4_1,    // 32 elements: f16 d, f16 m, 16 bytes of 4-bit q; x = d * q + m
  kQ8_0,    // 32 elements: f16 d, 32 int8 q; x = d * q
  kQ4_K,    // 256 elements: super-block of 8 sub-blocks with 6-bit scales and mins
  kQ6_K,    // 256 elements: 6-bit q, 16 int8 sub-block scales, f16 d
  kQ8_K,    // 256 elements: f32 d, 256 int8 q, 16 int16 sums (activation format for K-quant dots)
  kF8E4M3,  // fp8 e4m3 with separate block scales (DeepSeek-style; later issue)
  kI32,
};

struct DTypeInfo {
  std::string_view name;
  int64_t block_size;  // elements per block (1 for plain types)
  size_t block_bytes;  // bytes per block
  bool quantized;
};

const DTypeInfo& dtype_info(DType t);

inline int64_t block_size(DType t) { return dtype_info(t).block_size; }
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }

// Bytes taken by n elements of type t; n must be a multiple of the block size.
inline size_t row_size_bytes(DType t, int64_t n) {
  const DTypeInfo& info = dtype_info(t);
  return static_cast<size_t>(n / info.block_size) * info.block_bytes;
}

// GGUF's ggml_type numbering (ggml.h); nullopt for types keel does not read.
std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type);
// ggml's name for a ggml_type id ("q5_K", "iq4_xs"), or "unknown" past the known ids; for errors.
std::string_view ggml_type_name(uint32_t ggml_type);
// safetensors dtype strings ("F32", "F16", "BF16", "F8_E4M3", "I32").
std::optional<DType> dtype_from_safetensors(std::string_view name);

}  // namespace keel::tensor
