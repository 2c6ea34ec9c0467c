#include "tensor/dequantize.h"

#include <cstring>
#include <limits>

#include "base/check.h"
#include "tensor/blocks.h"
#include "tensor/half.h"

namespace keel::tensor {
namespace {

// Blocks are copied out because file data need not be aligned for the struct (GGUF allows an
// alignment of 1, safetensors none at all).
template <typename Block>
Block load_block(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + static_cast<size_t>(i) * sizeof(Block), sizeof(Block));
  return b;
}

void dequantize_q4_0(const uint8_t* src, float* y, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, y += kQK4_0) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0x0f) - 8) * d;
      y[j + kQK4_0 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* y, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, y += kQK4_0) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_f32(b.d);
    const float m = fp16_to_f32(b.m);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0x0f) * d + m;
      y[j + kQK4_0 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q8_0(const uint8_t* src, float* y, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, y += kQK8_0) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// Q4_K's 6-bit scale and min of sub-block j: sub-blocks 0-3 keep theirs in the low 6 bits of
// bytes 0-3 (scales) and 4-7 (mins); 4-7 split theirs between bytes 8-11 and the top 2 bits of 0-7.
void q4_k_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void dequantize_q4_k(const uint8_t* src, float* y, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32) {
      uint8_t sc = 0;
      uint8_t m = 0;
      q4_k_scale_min(j / 32, b.scales, sc, m);
      const float d1 = d * sc;
      const float m1 = dmin * m;
      q4_k_scale_min(j / 32 + 1, b.scales, sc, m);
      const float d2 = d * sc;
      const float m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q6_k(const uint8_t* src, float* y, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    // Two halves of 128 elements; each byte of qh carries the top bits of four elements 32 apart.
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_q8_k(const uint8_t* src, float* y, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, y += kQK_K) {
    const auto b = load_block<BlockQ8_K>(src, i);
    for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

template <typename Raw, float (*convert)(Raw)>
void convert_row(const uint8_t* src, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Raw r;
    std::memcpy(&r, src + static_cast<size_t>(i) * sizeof(Raw), sizeof(Raw));
    y[i] = convert(r);
  }
}

float identity(float x) { return x; }

}  // namespace

float f8e4m3_to_f32(uint8_t v) {
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  const int exp = (v >> 3) & 0x0f;
  const int mant = v & 0x07;
  if (exp == 15 && mant == 7) return std::numeric_limits<float>::quiet_NaN();
  // Subnormals: mant/8 * 2^-6; normals: (1 + mant/8) * 2^(exp - 7). Both exact in f32.
  if (exp == 0) return sign * static_cast<float>(mant) * 0x1p-9f;
  return sign * static_cast<float>(8 + mant) * static_cast<float>(1 << exp) * 0x1p-10f;
}

bool can_dequantize(DType t) {
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
    case DType::kF8E4M3: return true;
    case DType::kI32: return false;
  }
  return false;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const int64_t block = block_size(t);
  KEEL_CHECK(n >= 0 && n % block == 0, "row of {} {} elements is not whole blocks of {}", n, dtype_name(t), block);
  const auto* s = static_cast<const uint8_t*>(src);
  const int64_t n_blocks = n / block;
  switch (t) {
    case DType::kF32: convert_row<float, identity>(s, dst, n); return;
    case DType::kF16: convert_row<uint16_t, fp16_to_f32>(s, dst, n); return;
    case DType::kBF16: convert_row<uint16_t, bf16_to_f32>(s, dst, n); return;
    case DType::kF8E4M3: convert_row<uint8_t, f8e4m3_to_f32>(s, dst, n); return;
    case DType::kQ4_0: dequantize_q4_0(s, dst, n_blocks); return;
    case DType::kQ4_1: dequantize_q4_1(s, dst, n_blocks); return;
    case DType::kQ8_0: dequantize_q8_0(s, dst, n_blocks); return;
    case DType::kQ4_K: dequantize_q4_k(s, dst, n_blocks); return;
    case DType::kQ6_K: dequantize_q6_k(s, dst, n_blocks); return;
    case DType::kQ8_K: dequantize_q8_k(s, dst, n_blocks); return;
    case DType::kI32: break;
  }
  KEEL_CHECK(false, "{} has no float values to dequantize", dtype_name(t));
}

}  // namespace keel::tensor
