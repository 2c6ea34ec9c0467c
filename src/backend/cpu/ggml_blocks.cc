#include "backend/cpu/ggml_blocks.h"

#include "base/check.h"

namespace keel::backend::cpu {
namespace {

using tensor::DType;

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 0xF) - 8);
      y[j + kQK / 2] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    const float m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(b[i].qs[j] & 0xF) + m;
      y[j + kQK / 2] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}

void dequant_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

void dequant_q4_k(const BlockQ4K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0; j < kQKK; j += 64, q += 32) {
      uint8_t sc, mn;
      q4k_scale_min(j / 32, b[i].scales, &sc, &mn);
      const float d1 = d * sc, m1 = dmin * mn;
      q4k_scale_min(j / 32 + 1, b[i].scales, &sc, &mn);
      const float d2 = d * sc, m2 = dmin * mn;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequant_q6_k(const BlockQ6K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int n = 0; n < kQKK; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

void dequant_q8_k(const BlockQ8K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    for (int j = 0; j < kQKK; ++j) y[j] = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

}  // namespace

bool is_supported_weight(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ8_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kQ8_K:
      return true;
    case DType::kF8E4M3:
    case DType::kI32:
      return false;
  }
  return false;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const int64_t nb = n / tensor::block_size(t);
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case DType::kQ4_0: return dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case DType::kQ4_1: return dequant_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
    case DType::kQ8_0: return dequant_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case DType::kQ4_K: return dequant_q4_k(static_cast<const BlockQ4K*>(src), dst, nb);
    case DType::kQ6_K: return dequant_q6_k(static_cast<const BlockQ6K*>(src), dst, nb);
    case DType::kQ8_K: return dequant_q8_k(static_cast<const BlockQ8K*>(src), dst, nb);
    case DType::kF8E4M3:
    case DType::kI32:
      break;
  }
  KEEL_CHECK(false, "dequantize_row: unsupported dtype {}", tensor::dtype_name(t));
}

}  // namespace keel::backend::cpu
