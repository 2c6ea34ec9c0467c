// The CPU backend's inner kernels as a table of function pointers, one table per instruction set
// (scalar, AVX2+FMA+F16C, AVX-512), picked once at run time by cpu_kernels(). Ops (matmul.cc,
// attention.cc, elementwise.cc) call only through the table; tests run every table they can against
// the scalar one. Pure functions on caller memory: any thread.
#pragma once

#include <cstdint>

#include "tensor/blocks.h"
#include "tensor/dequantize.h"
#include "tensor/dtype.h"
#include "tensor/half.h"

namespace keel::backend::cpu {

using tensor::bf16_to_f32;
using tensor::BlockQ4_0;
using tensor::BlockQ4_1;
using tensor::BlockQ4_K;
using tensor::BlockQ6_K;
using tensor::BlockQ8_0;
using tensor::BlockQ8_K;
using tensor::dequantize_row;
using tensor::f32_to_fp16;
using tensor::fp16_to_f32;

inline constexpr int kQK = tensor::kQK4_0;  // elements per Q4_0 / Q4_1 / Q8_0 / Q8A block
inline constexpr int kQKK = tensor::kQK_K;  // elements per K-quant super-block

// Sub-block j's 6-bit scale and min from a Q4_K scales[12] array (ggml's get_scale_min_k4).
inline void q4k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Activation block for Q4_0 / Q4_1 / Q8_0 weights: ggml's block_q8_1 with f32 fields. x ≈ d * qs;
// s = d * sum(qs) carries the block sum that Q4_1's minimum (and Q4_0's -8 offset) multiplies.
struct BlockQ8A {
  float d;
  float s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8A) == 40);

// Which activation format a weight dtype's integer dot product wants (kF32: none, use floats).
tensor::DType activation_format(tensor::DType weight);

// dot(weight row of n elements, quantized activation row of n elements).
using QuantDotFn = float (*)(const void* w, const void* xq, int64_t n);
// out[r] = dot(weight row r, xq) for n_rows (1..kMaxDotRows) weight rows w_row_bytes apart: the
// activation blocks are loaded once for all rows and the rows' sums run in parallel.
inline constexpr int kMaxDotRows = 4;
using QuantDotRowsFn = void (*)(const void* w, size_t w_row_bytes, int n_rows, const void* xq, int64_t n, float* out);

struct Kernels {
  const char* name;
  // f32 vectors.
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy_f32)(float a, const float* x, float* y, int64_t n);  // y += a * x
  void (*scale_f32)(float a, float* y, int64_t n);                 // y *= a
  // y = x * w * s (the tail of RMSNorm).
  void (*mul_scale_f32)(const float* x, const float* w, float s, float* y, int64_t n);
  void (*silu_mul_f32)(const float* g, const float* u, float* y, int64_t n);  // y = silu(g) * u
  void (*add_f32)(const float* a, const float* b, float* y, int64_t n);
  float (*exp_sub_sum_f32)(float* s, int64_t n, float m);  // s[i] = exp(s[i] - m); returns the sum
  // Attention tiles over n_k key/value rows (rows[j], head_dim hd each) for n_q query rows that
  // share them (a token's GQA heads). qk: s[g * ld + j] = scale * dot(q + g * hd, rows[j]).
  // pv: acc[g * hd + d] += sum_j p[g * ld + j] * rows[j][d].
  void (*qk_tile_f32)(const float* q, int64_t n_q, const float* const* rows, int64_t n_k, int64_t hd, float scale,
                      float* s, int64_t ld);
  void (*pv_tile_f32)(const float* p, int64_t ld, int64_t n_q, const float* const* rows, int64_t n_k, int64_t hd,
                      float* acc);
  // Conversions and float-weight dots.
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  float (*dot_f16_f32)(const uint16_t* w, const float* x, int64_t n);
  float (*dot_bf16_f32)(const uint16_t* w, const float* x, int64_t n);
  // Activation quantizers; n is a multiple of the block size.
  void (*quantize_q8a)(const float* x, BlockQ8A* y, int64_t n);
  void (*quantize_q8k)(const float* x, BlockQ8_K* y, int64_t n);
  // Integer dot products of quantized weights with quantized activations.
  QuantDotFn dot_q4_0;
  QuantDotFn dot_q4_1;
  QuantDotFn dot_q8_0;
  QuantDotFn dot_q4_k;
  QuantDotFn dot_q6_k;
  // Multi-row forms for the 32-element-block types; nullptr where the table has none (the matmul
  // then calls the one-row dot per row).
  QuantDotRowsFn dot_rows_q4_0;
  QuantDotRowsFn dot_rows_q4_1;
  QuantDotRowsFn dot_rows_q8_0;
};

const Kernels& scalar_kernels();
// nullptr when the running CPU lacks the instruction set (or the build could not compile it).
const Kernels* avx2_kernels();
const Kernels* avx512_kernels();
// The best table the running CPU supports; KEEL_CPU_KERNELS=scalar|avx2|avx512 overrides.
const Kernels& cpu_kernels();

// The dot product for weight dtype t from table k; nullptr for float weights.
QuantDotFn quant_dot(const Kernels& k, tensor::DType t);
// The multi-row dot for weight dtype t from table k; nullptr when the table has none.
QuantDotRowsFn quant_dot_rows(const Kernels& k, tensor::DType t);

}  // namespace keel::backend::cpu
