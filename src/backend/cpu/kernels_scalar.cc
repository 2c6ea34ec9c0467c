// Scalar kernels: the reference every SIMD table is tested against, and the fallback on CPUs
// without AVX2. Integer dots follow ggml's block formulas exactly (block layouts in tensor/blocks.h).
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernels.h"

namespace keel::backend::cpu {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void scale_f32(float a, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= a;
}

void mul_scale_f32(const float* x, const float* w, float s, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s * w[i];
}

void silu_mul_f32(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void add_f32(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

float exp_sub_sum_f32(float* s, int64_t n, float m) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (s[i] = std::exp(s[i] - m));
  return sum;
}

void qk_tile_f32(const float* q, int64_t n_q, const float* const* rows, int64_t n_k, int64_t hd, float scale, float* s,
                 int64_t ld) {
  for (int64_t g = 0; g < n_q; ++g) {
    for (int64_t j = 0; j < n_k; ++j) s[g * ld + j] = scale * dot_f32(q + g * hd, rows[j], hd);
  }
}

void pv_tile_f32(const float* p, int64_t ld, int64_t n_q, const float* const* rows, int64_t n_k, int64_t hd,
                 float* acc) {
  for (int64_t g = 0; g < n_q; ++g) {
    for (int64_t j = 0; j < n_k; ++j) axpy_f32(p[g * ld + j], rows[j], acc + g * hd, hd);
  }
}

void f16_row_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}

void f32_row_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

float dot_f16_f32(const uint16_t* w, const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += fp16_to_f32(w[i]) * x[i];
  return s;
}

float dot_bf16_f32(const uint16_t* w, const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += bf16_to_f32(w[i]) * x[i];
  return s;
}

// Symmetric 8-bit: d = amax / 127, q = round(x / d); the same rounding as ggml's quantize_row_q8_1.
float quantize_block(const float* x, int8_t* q, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
  return d;
}

void quantize_q8a(const float* x, BlockQ8A* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    y[b].d = quantize_block(x, y[b].qs, kQK);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += y[b].qs[j];
    y[b].s = y[b].d * static_cast<float>(sum);
  }
}

void quantize_q8k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    y[b].d = quantize_block(x, y[b].qs, kQKK);
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[g * 16 + j];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

float dot_q4_0(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_0*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += ((bw[b].qs[j] & 0xF) - 8) * bx[b].qs[j];
      sumi += ((bw[b].qs[j] >> 4) - 8) * bx[b].qs[j + kQK / 2];
    }
    acc += fp16_to_f32(bw[b].d) * bx[b].d * static_cast<float>(sumi);
  }
  return acc;
}

float dot_q4_1(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_1*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += (bw[b].qs[j] & 0xF) * bx[b].qs[j];
      sumi += (bw[b].qs[j] >> 4) * bx[b].qs[j + kQK / 2];
    }
    acc += fp16_to_f32(bw[b].d) * bx[b].d * static_cast<float>(sumi) + fp16_to_f32(bw[b].m) * bx[b].s;
  }
  return acc;
}

float dot_q8_0(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ8_0*>(w);
  const auto* bx = static_cast<const BlockQ8A*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += bw[b].qs[j] * bx[b].qs[j];
    acc += fp16_to_f32(bw[b].d) * bx[b].d * static_cast<float>(sumi);
  }
  return acc;
}

float dot_q4_k(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ4_K*>(w);
  const auto* bx = static_cast<const BlockQ8_K*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const uint8_t* q4 = bw[b].qs;
    const int8_t* q8 = bx[b].qs;
    int sumi = 0, summ = 0;
    for (int j = 0; j < kQKK / 64; ++j, q4 += 32, q8 += 64) {
      uint8_t sc0, m0, sc1, m1;
      q4k_scale_min(2 * j, bw[b].scales, &sc0, &m0);
      q4k_scale_min(2 * j + 1, bw[b].scales, &sc1, &m1);
      int s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += (q4[l] & 0xF) * q8[l];
        s1 += (q4[l] >> 4) * q8[l + 32];
      }
      sumi += sc0 * s0 + sc1 * s1;
      summ += m0 * (bx[b].bsums[4 * j] + bx[b].bsums[4 * j + 1]) +
              m1 * (bx[b].bsums[4 * j + 2] + bx[b].bsums[4 * j + 3]);
    }
    acc += bx[b].d * (fp16_to_f32(bw[b].d) * static_cast<float>(sumi) -
                      fp16_to_f32(bw[b].dmin) * static_cast<float>(summ));
  }
  return acc;
}

float dot_q6_k(const void* w, const void* xq, int64_t n) {
  const auto* bw = static_cast<const BlockQ6_K*>(w);
  const auto* bx = static_cast<const BlockQ8_K*>(xq);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const uint8_t* ql = bw[b].ql;
    const uint8_t* qh = bw[b].qh;
    const int8_t* sc = bw[b].scales;
    const int8_t* q8 = bx[b].qs;
    int sumi = 0;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, q8 += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        sumi += sc[is] * q1 * q8[l] + sc[is + 2] * q2 * q8[l + 32] + sc[is + 4] * q3 * q8[l + 64] +
                sc[is + 6] * q4 * q8[l + 96];
      }
    }
    acc += fp16_to_f32(bw[b].d) * bx[b].d * static_cast<float>(sumi);
  }
  return acc;
}

}  // namespace

const Kernels& scalar_kernels() {
  static const Kernels k = {
      .name = "scalar",
      .dot_f32 = dot_f32,
      .axpy_f32 = axpy_f32,
      .scale_f32 = scale_f32,
      .mul_scale_f32 = mul_scale_f32,
      .silu_mul_f32 = silu_mul_f32,
      .add_f32 = add_f32,
      .exp_sub_sum_f32 = exp_sub_sum_f32,
      .qk_tile_f32 = qk_tile_f32,
      .pv_tile_f32 = pv_tile_f32,
      .f16_to_f32 = f16_row_to_f32,
      .f32_to_f16 = f32_row_to_f16,
      .dot_f16_f32 = dot_f16_f32,
      .dot_bf16_f32 = dot_bf16_f32,
      .quantize_q8a = quantize_q8a,
      .quantize_q8k = quantize_q8k,
      .dot_q4_0 = dot_q4_0,
      .dot_q4_1 = dot_q4_1,
      .dot_q8_0 = dot_q8_0,
      .dot_q4_k = dot_q4_k,
      .dot_q6_k = dot_q6_k,
      .dot_rows_q4_0 = nullptr,
      .dot_rows_q4_1 = nullptr,
      .dot_rows_q8_0 = nullptr,
  };
  return k;
}

}  // namespace keel::backend::cpu
