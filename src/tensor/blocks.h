// Byte layouts of GGUF's quantized blocks, identical to ggml's block_q4_0 ... block_q8_K so files
// map straight onto them and the CPU backend's integer dot products (q4/q8 x q8_0, k-quants x q8_K)
// read the same bytes. f16 fields are raw IEEE half bits (tensor/half.h). Plain data: any thread.
#pragma once

#include <cstdint>

namespace keel::tensor {

inline constexpr int kQK4_0 = 32;  // elements per Q4_0 / Q4_1 / Q8_0 block
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;        // elements per K-quant super-block
inline constexpr int kKScaleBytes = 12;  // Q4_K: 8 packed 6-bit scales + 8 packed 6-bit mins

// x = d * (q - 8); qs[j] holds element j (low nibble) and j + 16 (high nibble).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};

// x = d * q + m; nibble order as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_0 / 2];
};

// x = d * q.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};

// 8 sub-blocks of 32: x = d * sc[i] * q - dmin * m[i], with 6-bit sc/m packed in `scales`;
// qs holds 4 groups of 64 elements: 32 bytes, low nibbles first sub-block, high nibbles second.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16: x = d * scales[i] * (q - 32), q = 4 low bits (ql) | 2 high bits (qh) << 4.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// Activation format for K-quant dot products: x = d * q; bsums[i] = sum of qs[16 i .. 16 i + 15].
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(alignof(BlockQ4_0) == 2 && alignof(BlockQ8_0) == 2 && alignof(BlockQ6_K) == 2);

}  // namespace keel::tensor
