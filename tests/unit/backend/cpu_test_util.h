// Helpers for the CPU backend tests: seeded random activations and random quantized weights in the
// ggml block layouts, host-owned tensors, and the tolerance of a dot product whose activations were
// rounded to 8 bits. Test-only; any thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "tensor/dtype.h"

namespace keel::backend::cpu::test {

using tensor::DType;

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random bytes for n_rows rows of row_len elements of dtype t, with every f16 scale set to a sane
// value (random bytes there would give inf/NaN). Plain types get random values in [-1, 1].
inline std::vector<uint8_t> random_weight(std::mt19937& rng, DType t, int64_t n_rows, int64_t row_len) {
  const size_t row_bytes = tensor::row_size_bytes(t, row_len);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(n_rows));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> scale(0.002f, 0.03f);
  auto h = [&](float lo_sign) { return f32_to_fp16(scale(rng) * lo_sign); };
  const int64_t n_blocks = static_cast<int64_t>(bytes.size() / tensor::dtype_info(t).block_bytes);
  const std::vector<float> plain = random_floats(rng, static_cast<size_t>(n_rows * row_len));
  switch (t) {
    case DType::kF32:
      std::memcpy(bytes.data(), plain.data(), bytes.size());
      break;
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < plain.size(); ++i) {
        uint16_t v = f32_to_fp16(plain[i]);
        if (t == DType::kBF16) {
          uint32_t bits;
          std::memcpy(&bits, &plain[i], 4);
          v = static_cast<uint16_t>(bits >> 16);
        }
        std::memcpy(bytes.data() + 2 * i, &v, 2);
      }
      break;
    case DType::kQ4_0:
      for (int64_t b = 0; b < n_blocks; ++b) reinterpret_cast<BlockQ4_0*>(bytes.data())[b].d = h(1.0f);
      break;
    case DType::kQ4_1:
      for (int64_t b = 0; b < n_blocks; ++b) {
        reinterpret_cast<BlockQ4_1*>(bytes.data())[b].d = h(1.0f);
        reinterpret_cast<BlockQ4_1*>(bytes.data())[b].m = f32_to_fp16(-8.0f * scale(rng));
      }
      break;
    case DType::kQ8_0:
      for (int64_t b = 0; b < n_blocks; ++b) reinterpret_cast<BlockQ8_0*>(bytes.data())[b].d = h(0.1f);
      break;
    case DType::kQ4_K:
      for (int64_t b = 0; b < n_blocks; ++b) {
        reinterpret_cast<BlockQ4_K*>(bytes.data())[b].d = h(0.05f);
        reinterpret_cast<BlockQ4_K*>(bytes.data())[b].dmin = h(0.05f);
      }
      break;
    case DType::kQ6_K:
      for (int64_t b = 0; b < n_blocks; ++b) reinterpret_cast<BlockQ6_K*>(bytes.data())[b].d = h(0.01f);
      break;
    default:
      break;
  }
  return bytes;
}

inline Tensor view(std::vector<float>& v, std::initializer_list<int64_t> dims) {
  return Tensor{DType::kF32, tensor::make_shape(dims), v.data()};
}
inline Tensor view(std::vector<uint8_t>& v, DType t, std::initializer_list<int64_t> dims) {
  return Tensor{t, tensor::make_shape(dims), v.data()};
}

// Bound on |dot(w, x) - dot(w, x8)| where x8 is x rounded to 8 bits per block of `block` elements
// (scale amax/127, so each element moves by at most amax/254), plus f32 rounding of the sums.
inline double q8_dot_tolerance(const float* w, const float* x, int64_t n, int64_t block) {
  double bound = 0.0, mag = 0.0;
  for (int64_t b = 0; b < n; b += block) {
    double amax = 0.0, wsum = 0.0;
    for (int64_t j = b; j < std::min(n, b + block); ++j) {
      amax = std::max(amax, static_cast<double>(std::fabs(x[j])));
      wsum += std::fabs(w[j]);
      mag += std::fabs(static_cast<double>(w[j]) * x[j]);
    }
    bound += amax / 254.0 * wsum;
  }
  return bound * 1.01 + 1e-5 * mag + 1e-6;
}

}  // namespace keel::backend::cpu::test
