// Host-side weight conversion for upload: matrices (and embeddings) of any GGUF/safetensors float or
// quantized type become bf16 rows, or f32 rows in the f32 precision mode (quantized types dequantized
// by tensor/dequantize, as the cpu backend does); 1-D tensors (norms, biases) become f32. Pure;
// called by CudaBackend::upload_weight on the loading thread.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor_view.h"

namespace keel::backend::cuda {

// Rows [row_begin, row_end) of `host` as bf16 bits.
void convert_rows_to_bf16(const tensor::TensorView& host, int64_t row_begin, int64_t row_end,
                          std::vector<uint16_t>& out);
// Rows [row_begin, row_end) of `host` as f32 (the values cpu's dequantize_row gives).
void convert_rows_to_f32(const tensor::TensorView& host, int64_t row_begin, int64_t row_end, std::vector<float>& out);
// All of `host` (a 1-D tensor) as f32.
std::vector<float> convert_to_f32(const tensor::TensorView& host);

// The block length over which the cpu backend rounds activation rows to 8 bits before it dots them
// with weights of type `weight` (backend/cpu/kernels.h activation_format: Q8A blocks of 32 for
// Q4_0/Q4_1/Q8_0, Q8_K blocks of 256 for Q4_K/Q6_K), or 0 where cpu dots f32 activations.
int cpu_activation_block(tensor::DType weight);

}  // namespace keel::backend::cuda
