// AVX2 + FMA + F16C kernel table. Integer dots follow ggml's x86 scheme: 4-bit weights are unpacked
// to unsigned bytes and multiplied with the signed 8-bit activations by maddubs (u8 x s8 -> s16 pairs),
// then madd widens to s32; offsets and minimums come in through the activation block sums (Q8A.s,
// Q8_K.bsums) instead of being subtracted per element. Compiled with -mavx2 -mfma -mf16c only; reached
// only through cpu_kernels() after a CPUID check.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/simd_avx2.h"

namespace keel::backend::cpu {
namespace {

using namespace avx2;

float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

void scale_f32(float a, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

void mul_scale_f32(const float* x, const float* w, float s, float* y, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
  }
  for (; i < n; ++i) y[i] = x[i] * s * w[i];
}

void silu_mul_f32(const float* g, const float* u, float* y, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vg = _mm256_loadu_ps(g + i);
    const __m256 den = _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), vg)));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(vg, den), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void add_f32(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

float exp_sub_sum_f32(float* s, int64_t n, float m) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + i), vm));
    _mm256_storeu_ps(s + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; i < n; ++i) sum += (s[i] = std::exp(s[i] - m));
  return sum;
}

// Four keys per pass, their partial sums kept in registers and reduced together (one hadd tree
// instead of four horizontal sums). Needs hd % 8 == 0; other head sizes take the one-key path.
void qk_tile_f32(const float* q, int64_t n_q, const float* const* rows, int64_t n_k, int64_t hd, float scale, float* s,
                 int64_t ld) {
  const int64_t n_k4 = hd % 8 == 0 ? n_k / 4 * 4 : 0;
  const __m128 vs = _mm_set1_ps(scale);
  for (int64_t g = 0; g < n_q; ++g) {
    const float* qg = q + g * hd;
    float* sg = s + g * ld;
    for (int64_t j = 0; j < n_k4; j += 4) {
      const float *r0 = rows[j], *r1 = rows[j + 1], *r2 = rows[j + 2], *r3 = rows[j + 3];
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
      for (int64_t d = 0; d < hd; d += 8) {
        const __m256 qv = _mm256_loadu_ps(qg + d);
        a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(r0 + d), a0);
        a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(r1 + d), a1);
        a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(r2 + d), a2);
        a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(r3 + d), a3);
      }
      const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
      const __m128 r = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
      _mm_storeu_ps(sg + j, _mm_mul_ps(r, vs));
    }
    for (int64_t j = n_k4; j < n_k; ++j) sg[j] = scale * dot_f32(qg, rows[j], hd);
  }
}

// The accumulator row stays in registers across the tile's keys, 32 (then 8) columns at a time, so
// it is loaded and stored once per tile instead of once per key.
void pv_tile_f32(const float* p, int64_t ld, int64_t n_q, const float* const* rows, int64_t n_k, int64_t hd,
                 float* acc) {
  for (int64_t g = 0; g < n_q; ++g) {
    const float* pg = p + g * ld;
    float* ag = acc + g * hd;
    int64_t d = 0;
    for (; d + 32 <= hd; d += 32) {
      __m256 c0 = _mm256_loadu_ps(ag + d), c1 = _mm256_loadu_ps(ag + d + 8);
      __m256 c2 = _mm256_loadu_ps(ag + d + 16), c3 = _mm256_loadu_ps(ag + d + 24);
      for (int64_t j = 0; j < n_k; ++j) {
        const __m256 pj = _mm256_set1_ps(pg[j]);
        const float* r = rows[j] + d;
        c0 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(r), c0);
        c1 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(r + 8), c1);
        c2 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(r + 16), c2);
        c3 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(r + 24), c3);
      }
      _mm256_storeu_ps(ag + d, c0);
      _mm256_storeu_ps(ag + d + 8, c1);
      _mm256_storeu_ps(ag + d + 16, c2);
      _mm256_storeu_ps(ag + d + 24, c3);
    }
    for (; d + 8 <= hd; d += 8) {
      __m256 c0 = _mm256_loadu_ps(ag + d);
      for (int64_t j = 0; j < n_k; ++j) c0 = _mm256_fmadd_ps(_mm256_set1_ps(pg[j]), _mm256_loadu_ps(rows[j] + d), c0);
      _mm256_storeu_ps(ag + d, c0);
    }
    for (; d < hd; ++d) {
      float c = ag[d];
      for (int64_t j = 0; j < n_k; ++j) c += pg[j] * rows[j][d];
      ag[d] = c;
    }
  }
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  }
  for (; i < n; ++i) y[i] = _cvtsh_ss(x[i]);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

