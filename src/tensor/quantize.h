// Scalar reference quantizers for the activation formats of quantized dot products: Q8_0 (paired
// with Q4_0/Q4_1/Q8_0 weights) and Q8_K (paired with K-quants). Bit-identical to ggml's
// quantize_row_q8_0_ref / quantize_row_q8_K_ref (checked in tests/golden/dequant), so the CPU
// backend's integer dot products see the same integers llama.cpp does. Pure: any thread.
#pragma once

#include <cstdint>

#include "tensor/blocks.h"

namespace keel::tensor {

// n must be a multiple of 32; writes n / 32 blocks. d = max|x| / 127, q = round-half-away(x / d).
void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n);

// n must be a multiple of 256; writes n / 256 blocks. The element of largest magnitude maps to
// -127 (d = -max / 127 keeps its sign), q rounds to nearest even and clamps at 127, bsums hold
// the 16-element sums. An all-zero block gets d = 0, q = 0, bsums = 0.
void quantize_row_q8_k(const float* src, BlockQ8_K* dst, int64_t n);

}  // namespace keel::tensor
