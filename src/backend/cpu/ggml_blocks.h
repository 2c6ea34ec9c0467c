// ggml-compatible quantized block layouts, half-precision conversions and scalar row dequantizers,
// as the CPU backend's kernels read them. Local to the backend until the shared definitions in
// tensor/ (blocks.h, half.h, quant.h) land; then this file goes and its users include those.
// Plain functions on caller memory: any thread.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"

namespace keel::backend::cpu {

inline constexpr int kQK = 32;    // elements per Q4_0 / Q4_1 / Q8_0 block
inline constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;           // f16 scale
  uint8_t qs[kQK / 2];  // element j in low nibble of qs[j], element j + 16 in the high nibble
};
struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 minimum
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ4K {
  uint16_t d;            // f16 super-block scale for the 6-bit sub-block scales
  uint16_t dmin;         // f16 super-block scale for the 6-bit sub-block mins
  uint8_t scales[12];    // 8 scales and 8 mins, 6 bits each, packed
  uint8_t qs[kQKK / 2];  // 4-bit quants: 64-element groups, low nibbles first then high nibbles
};
struct BlockQ6K {
  uint8_t ql[kQKK / 2];      // low 4 bits
  uint8_t qh[kQKK / 4];      // high 2 bits
  int8_t scales[kQKK / 16];  // per-16-element scales
  uint16_t d;                // f16 super-block scale
};
struct BlockQ8K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];  // sum of each 16 consecutive qs
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4K) == 144 && sizeof(BlockQ6K) == 210 && sizeof(BlockQ8K) == 292);

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, saturating to inf like IEEE conversion.
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // f16 subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Sub-block j's 6-bit scale and min from a Q4_K scales[12] array (ggml's get_scale_min_k4).
inline void q4k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// dst[0..n) = row of n elements of type t at src, as f32. Any weight dtype except kF8E4M3/kI32.
void dequantize_row(tensor::DType t, const void* src, float* dst, int64_t n);
// True for the dtypes dequantize_row and the matmul accept as weights.
bool is_supported_weight(tensor::DType t);

}  // namespace keel::backend::cpu