float dot_f16_f32(const uint16_t* w, const float* x, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i))),
                         _mm256_loadu_ps(x + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i + 8))),
                         _mm256_loadu_ps(x + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) {
    s0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i))),
                         _mm256_loadu_ps(x + i), s0);
  }
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) s += _cvtsh_ss(w[i]) * x[i];
  return s;
}

float dot_bf16_f32(const uint16_t* w, const float* x, int64_t n) {
  __m256 s0 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i wi = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
    s0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(wi, 16)), _mm256_loadu_ps(x + i), s0);
  }
  float s = hsum(s0);
  for (; i < n; ++i) s += bf16_to_f32(w[i]) * x[i];
  return s;
}

void quantize_q8a(const float* x, BlockQ8A* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    const float amax = hmax(_mm256_max_ps(_mm256_max_ps(abs_ps(v0), abs_ps(v1)), _mm256_max_ps(abs_ps(v2), abs_ps(v3))));
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    const float sum = round_store_32(_mm256_mul_ps(v0, id), _mm256_mul_ps(v1, id), _mm256_mul_ps(v2, id),
                                     _mm256_mul_ps(v3, id), y[b].qs);
    y[b].d = d;
    y[b].s = d * sum;
  }
}

void quantize_q8k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    __m256 mx = _mm256_setzero_ps();
    for (int j = 0; j < kQKK; j += 8) mx = _mm256_max_ps(mx, abs_ps(_mm256_loadu_ps(x + j)));
    const float d = hmax(mx) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    for (int j = 0; j < kQKK; j += 32) {
      const __m256 v0 = _mm256_mul_ps(_mm256_loadu_ps(x + j), id), v1 = _mm256_mul_ps(_mm256_loadu_ps(x + j + 8), id);
      const __m256 v2 = _mm256_mul_ps(_mm256_loadu_ps(x + j + 16), id), v3 = _mm256_mul_ps(_mm256_loadu_ps(x + j + 24), id);
      round_store_32(v0, v1, v2, v3, y[b].qs + j);
    }
    y[b].d = d;
    for (int g = 0; g < kQKK / 16; ++g) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].qs + 16 * g));
      const __m128i s = _mm_madd_epi16(_mm_maddubs_epi16(_mm_set1_epi8(1), q), _mm_set1_epi16(1));
      const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
      y[b].bsums[g] = static_cast<int16_t>(_mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xb1))));
    }
  }
}


float dot_q4_0(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_0*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  const int64_t nb = n / kQK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float offs = 0.0f;  // sum over blocks of -8 * d_w * s_x
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const float d0 = _cvtsh_ss(bw[b].d), d1 = _cvtsh_ss(bw[b + 1].d);
    const __m256 p0 = mul_sum_u8_s8(nibbles32(bw[b].qs), load_i8(bx[b].qs));
    const __m256 p1 = mul_sum_u8_s8(nibbles32(bw[b + 1].qs), load_i8(bx[b + 1].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0 * bx[b].d), p0, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d1 * bx[b + 1].d), p1, acc1);
    offs -= 8.0f * (d0 * bx[b].s + d1 * bx[b + 1].s);
  }
  for (; b < nb; ++b) {
    const float d0 = _cvtsh_ss(bw[b].d);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0 * bx[b].d), mul_sum_u8_s8(nibbles32(bw[b].qs), load_i8(bx[b].qs)), acc0);
    offs -= 8.0f * d0 * bx[b].s;
  }
  return hsum(_mm256_add_ps(acc0, acc1)) + offs;
}

