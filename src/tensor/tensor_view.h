// A non-owning, read-only view of a host tensor: weights in a memory-mapped file, or test data.
// Row-major, shape outermost first (PyTorch order): a Linear weight is [out_features, in_features],
// and the last dimension is contiguous. GGUF's ne[] order is reversed into this order by its reader.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace keel::tensor {

inline constexpr int kMaxDims = 4;

struct Shape {
  std::array<int64_t, kMaxDims> dims{};
  int rank = 0;

  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  // Length of the contiguous last dimension (1 for scalars).
  int64_t row_len() const { return rank == 0 ? 1 : dims[static_cast<size_t>(rank - 1)]; }
  int64_t n_rows() const { return row_len() == 0 ? 0 : numel() / row_len(); }
  bool operator==(const Shape& o) const { return rank == o.rank && dims == o.dims; }
  std::string to_string() const;
};

Shape make_shape(std::initializer_list<int64_t> dims);

struct TensorView {
  DType dtype = DType::kF32;
  Shape shape;
  const void* data = nullptr;
  size_t size_bytes = 0;  // == n_rows * row_size_bytes(dtype, row_len)

  int64_t numel() const { return shape.numel(); }
  const uint8_t* row(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_size_bytes(dtype, shape.row_len());
  }
};

}  // namespace keel::tensor
