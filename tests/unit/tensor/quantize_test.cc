// Properties of the activation quantizers that the CPU backend's integer dot products rely on,
// beyond the bit-exact golden comparison (dequantize_golden_test.cc): bsums, error bounds, the
// -127 extreme of Q8_K, and round trips through dequantize_row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/blocks.h"
#include "tensor/dequantize.h"
#include "tensor/half.h"
#include "tensor/quantize.h"

namespace keel::tensor {
namespace {

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  return x;
}

TEST(Quantize, Q8_KBsumsExtremeAndRoundTrip) {
  const int64_t n = 4 * kQK_K;
  const std::vector<float> x = random_row(n, 1);
  std::vector<BlockQ8_K> q(static_cast<size_t>(n / kQK_K));
  quantize_row_q8_k(x.data(), q.data(), n);
  std::vector<float> back(static_cast<size_t>(n));
  dequantize_row(DType::kQ8_K, q.data(), back.data(), n);
  for (size_t b = 0; b < q.size(); ++b) {
    bool has_extreme = false;
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += q[b].qs[g * 16 + l];
      EXPECT_EQ(q[b].bsums[g], sum);
    }
    for (int j = 0; j < kQK_K; ++j) {
      has_extreme |= q[b].qs[j] == -127;
      const size_t i = b * kQK_K + static_cast<size_t>(j);
      EXPECT_LE(std::fabs(back[i] - x[i]), std::fabs(q[b].d) * 0.5f + 1e-6f) << i;
    }
    EXPECT_TRUE(has_extreme) << "block " << b;
  }
}

TEST(Quantize, Q8_0ErrorWithinHalfAStep) {
  const int64_t n = 8 * kQK8_0;
  const std::vector<float> x = random_row(n, 2);
  std::vector<BlockQ8_0> q(static_cast<size_t>(n / kQK8_0));
  quantize_row_q8_0(x.data(), q.data(), n);
  std::vector<float> back(static_cast<size_t>(n));
  dequantize_row(DType::kQ8_0, q.data(), back.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = fp16_to_f32(q[i / kQK8_0].d);
    // d is rounded to f16 after the integers were chosen with the exact scale: allow that drift.
    EXPECT_LE(std::fabs(back[i] - x[i]), d * 0.5f + 127.0f * d * 0x1p-11f) << i;
  }
}

TEST(Quantize, ZeroBlocksAreAllZero) {
  std::vector<float> x(kQK_K, 0.0f);
  BlockQ8_K k;
  std::memset(&k, 0x5a, sizeof k);
  quantize_row_q8_k(x.data(), &k, kQK_K);
  EXPECT_EQ(k.d, 0.0f);
  for (int g = 0; g < kQK_K / 16; ++g) EXPECT_EQ(k.bsums[g], 0);
  BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, kQK8_0);
  EXPECT_EQ(b.d, 0);
  for (int j = 0; j < kQK8_0; ++j) EXPECT_EQ(b.qs[j], 0);
}

TEST(Dequantize, RowSizesAndInvariants) {
  EXPECT_EQ(row_size_bytes(DType::kQ4_K, 512), 2 * sizeof(BlockQ4_K));
  EXPECT_EQ(row_size_bytes(DType::kQ6_K, 256), sizeof(BlockQ6_K));
  EXPECT_TRUE(can_dequantize(DType::kQ6_K));
  EXPECT_FALSE(can_dequantize(DType::kI32));
  float out[32];
  const uint8_t zeros[64] = {};
  EXPECT_DEATH(dequantize_row(DType::kQ4_0, zeros, out, 31), "whole blocks");
  EXPECT_DEATH(dequantize_row(DType::kI32, zeros, out, 4), "no float values");
}

}  // namespace
}  // namespace keel::tensor