float dot_q4_1(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_1*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  const int64_t nb = n / kQK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float mins = 0.0f;  // sum over blocks of m_w * s_x
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const __m256 p0 = mul_sum_u8_s8(nibbles32(bw[b].qs), load_i8(bx[b].qs));
    const __m256 p1 = mul_sum_u8_s8(nibbles32(bw[b + 1].qs), load_i8(bx[b + 1].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(bw[b].d) * bx[b].d), p0, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(bw[b + 1].d) * bx[b + 1].d), p1, acc1);
    mins += _cvtsh_ss(bw[b].m) * bx[b].s + _cvtsh_ss(bw[b + 1].m) * bx[b + 1].s;
  }
  for (; b < nb; ++b) {
    const __m256 p0 = mul_sum_u8_s8(nibbles32(bw[b].qs), load_i8(bx[b].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(bw[b].d) * bx[b].d), p0, acc0);
    mins += _cvtsh_ss(bw[b].m) * bx[b].s;
  }
  return hsum(_mm256_add_ps(acc0, acc1)) + mins;
}

float dot_q8_0(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ8_0*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  const int64_t nb = n / kQK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const __m256 p0 = mul_sum_s8_s8(load_i8(bw[b].qs), load_i8(bx[b].qs));
    const __m256 p1 = mul_sum_s8_s8(load_i8(bw[b + 1].qs), load_i8(bx[b + 1].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(bw[b].d) * bx[b].d), p0, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(bw[b + 1].d) * bx[b + 1].d), p1, acc1);
  }
  for (; b < nb; ++b) {
    const __m256 p0 = mul_sum_s8_s8(load_i8(bw[b].qs), load_i8(bx[b].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(bw[b].d) * bx[b].d), p0, acc0);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

float dot_q4_k(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_K*>(w);
  const auto* bx = static_cast<const BlockQ8_K*>(xq);
  const __m256i m4 = _mm256_set1_epi8(0xF);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = bx[b].d * _cvtsh_ss(bw[b].d);
    const float dmin = -bx[b].d * _cvtsh_ss(bw[b].dmin);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) q4k_scale_min(j, bw[b].scales, &sc[j], &mn[j]);
    uint64_t sc64, mn64;
    std::memcpy(&sc64, sc, 8);
    std::memcpy(&mn64, mn, 8);
    const __m128i scales16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc64)));
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn64)));
    // Minimums: sum_j mn[j] * (sum of activation sub-block j), from the 16-element bsums.
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bx[b].bsums));
    const __m128i sums32 = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins16, sums32)), acc_m);
    const __m256i scales = _mm256_set_m128i(scales16, scales16);
    const uint8_t* q4 = bw[b].qs;
    const int8_t* q8 = bx[b].qs;
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < kQKK / 64; ++j, q4 += 32, q8 += 64) {
      const __m256i scale_l = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>((4 * j + 1) << 8 | 4 * j)));
      const __m256i scale_h = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>((4 * j + 3) << 8 | (4 * j + 2))));
      const __m256i q4bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q4));
      const __m256i q4l = _mm256_and_si256(q4bits, m4);
      const __m256i q4h = _mm256_and_si256(_mm256_srli_epi16(q4bits, 4), m4);
      const __m256i pl = _mm256_madd_epi16(scale_l, _mm256_maddubs_epi16(q4l, load_i8(q8)));
      const __m256i ph = _mm256_madd_epi16(scale_h, _mm256_maddubs_epi16(q4h, load_i8(q8 + 32)));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  __m128 m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return hsum(acc) + _mm_cvtss_f32(m);
}

float dot_q6_k(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ6_K*>(w);
  const auto* bx = static_cast<const BlockQ8_K*>(xq);
  const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3), m32s = _mm256_set1_epi8(32);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = bx[b].d * _cvtsh_ss(bw[b].d);
    const uint8_t* ql = bw[b].ql;
    const uint8_t* qh = bw[b].qh;
    const int8_t* q8 = bx[b].qs;
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bw[b].scales));
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < kQKK / 128; ++j, ql += 64, qh += 32, q8 += 128) {
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
      const __m256i lb1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i lb2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(lb1, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4)),
          _mm256_or_si256(_mm256_and_si256(lb2, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb1, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb2, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4)),
      };
      for (int k = 0; k < 4; ++k) {
        const __m256i y = load_i8(q8 + 32 * k);
        // (q - 32) * y = q * y - 32 * y; both maddubs stay inside int16.
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], y), _mm256_maddubs_epi16(m32s, y));
        const int s = 8 * j + 2 * k;  // scales s (elements 0..15 of this 32) and s + 1 (16..31)
        const __m128i sh = _mm_set_epi64x(0x0101010101010101LL * (s + 1), 0x0101010101010101LL * s);
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, sh));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(sc, p));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc);
}

