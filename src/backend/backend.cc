#include "backend/backend.h"

namespace keel::backend {

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  Tensor t;
  t.dtype = dtype;
  t.shape = tensor::make_shape({count, row_len()});
  t.data = static_cast<uint8_t*>(data) + static_cast<size_t>(begin) * tensor::row_size_bytes(dtype, row_len());
  return t;
}

}  // namespace keel::backend
