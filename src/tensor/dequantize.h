// Scalar reference dequantizers: one row of any float or GGUF block type to f32. These define what
// the bytes mean; backend kernels are tested against them (tests/parity) and they are tested
// against gguf-py's dequantizers on real tensors (tests/golden/dequant). Pure: any thread.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace keel::tensor {

// True for every type dequantize_row() accepts (all but kI32).
bool can_dequantize(DType t);

// Decodes n elements starting at `src` (any alignment) into dst[0, n). n must be a multiple of
// block_size(t) and t must satisfy can_dequantize(t): both are invariants the file readers
// established, so violations abort (KEEL_CHECK).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

// fp8 e4m3 (OCP "fn" variant: no infinities, S.1111.111 is NaN), without its block scale.
float f8e4m3_to_f32(uint8_t v);

}  // namespace keel::tensor