// One 32-element block of weight row r against the activation block: adds d_w * d_x * sum(q_w * q_x)
// to acc and the block's offset term to off. Q4_0/Q4_1 use unsigned nibbles with the offset through
// the activation block sum; Q8_0 is signed x signed.
struct Q4_0Block {
  using Block = BlockQ4_0;
  static void add(const Block& w, const BlockQ8A& x, __m256i y, __m256& acc, float& off) {
    const float d = _cvtsh_ss(w.d);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d * x.d), mul_sum_u8_s8(nibbles32(w.qs), y), acc);
    off -= 8.0f * d * x.s;
  }
};
struct Q4_1Block {
  using Block = BlockQ4_1;
  static void add(const Block& w, const BlockQ8A& x, __m256i y, __m256& acc, float& off) {
    acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w.d) * x.d), mul_sum_u8_s8(nibbles32(w.qs), y), acc);
    off += _cvtsh_ss(w.m) * x.s;
  }
};
struct Q8_0Block {
  using Block = BlockQ8_0;
  static void add(const Block& w, const BlockQ8A& x, __m256i y, __m256& acc, float&) {
    acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w.d) * x.d), mul_sum_s8_s8(load_i8(w.qs), y), acc);
  }
};

template <typename B, int R>
void dot_rows_fixed(const uint8_t* w, size_t w_row_bytes, const BlockQ8A* bx, int64_t nb, float* out) {
  __m256 acc[R];
  float off[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), off[r] = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i y = load_i8(bx[b].qs);
    for (int r = 0; r < R; ++r) {
      B::add(reinterpret_cast<const typename B::Block*>(w + r * w_row_bytes)[b], bx[b], y, acc[r], off[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]) + off[r];
}

template <typename B>
void dot_rows(const void* w, size_t w_row_bytes, int n_rows, const void* xq, int64_t n, float* out) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  switch (n_rows) {
    case 4: return dot_rows_fixed<B, 4>(wb, w_row_bytes, bx, n / kQK, out);
    case 3: return dot_rows_fixed<B, 3>(wb, w_row_bytes, bx, n / kQK, out);
    case 2: return dot_rows_fixed<B, 2>(wb, w_row_bytes, bx, n / kQK, out);
    default: return dot_rows_fixed<B, 1>(wb, w_row_bytes, bx, n / kQK, out);
  }
}

}  // namespace

const Kernels& avx2_table() {
  static const Kernels k = {
      .name = "avx2",
      .dot_f32 = dot_f32,
      .axpy_f32 = axpy_f32,
      .scale_f32 = scale_f32,
      .mul_scale_f32 = mul_scale_f32,
      .silu_mul_f32 = silu_mul_f32,
      .add_f32 = add_f32,
      .exp_sub_sum_f32 = exp_sub_sum_f32,
      .qk_tile_f32 = qk_tile_f32,
      .pv_tile_f32 = pv_tile_f32,
      .f16_to_f32 = f16_to_f32_row,
      .f32_to_f16 = f32_to_f16_row,
      .dot_f16_f32 = dot_f16_f32,
      .dot_bf16_f32 = dot_bf16_f32,
      .quantize_q8a = quantize_q8a,
      .quantize_q8k = quantize_q8k,
      .dot_q4_0 = dot_q4_0,
      .dot_q4_1 = dot_q4_1,
      .dot_q8_0 = dot_q8_0,
      .dot_q4_k = dot_q4_k,
      .dot_q6_k = dot_q6_k,
      .dot_rows_q4_0 = dot_rows<Q4_0Block>,
      .dot_rows_q4_1 = dot_rows<Q4_1Block>,
      .dot_rows_q8_0 = dot_rows<Q8_0Block>,
  };
  return k;
}

}  // namespace keel::backend::cpu
