// The CPU backend's ops as free functions over an OpContext (thread pool, kernel table, scratch).
// CpuBackend (cpu_backend.h) forwards each Backend virtual here; tests call them directly to run
// one op with a chosen kernel table. Called by one thread at a time (the model thread); the ops
// fan out over the pool themselves. Shapes follow backend.h; violations are KEEL_CHECK invariants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "base/thread_pool.h"

namespace keel::backend::cpu {

// Grow-only scratch memory, 64-byte aligned: one region per pool thread plus one shared region.
class Workspace {
 public:
  explicit Workspace(int n_threads) : per_thread_(static_cast<size_t>(n_threads)) {}
  // At least n floats private to `thread`; valid until the next call with the same thread.
  float* thread_f32(int thread, size_t n) { return static_cast<float*>(per_thread_[static_cast<size_t>(thread)].get(n * 4)); }
  // At least n bytes shared by all threads of one op; valid until the next call.
  void* shared(size_t n_bytes) { return shared_.get(n_bytes); }

 private:
  struct FreeAligned {
    void operator()(void* p) const;
  };
  struct Region {
    std::unique_ptr<void, FreeAligned> mem;
    size_t size_bytes = 0;
    void* get(size_t n_bytes);
  };
  std::vector<Region> per_thread_;
  Region shared_;
};

struct OpContext {
  ThreadPool* pool;
  const Kernels* k;
  Workspace* ws;
};

void embed(const OpContext& c, const Tensor& table, std::span<const int32_t> ids, Tensor& out);
void rms_norm(const OpContext& c, const Tensor& x, const Tensor& w, float eps, Tensor& out);
void add_rms_norm(const OpContext& c, Tensor& residual, const Tensor& x, const Tensor& w, float eps, Tensor& out);
void matmul(const OpContext& c, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out);
void rope(const OpContext& c, Tensor& x, std::span<const int32_t> positions, const RopeParams& p);
void write_kv(const OpContext& c, const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
              Tensor& k_cache, Tensor& v_cache);
void attention(const OpContext& c, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
               const AttentionParams& p, Tensor& out);
void silu_mul(const OpContext& c, const Tensor& gate, const Tensor& up, Tensor& out);
void add(const OpContext& c, const Tensor& a, const Tensor& b, Tensor& out);
void gather_rows(const OpContext& c, const Tensor& x, std::span<const int32_t> rows, Tensor& out);

// Converts a row of n elements of dtype t (f32, f16, bf16 or a quantized type) to f32.
void row_to_f32(const Kernels& k, tensor::DType t, const void* src, float* dst, int64_t n);

}  // namespace keel::backend::cpu
