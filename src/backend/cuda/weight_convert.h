// Host-side weight conversion for upload: matrices (and embeddings) of any GGUF/safetensors float or
// quantized type become bf16 rows (quantized types dequantized by tensor/dequantize); 1-D tensors
// (norms, biases) become f32. Pure; called by CudaBackend::upload_weight on the loading thread.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor_view.h"

namespace keel::backend::cuda {

// Rows [row_begin, row_end) of `host` as bf16 bits.
void convert_rows_to_bf16(const tensor::TensorView& host, int64_t row_begin, int64_t row_end,
                          std::vector<uint16_t>& out);
// All of `host` (a 1-D tensor) as f32.
std::vector<float> convert_to_f32(const tensor::TensorView& host);

}  // namespace keel::backend::cuda
