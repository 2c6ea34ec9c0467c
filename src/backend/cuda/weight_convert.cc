#include "backend/cuda/weight_convert.h"

#include <cstring>

#include "tensor/blocks.h"
#include "tensor/dequantize.h"
#include "tensor/half.h"

namespace keel::backend::cuda {

void convert_rows_to_bf16(const tensor::TensorView& host, int64_t row_begin, int64_t row_end,
                          std::vector<uint16_t>& out) {
  const int64_t d = host.shape.row_len();
  out.resize(static_cast<size_t>((row_end - row_begin) * d));
  if (host.dtype == tensor::DType::kBF16) {
    std::memcpy(out.data(), host.row(row_begin), out.size() * sizeof(uint16_t));
    return;
  }
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t r = row_begin; r < row_end; ++r) {
    tensor::dequantize_row(host.dtype, host.row(r), row.data(), d);
    uint16_t* dst = out.data() + (r - row_begin) * d;
    for (int64_t i = 0; i < d; ++i) dst[i] = tensor::f32_to_bf16(row[static_cast<size_t>(i)]);
  }
}

void convert_rows_to_f32(const tensor::TensorView& host, int64_t row_begin, int64_t row_end, std::vector<float>& out) {
  const int64_t d = host.shape.row_len();
  out.resize(static_cast<size_t>((row_end - row_begin) * d));
  for (int64_t r = row_begin; r < row_end; ++r) {
    tensor::dequantize_row(host.dtype, host.row(r), out.data() + (r - row_begin) * d, d);
  }
}

int cpu_activation_block(tensor::DType weight) {
  switch (weight) {
    case tensor::DType::kQ4_0:
    case tensor::DType::kQ4_1:
    case tensor::DType::kQ8_0:
      return tensor::kQK4_0;
    case tensor::DType::kQ4_K:
    case tensor::DType::kQ6_K:
      return tensor::kQK_K;
    default:
      return 0;
  }
}

std::vector<float> convert_to_f32(const tensor::TensorView& host) {
  std::vector<float> out(static_cast<size_t>(host.numel()));
  const int64_t d = host.shape.row_len();
  for (int64_t r = 0; r < host.shape.n_rows(); ++r) tensor::dequantize_row(host.dtype, host.row(r), out.data() + r * d, d);
  return out;
}

}  // namespace keel::backend::cuda
