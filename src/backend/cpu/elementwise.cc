// Row-wise ops: embedding lookup, RMSNorm, RoPE, SiLU-gating, add, KV writes, row gathers. Each
// splits its rows over the pool in chunks big enough to amortise a task claim (~16K elements).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/ops.h"
#include "base/check.h"

namespace keel::backend::cpu {
namespace {

constexpr int64_t kElemsPerTask = 16 * 1024;

// Calls fn(begin, end, thread) over [0, n_rows) in chunks of about kElemsPerTask elements.
template <typename Fn>
void parallel_rows(const OpContext& c, int64_t n_rows, int64_t row_len, Fn&& fn) {
  if (n_rows <= 0) return;
  const int64_t rows_per_task = std::max<int64_t>(1, kElemsPerTask / std::max<int64_t>(1, row_len));
  const int64_t n_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
  c.pool->parallel_for(n_tasks, [&](int64_t task, int thread) {
    const int64_t begin = task * rows_per_task;
    fn(begin, std::min(n_rows, begin + rows_per_task), thread);
  });
}

float* f32(const Tensor& t) { return static_cast<float*>(t.data); }

void check_f32_same(const Tensor& a, const Tensor& b, const char* op) {
  KEEL_CHECK(a.dtype == DType::kF32 && b.dtype == DType::kF32, "{}: activations must be f32", op);
  KEEL_CHECK(a.numel() == b.numel(), "{}: {} vs {} elements", op, a.shape.to_string(), b.shape.to_string());
}

void norm_row(const Kernels& k, const float* x, const float* w, float eps, float* y, int64_t d) {
  const float ms = k.dot_f32(x, x, d) / static_cast<float>(d);
  k.mul_scale_f32(x, w, 1.0f / std::sqrt(ms + eps), y, d);
}

}  // namespace

void row_to_f32(const Kernels& k, tensor::DType t, const void* src, float* dst, int64_t n) {
  if (t == DType::kF16) {
    k.f16_to_f32(static_cast<const uint16_t*>(src), dst, n);
  } else {
    dequantize_row(t, src, dst, n);
  }
}

void embed(const OpContext& c, const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  const int64_t d = table.row_len();
  KEEL_CHECK(out.dtype == DType::kF32 && out.numel() == static_cast<int64_t>(ids.size()) * d,
             "embed: out {} for {} ids of width {}", out.shape.to_string(), ids.size(), d);
  const size_t row_bytes = tensor::row_size_bytes(table.dtype, d);
  parallel_rows(c, static_cast<int64_t>(ids.size()), d, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const int32_t id = ids[static_cast<size_t>(i)];
      KEEL_CHECK(id >= 0 && id < table.n_rows(), "embed: token id {} outside [0, {})", id, table.n_rows());
      row_to_f32(*c.k, table.dtype, static_cast<const uint8_t*>(table.data) + id * row_bytes, f32(out) + i * d, d);
    }
  });
}

void rms_norm(const OpContext& c, const Tensor& x, const Tensor& w, float eps, Tensor& out) {
  check_f32_same(x, out, "rms_norm");
  const int64_t d = x.row_len();
  KEEL_CHECK(w.dtype == DType::kF32 && w.numel() == d, "rms_norm: weight {} for rows of {}", w.shape.to_string(), d);
  parallel_rows(c, x.n_rows(), d, [&](int64_t b, int64_t e, int) {
    for (int64_t r = b; r < e; ++r) norm_row(*c.k, f32(x) + r * d, f32(w), eps, f32(out) + r * d, d);
  });
}

void add_rms_norm(const OpContext& c, Tensor& residual, const Tensor& x, const Tensor& w, float eps, Tensor& out) {
  check_f32_same(residual, x, "add_rms_norm");
  check_f32_same(residual, out, "add_rms_norm");
  const int64_t d = residual.row_len();
  KEEL_CHECK(w.dtype == DType::kF32 && w.numel() == d, "add_rms_norm: weight {} for rows of {}", w.shape.to_string(), d);
  parallel_rows(c, residual.n_rows(), d, [&](int64_t b, int64_t e, int) {
    for (int64_t r = b; r < e; ++r) {
      float* res = f32(residual) + r * d;
      c.k->add_f32(res, f32(x) + r * d, res, d);
      norm_row(*c.k, res, f32(w), eps, f32(out) + r * d, d);
    }
  });
}

