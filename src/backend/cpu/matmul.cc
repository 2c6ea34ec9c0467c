// out[n, m] = x[n, k] · w[m, k]^T. Quantized weights with an integer kernel: the activation rows are
// quantized once per call (Q8A or Q8_K, kernels.h) into shared scratch, then threads claim chunks of
// weight rows; within a chunk each activation row is dotted with every weight row of the chunk, so a
// weight row is read from memory once and stays in L1 while the activation rows stream past.
// Float weights (f32/f16/bf16) use the same tiling with float dots; other types dequantize a weight
// row at a time into thread scratch.
#include <algorithm>

#include "backend/cpu/ops.h"
#include "base/check.h"

namespace keel::backend::cpu {
namespace {

// Weight rows per task: small enough to balance threads, large enough to amortise the claim.
int64_t rows_per_task(int64_t m, int n_threads) {
  const int64_t target_tasks = static_cast<int64_t>(n_threads) * 8;
  return std::clamp<int64_t>((m + target_tasks - 1) / target_tasks, 4, 64);
}

// A dot of one weight row (bytes at w) with activation row i, for the chosen path.
struct RowDot {
  enum class Kind { kQuant, kF32, kF16, kBF16, kDequant } kind;
  QuantDotFn qdot = nullptr;
  QuantDotRowsFn qdot_rows = nullptr;  // when set, used in groups of kMaxDotRows weight rows
  const uint8_t* xq = nullptr;  // quantized activations, xq_row_bytes per row
  size_t xq_row_bytes = 0;
};

void quantize_activations(const OpContext& c, const Tensor& x, tensor::DType fmt, uint8_t* xq, size_t row_bytes) {
  const int64_t k = x.row_len();
  const auto* xf = static_cast<const float*>(x.data);
  c.pool->parallel_for(x.n_rows(), [&](int64_t r, int) {
    if (fmt == DType::kQ8_K) {
      c.k->quantize_q8k(xf + r * k, reinterpret_cast<BlockQ8_K*>(xq + r * row_bytes), k);
    } else {
      c.k->quantize_q8a(xf + r * k, reinterpret_cast<BlockQ8A*>(xq + r * row_bytes), k);
    }
  });
}

}  // namespace

void matmul(const OpContext& c, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const int64_t n = x.n_rows(), k = x.row_len(), m = w.n_rows();
  KEEL_CHECK(x.dtype == DType::kF32 && out.dtype == DType::kF32, "matmul: activations must be f32");
  KEEL_CHECK(w.row_len() == k && out.numel() == n * m, "matmul: x {} w {} out {}", x.shape.to_string(),
             w.shape.to_string(), out.shape.to_string());
  const bool has_bias = bias != nullptr && bias->data != nullptr;
  KEEL_CHECK(!has_bias || (bias->dtype == DType::kF32 && bias->numel() == m), "matmul: bias must be f32 [{}]", m);
  if (n == 0 || m == 0) return;

  RowDot rd{RowDot::Kind::kDequant};
  const DType fmt = activation_format(w.dtype);
  if (QuantDotFn q = quant_dot(*c.k, w.dtype); q != nullptr) {  // k is whole blocks (upload_weight)
    rd.kind = RowDot::Kind::kQuant;
    rd.qdot = q;
    rd.qdot_rows = quant_dot_rows(*c.k, w.dtype);
    rd.xq_row_bytes = fmt == DType::kQ8_K ? static_cast<size_t>(k / kQKK) * sizeof(BlockQ8_K)
                                          : static_cast<size_t>(k / kQK) * sizeof(BlockQ8A);
    auto* xq = static_cast<uint8_t*>(c.ws->shared(rd.xq_row_bytes * static_cast<size_t>(n)));
    quantize_activations(c, x, fmt, xq, rd.xq_row_bytes);
    rd.xq = xq;
  } else if (w.dtype == DType::kF32) {
    rd.kind = RowDot::Kind::kF32;
  } else if (w.dtype == DType::kF16) {
    rd.kind = RowDot::Kind::kF16;
  } else if (w.dtype == DType::kBF16) {
    rd.kind = RowDot::Kind::kBF16;
  }

  const auto* xf = static_cast<const float*>(x.data);
  auto* of = static_cast<float*>(out.data);
  const float* bf = has_bias ? static_cast<const float*>(bias->data) : nullptr;
  const size_t w_row_bytes = tensor::row_size_bytes(w.dtype, k);
  const int64_t chunk = rows_per_task(m, c.pool->n_threads());
  const int64_t n_tasks = (m + chunk - 1) / chunk;
  c.pool->parallel_for(n_tasks, [&](int64_t task, int thread) {
    const int64_t r0 = task * chunk, r1 = std::min(m, r0 + chunk);
    const auto* wb = static_cast<const uint8_t*>(w.data);
    float* deq = nullptr;
    if (rd.kind == RowDot::Kind::kDequant) {
      deq = c.ws->thread_f32(thread, static_cast<size_t>((r1 - r0) * k));
      for (int64_t r = r0; r < r1; ++r) dequantize_row(w.dtype, wb + r * w_row_bytes, deq + (r - r0) * k, k);
    }
    for (int64_t i = 0; i < n; ++i) {
      const float* xi = xf + i * k;
      float* oi = of + i * m;
      if (rd.qdot_rows != nullptr) {
        for (int64_t r = r0; r < r1; r += kMaxDotRows) {
          const int rows = static_cast<int>(std::min<int64_t>(kMaxDotRows, r1 - r));
          rd.qdot_rows(wb + r * w_row_bytes, w_row_bytes, rows, rd.xq + i * rd.xq_row_bytes, k, oi + r);
          if (bf) {
            for (int j = 0; j < rows; ++j) oi[r + j] += bf[r + j];
          }
        }
        continue;
      }
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = wb + r * w_row_bytes;
        float v = 0.0f;
        switch (rd.kind) {
          case RowDot::Kind::kQuant: v = rd.qdot(wr, rd.xq + i * rd.xq_row_bytes, k); break;
          case RowDot::Kind::kF32: v = c.k->dot_f32(reinterpret_cast<const float*>(wr), xi, k); break;
          case RowDot::Kind::kF16: v = c.k->dot_f16_f32(reinterpret_cast<const uint16_t*>(wr), xi, k); break;
          case RowDot::Kind::kBF16: v = c.k->dot_bf16_f32(reinterpret_cast<const uint16_t*>(wr), xi, k); break;
          case RowDot::Kind::kDequant: v = c.k->dot_f32(deq + (r - r0) * k, xi, k); break;
        }
        oi[r] = bf ? v + bf[r] : v;
      }
    }
  });
}

}  // namespace keel::backend::cpu
