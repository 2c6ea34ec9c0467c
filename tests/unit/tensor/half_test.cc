// fp16/bf16 conversions checked exhaustively against the CPU's F16C instructions and GCC's
// _Float16 (two independent implementations), plus round-to-nearest-even and NaN rules for bf16.
#include <gtest/gtest.h>

#include <cpuid.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "tensor/half.h"

namespace keel::tensor {
namespace {

__attribute__((target("f16c"))) uint16_t f16c_from_f32(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float f16c_to_f32(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

// cpuid leaf 1, ecx: bit 28 AVX, bit 29 F16C (clang 14's __builtin_cpu_supports lacks "f16c").
bool have_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 28)) && (c & (1u << 29));
}

TEST(Half, Fp16ToF32AllValuesMatchFloat16) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = fp16_to_f32(static_cast<uint16_t>(h));
#ifdef __FLT16_MAX__  // GCC's _Float16 (soft-float in libgcc); clang 14 lacks it on x86
    const float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
#else
    const float want = f16c_to_f32(static_cast<uint16_t>(h));
#endif
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "fp16 bits " << h;
    // Every finite/inf half survives the round trip.
    ASSERT_EQ(f32_to_fp16(got), h) << "fp16 bits " << h;
  }
}

TEST(Half, F32ToFp16MatchesF16cAndFloat16OnSampledBitPatterns) {
  ASSERT_TRUE(have_f16c()) << "this test needs an x86 CPU with F16C";
  int checked = 0;
  // A prime stride walks every exponent and many mantissa tails, including the rounding ties.
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 1021) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const uint16_t got = f32_to_fp16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(fp16_to_f32(got))) << bits;
      continue;
    }
    ASSERT_EQ(got, f16c_from_f32(f)) << "f32 bits " << bits;
#ifdef __FLT16_MAX__
    ASSERT_EQ(got, std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << "f32 bits " << bits;
#endif
    ++checked;
  }
  EXPECT_GT(checked, 4000000);
  for (uint32_t h = 0; h < 65536; ++h) {  // exact ties: halfway between adjacent halves
    const float lo = f16c_to_f32(static_cast<uint16_t>(h));
    if (!std::isfinite(lo) || (h & 0x7fff) == 0x7bff) continue;
    const float mid = std::bit_cast<float>(std::bit_cast<uint32_t>(lo) + (1u << 12));
    ASSERT_EQ(f32_to_fp16(mid), f16c_from_f32(mid)) << "tie above half " << h;
  }
}

TEST(Half, Bf16RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);                     // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // signalling NaN
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), b);
    }
  }
  // Against the definition: the result is one of the two neighbours and at least as close.
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 4099) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isfinite(f) || std::fabs(f) >= 3.38e38f) continue;
    const uint32_t lo = static_cast<uint32_t>(bits) & 0xffff0000u;
    const double err = std::fabs(static_cast<double>(bf16_to_f32(f32_to_bf16(f))) - f);
    const double err_lo = std::fabs(static_cast<double>(std::bit_cast<float>(lo)) - f);
    const double err_hi = std::fabs(static_cast<double>(std::bit_cast<float>(lo + 0x10000u)) - f);
    ASSERT_LE(err, std::min(err_lo, err_hi)) << bits;
  }
}

TEST(Half, Fp16NaNIsQuietAndSigned) {
  EXPECT_EQ(f32_to_fp16(std::bit_cast<float>(0x7f800001u)), 0x7e00);
  EXPECT_EQ(f32_to_fp16(std::bit_cast<float>(0xffc00000u)), 0xfe00);
  EXPECT_EQ(f32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
}

}  // namespace
}  // namespace keel::tensor