void rope(const OpContext& c, Tensor& x, std::span<const int32_t> positions, const RopeParams& p) {
  KEEL_CHECK(x.dtype == DType::kF32 && x.shape.rank == 3, "rope: x must be f32 [n, n_heads, head_dim], is {}",
             x.shape.to_string());
  const int64_t n = x.shape[0], n_heads = x.shape[1], head_dim = x.shape[2];
  const int half = p.rot_dims / 2;
  KEEL_CHECK(static_cast<int64_t>(positions.size()) == n, "rope: {} positions for {} tokens", positions.size(), n);
  KEEL_CHECK(p.rot_dims % 2 == 0 && p.rot_dims <= head_dim && static_cast<int>(p.inv_freq.size()) == half,
             "rope: rot_dims {} with {} frequencies for head_dim {}", p.rot_dims, p.inv_freq.size(), head_dim);
  parallel_rows(c, n, n_heads * head_dim, [&](int64_t b, int64_t e, int thread) {
    float* cs = c.ws->thread_f32(thread, static_cast<size_t>(2 * half));
    for (int64_t t = b; t < e; ++t) {
      const float pos = static_cast<float>(positions[static_cast<size_t>(t)]);
      for (int i = 0; i < half; ++i) {
        const float theta = pos * p.inv_freq[static_cast<size_t>(i)];
        cs[i] = std::cos(theta) * p.attn_factor;
        cs[half + i] = std::sin(theta) * p.attn_factor;
      }
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = f32(x) + (t * n_heads + h) * head_dim;
        const int64_t stride = p.style == RopeStyle::kNeox ? 1 : 2;  // distance between pair starts
        const int64_t other = p.style == RopeStyle::kNeox ? half : 1;  // offset of a pair's second element
        for (int i = 0; i < half; ++i) {
          float* a = v + i * stride;
          const float x0 = a[0], x1 = a[other];
          a[0] = x0 * cs[i] - x1 * cs[half + i];
          a[other] = x0 * cs[half + i] + x1 * cs[i];
        }
      }
    }
  });
}

void write_kv(const OpContext& c, const Tensor& k, const Tensor& v, std::span<const int32_t> slots, Tensor& k_cache,
              Tensor& v_cache) {
  const int64_t n = static_cast<int64_t>(slots.size());
  KEEL_CHECK(k.dtype == DType::kF32 && v.dtype == DType::kF32, "write_kv: k and v must be f32");
  KEEL_CHECK(n > 0 && k.numel() == v.numel() && k.numel() % n == 0, "write_kv: k {} v {} for {} slots",
             k.shape.to_string(), v.shape.to_string(), n);
  const int64_t w = k.numel() / n;  // n_kv_heads * head_dim
  for (const Tensor* cache : {&k_cache, &v_cache}) {
    KEEL_CHECK((cache->dtype == DType::kF32 || cache->dtype == DType::kF16) && cache->numel() % w == 0,
               "write_kv: cache {} {} for rows of {}", tensor::dtype_name(cache->dtype), cache->shape.to_string(), w);
  }
  const int64_t n_slots = k_cache.numel() / w;
  KEEL_CHECK(v_cache.numel() / w == n_slots, "write_kv: k and v caches differ in slots");
  parallel_rows(c, n, 2 * w, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const int32_t slot = slots[static_cast<size_t>(i)];
      KEEL_CHECK(slot >= 0 && slot < n_slots, "write_kv: slot {} outside [0, {})", slot, n_slots);
      for (auto [src, cache] : {std::pair{&k, &k_cache}, std::pair{&v, &v_cache}}) {
        const float* s = f32(*src) + i * w;
        if (cache->dtype == DType::kF32) {
          std::memcpy(f32(*cache) + slot * w, s, static_cast<size_t>(w) * sizeof(float));
        } else {
          c.k->f32_to_f16(s, static_cast<uint16_t*>(cache->data) + slot * w, w);
        }
      }
    }
  });
}

void silu_mul(const OpContext& c, const Tensor& gate, const Tensor& up, Tensor& out) {
  check_f32_same(gate, up, "silu_mul");
  check_f32_same(gate, out, "silu_mul");
  parallel_rows(c, gate.numel(), 1, [&](int64_t b, int64_t e, int) {
    c.k->silu_mul_f32(f32(gate) + b, f32(up) + b, f32(out) + b, e - b);
  });
}

void add(const OpContext& c, const Tensor& a, const Tensor& b, Tensor& out) {
  check_f32_same(a, b, "add");
  check_f32_same(a, out, "add");
  parallel_rows(c, a.numel(), 1, [&](int64_t lo, int64_t hi, int) {
    c.k->add_f32(f32(a) + lo, f32(b) + lo, f32(out) + lo, hi - lo);
  });
}

void gather_rows(const OpContext& /*c: a copy is memory bound*/, const Tensor& x, std::span<const int32_t> rows, Tensor& out) {
  const int64_t d = x.row_len();
  KEEL_CHECK(out.dtype == x.dtype && out.numel() == static_cast<int64_t>(rows.size()) * d,
             "gather_rows: out {} for {} rows of {}", out.shape.to_string(), rows.size(), d);
  const size_t row_bytes = tensor::row_size_bytes(x.dtype, d);
  for (size_t i = 0; i < rows.size(); ++i) {
    KEEL_CHECK(rows[i] >= 0 && rows[i] < x.n_rows(), "gather_rows: row {} outside [0, {})", rows[i], x.n_rows());
    std::memcpy(static_cast<uint8_t*>(out.data) + i * row_bytes,
                static_cast<const uint8_t*>(x.data) + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
}

}  // namespace keel::backend::cpu
