// libFuzzer target for the GGUF reader: any bytes must give a Status or a GgufFile whose every
// metadata value and tensor byte can be read in bounds (ASan/UBSan check the reads).
// Seeds and runs: scripts/fuzz.sh gguf_fuzz <seconds>.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "format/gguf.h"
#include "tensor/dequantize.h"

namespace {

void touch(const keel::format::GgufFile& f) {
  for (const auto& [key, value] : f.metadata()) {
    (void)f.get_string(key);
    (void)f.get_int(key);
    (void)f.get_float(key);
    (void)f.get_bool(key);
    (void)f.get_string_array(key);
    (void)f.get_int_array(key);
    (void)f.get_float_array(key);
  }
  std::vector<float> row;
  for (const keel::format::GgufTensorInfo& t : f.tensors()) {
    const keel::tensor::TensorView v = f.tensor_view(t);
    if (v.size_bytes == 0 || !keel::tensor::can_dequantize(v.dtype)) continue;
    // The first and last row: every byte of them must lie inside the input.
    const int64_t n = v.shape.row_len();
    if (n > (1 << 16)) continue;
    row.resize(static_cast<size_t>(n));
    keel::tensor::dequantize_row(v.dtype, v.row(0), row.data(), n);
    keel::tensor::dequantize_row(v.dtype, v.row(v.shape.n_rows() - 1), row.data(), n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = keel::format::GgufFile::parse(std::span<const uint8_t>(data, size));
  if (f.ok()) touch(*f);
  return 0;
}
