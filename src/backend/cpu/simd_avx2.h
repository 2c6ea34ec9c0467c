// AVX2/FMA/F16C building blocks shared by the AVX2 and AVX-512 tables. Included only by files
// compiled with at least -mavx2 -mfma -mf16c (kernels_avx2.cc, kernels_avx512.cc); everything is
// internal to the including file, so each gets a copy built for its own flags.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "backend/cpu/kernels.h"

namespace keel::backend::cpu::avx2 {
namespace {  // NOLINT(google-build-namespaces): one copy per ISA-specific translation unit

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i load_i8(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// 16 bytes of packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high (16..31).
inline __m256i nibbles32(const uint8_t* p) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i b = _mm256_insertf128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
  return _mm256_and_si256(b, _mm256_set1_epi8(0xF));
}

// Sum of u[i] * s[i] over 32 bytes (u unsigned, at most 128 for int16 safety), as 8 f32 partial sums.
inline __m256 mul_sum_u8_s8(__m256i u, __m256i s) {
  const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  return _mm256_cvtepi32_ps(p);
}

// Signed x signed through maddubs: |a| * (b with a's sign).
inline __m256 mul_sum_s8_s8(__m256i a, __m256i b) {
  return mul_sum_u8_s8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

// exp(x) for x in f32 range (clamped to +-87.3), Cephes polynomial, ~2 ulp.
inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// Rounds 32 floats (already scaled) to int8 in order; returns their sum (exact: small integers).
inline float round_store_32(__m256 v0, __m256 v1, __m256 v2, __m256 v3, int8_t* q) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  v0 = _mm256_round_ps(v0, kRound);
  v1 = _mm256_round_ps(v1, kRound);
  v2 = _mm256_round_ps(v2, kRound);
  v3 = _mm256_round_ps(v3, kRound);
  const __m256i i01 = _mm256_packs_epi32(_mm256_cvtps_epi32(v0), _mm256_cvtps_epi32(v1));
  const __m256i i23 = _mm256_packs_epi32(_mm256_cvtps_epi32(v2), _mm256_cvtps_epi32(v3));
  const __m256i i8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(i01, i23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), i8);
  return hsum(_mm256_add_ps(_mm256_add_ps(v0, v1), _mm256_add_ps(v2, v3)));
}

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

}  // namespace
}  // namespace keel::backend::cpu::avx2
