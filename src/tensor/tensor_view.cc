#include "tensor/tensor_view.h"

#include <fmt/format.h>

namespace keel::tensor {

Shape make_shape(std::initializer_list<int64_t> dims) {
  Shape s;
  for (int64_t d : dims) s.dims[static_cast<size_t>(s.rank++)] = d;
  return s;
}

std::string Shape::to_string() const {
  std::string out = "[";
  for (int i = 0; i < rank; ++i) out += fmt::format("{}{}", i ? ", " : "", dims[static_cast<size_t>(i)]);
  return out + "]";
}

}  // namespace keel::tensor
