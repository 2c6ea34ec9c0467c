// AVX-512 (F, BW, VL, VNNI) kernel table: the 32-element-block integer dots take two blocks per
// 512-bit register and use vpdpbusd (u8 x s8 -> s32, four products per lane) in place of AVX2's
// maddubs + madd pair; the f32 dot is 16 wide. Everything else is the AVX2 code (simd_avx2.h)
// compiled into this file. Compiled with -mavx512{f,bw,vl,vnni}; reached only after a CPUID check.
#include <immintrin.h>

#include "backend/cpu/kernels.h"

// GCC 12 flags the deliberately undefined upper halves inside its own AVX-512 cast and reduce
// intrinsics (GCC PR 105593, fixed in 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "backend/cpu/simd_avx2.h"

namespace keel::backend::cpu {

const Kernels& avx2_table();

namespace {

// Two 32-byte blocks side by side in one register.
inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// Scale d0 for lanes 0..7 (block 0), d1 for lanes 8..15 (block 1).
inline __m512 scales2(float d0, float d1) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(d0)),
                                             _mm256_castps_pd(_mm256_set1_ps(d1)), 1));
}
inline __m512 dot_u8_s8(__m512i u, __m512i s) {
  return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s));
}
inline __m512i load2_i8(const int8_t* a, const int8_t* b) { return join(avx2::load_i8(a), avx2::load_i8(b)); }

float dot_f32(const float* a, const float* b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

float dot_q4_0(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_0*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  const int64_t nb = n / kQK;
  __m512 acc = _mm512_setzero_ps();
  float offs = 0.0f;
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const float d0 = _cvtsh_ss(bw[b].d), d1 = _cvtsh_ss(bw[b + 1].d);
    const __m512 p = dot_u8_s8(join(avx2::nibbles32(bw[b].qs), avx2::nibbles32(bw[b + 1].qs)),
                               load2_i8(bx[b].qs, bx[b + 1].qs));
    acc = _mm512_fmadd_ps(scales2(d0 * bx[b].d, d1 * bx[b + 1].d), p, acc);
    offs -= 8.0f * (d0 * bx[b].s + d1 * bx[b + 1].s);
  }
  float s = _mm512_reduce_add_ps(acc) + offs;
  if (b < nb) s += avx2_table().dot_q4_0(bw + b, bx + b, kQK);
  return s;
}

float dot_q4_1(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_1*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  const int64_t nb = n / kQK;
  __m512 acc = _mm512_setzero_ps();
  float mins = 0.0f;
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const __m512 p = dot_u8_s8(join(avx2::nibbles32(bw[b].qs), avx2::nibbles32(bw[b + 1].qs)),
                               load2_i8(bx[b].qs, bx[b + 1].qs));
    acc = _mm512_fmadd_ps(scales2(_cvtsh_ss(bw[b].d) * bx[b].d, _cvtsh_ss(bw[b + 1].d) * bx[b + 1].d), p, acc);
    mins += _cvtsh_ss(bw[b].m) * bx[b].s + _cvtsh_ss(bw[b + 1].m) * bx[b + 1].s;
  }
  float s = _mm512_reduce_add_ps(acc) + mins;
  if (b < nb) s += avx2_table().dot_q4_1(bw + b, bx + b, kQK);
  return s;
}

float dot_q8_0(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ8_0*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  const int64_t nb = n / kQK;
  __m512 acc = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const __m512i wv = load2_i8(bw[b].qs, bw[b + 1].qs);
    const __m512i xv = load2_i8(bx[b].qs, bx[b + 1].qs);
    // |w| * (x with w's sign): vpdpbusd wants its first operand unsigned.
    const __mmask64 neg = _mm512_movepi8_mask(wv);
    const __m512i aw = _mm512_abs_epi8(wv);
    const __m512i sx = _mm512_mask_sub_epi8(xv, neg, _mm512_setzero_si512(), xv);
    acc = _mm512_fmadd_ps(scales2(_cvtsh_ss(bw[b].d) * bx[b].d, _cvtsh_ss(bw[b + 1].d) * bx[b + 1].d),
                          dot_u8_s8(aw, sx), acc);
  }
  float s = _mm512_reduce_add_ps(acc);
  if (b < nb) s += avx2_table().dot_q8_0(bw + b, bx + b, kQK);
  return s;
}

}  // namespace

const Kernels& avx512_table() {
  static const Kernels k = [] {
    Kernels t = avx2_table();
    t.name = "avx512";
    t.dot_f32 = dot_f32;
    t.dot_q4_0 = dot_q4_0;
    t.dot_q4_1 = dot_q4_1;
    t.dot_q8_0 = dot_q8_0;
    return t;
  }();
  return k;
}

}  // namespace keel::backend::cpu
