// libFuzzer target for the safetensors reader: any bytes must give a Status or a set whose every
// tensor view lies inside the input (ASan/UBSan check the reads).
// Seeds and runs: scripts/fuzz.sh safetensors_fuzz <seconds>.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "format/safetensors.h"
#include "tensor/dequantize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto set = keel::format::SafetensorsSet::parse(std::span<const uint8_t>(data, size));
  if (!set.ok()) return 0;
  std::vector<float> values;
  for (const keel::format::SafetensorsTensor& t : set->tensors()) {
    (void)set->find(t.name);
    if (!keel::tensor::can_dequantize(t.view.dtype) || t.view.numel() > (1 << 16)) continue;
    values.resize(static_cast<size_t>(t.view.numel()));
    keel::tensor::dequantize_row(t.view.dtype, t.view.data, values.data(), t.view.numel());
  }
  return 0;
}
