// IEEE fp16 and bfloat16 <-> f32 conversions, scalar and exact: f32 -> 16-bit rounds to nearest,
// ties to even (as F16C's _cvtss_sh and numpy do); NaNs stay NaN (quieted). Used by the block
// dequantizers (tensor/dequantize.cc), the safetensors/GGUF f16/bf16 paths and the CPU backend.
// Pure functions: any thread.
#pragma once

#include <bit>
#include <cstdint>

namespace keel::tensor {

inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in f32.
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t f32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;   // NaN -> quiet NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (incl. inf) rounds to inf
  if (ax <= 0x33000000u) return sign;            // <= 2^-25 rounds to zero (the tie goes to even 0)
  const int e = static_cast<int>(ax >> 23) - 127;
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;  // 24 bits with the implicit one
  // Subnormal halves keep fewer mantissa bits; normal halves keep the top 11 of 24.
  const int shift = e < -14 ? 13 + (-14 - e) : 13;
  uint32_t r = mant >> shift;
  if (e >= -14) r = (static_cast<uint32_t>(e + 15) << 10) | (r & 0x3ffu);
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  // A carry out of the mantissa bumps the exponent, which is exactly the rounded result.
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace keel::tensor
