// CudaBackend::norm_matmul_group, norm_gate_up_silu and norm_qkv_rope_kv: batch-1 decode runs the
// block's pre-norm (residual add + RMSNorm) inside the GEMV that consumes it, SiLU-mul as the gate/up
// GEMV's epilogue and RoPE + the KV-pool write as the Q/K/V GEMV's (gemv.cu, docs/cuda_backend.md
// "Fused decode GEMVs"): 4 launches fewer per layer. Calls the
// GEMV path does not take (prefill, f32 8-bit activation rounding, odd shapes), and every call with
// KEEL_CUDA_FUSED_GEMV=0, run the Backend defaults (the separate ops).
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

bool fused_enabled() {
  static const bool on = env_on("KEEL_CUDA_FUSED_GEMV");
  return on;
}

constexpr size_t kMaxNormSmem = size_t{48} << 10;  // the block's x, in the default shared memory

}  // namespace

unsigned* CudaBackend::norm_counter() {
  if (norm_counter_ == nullptr) {
    norm_counter_ = pool_->allocate(sizeof(unsigned));
    KEEL_CUDA_CHECK(cudaMemsetAsync(norm_counter_.get(), 0, sizeof(unsigned), stream_));
  }
  return static_cast<unsigned*>(norm_counter_.get());
}

bool CudaBackend::gemv_norm(const PreNorm& p, GemvNorm& nm) {
  const Tensor& r = *p.residual;
  const Tensor& h = *p.h;
  const bool ok = fused_enabled() && (r.dtype == DType::kBF16 || r.dtype == DType::kF32) && r.dtype == act_ &&
                  h.dtype == r.dtype && h.numel() == r.numel() && p.w->dtype == DType::kF32 &&
                  p.w->numel() == r.row_len() && aligned16(r.data) && aligned16(h.data) && aligned16(p.w->data) &&
                  (p.add == nullptr || (p.add->dtype == r.dtype && p.add->numel() == r.numel() && aligned16(p.add->data))) &&
                  tensor::row_size_bytes(r.dtype, r.numel()) <= kMaxNormSmem &&
                  (r.dtype != DType::kF32 || !q8_act_);
  if (!ok) return false;
  nm = GemvNorm{.residual = r.data,
                .add = p.add != nullptr ? p.add->data : nullptr,
                .w = static_cast<const float*>(p.w->data),
                .eps = p.eps,
                .h = h.data,
                .counter = norm_counter()};
  return true;
}

void CudaBackend::norm_matmul_group(const PreNorm& p, std::span<const MatmulTarget> targets) {
  GemvNorm nm{};
  // gemv_group_ok on h: the GEMV reads x from shared memory, but h's shape and dtype are x's.
  if (!gemv_group_ok(*p.h, targets) || targets[0].out->dtype != p.h->dtype || !gemv_norm(p, nm)) {
    Backend::norm_matmul_group(p, targets);
    return;
  }
  ScopedOp prof(*prof_, "norm_matmul");
  const int64_t n = p.h->n_rows(), k = p.h->row_len();
  const GemvGroup g = gemv_group(targets);
  const bool f32 = p.h->dtype == DType::kF32;
  if (skip_launch(nm.residual, nm.add, nm.w, nm.eps, nm.h, nm.counter, g.w[0], g.w[1], g.w[2], g.bias[0], g.bias[1],
                  g.bias[2], g.out[0], g.out[1], g.out[2], g.m[0], g.m[1], g.m[2], g.n_seg, n, k, f32)) {
    return;
  }
  launch_gemv_fused(g, nm, GemvEpilogue::kNone, GemvRope{}, static_cast<int>(n), k, f32, stream_);
}

void CudaBackend::norm_gate_up_silu(const PreNorm& p, const Tensor& w_gate, const Tensor& w_up, Tensor& gate,
                                    Tensor& up, Tensor& out) {
  const MatmulTarget t[] = {{&w_gate, nullptr, &gate}, {&w_up, nullptr, &up}};
  GemvNorm nm{};
  if (!gemv_group_ok(*p.h, t) || gate.dtype != p.h->dtype || w_gate.n_rows() != w_up.n_rows() ||
      out.dtype != gate.dtype || out.numel() != gate.numel() || !gemv_norm(p, nm)) {
    Backend::norm_gate_up_silu(p, w_gate, w_up, gate, up, out);
    return;
  }
  ScopedOp prof(*prof_, "norm_gate_up_silu");
  const int64_t n = p.h->n_rows(), k = p.h->row_len();
  GemvGroup g{};
  g.n_seg = 2;
  g.w[0] = w_gate.data;
  g.w[1] = w_up.data;
  g.out[0] = out.data;
  g.m[0] = g.m[1] = w_gate.n_rows();
  const bool f32 = p.h->dtype == DType::kF32;
  if (skip_launch(nm.residual, nm.add, nm.w, nm.eps, nm.h, nm.counter, g.w[0], g.w[1], g.out[0], g.m[0], n, k, f32)) {
    return;
  }
  launch_gemv_fused(g, nm, GemvEpilogue::kSiluMul, GemvRope{}, static_cast<int>(n), k, f32, stream_);
}

void CudaBackend::norm_qkv_rope_kv(const PreNorm& p, std::span<const MatmulTarget> qkv, Tensor& q, Tensor& k,
                                   const Tensor& v, std::span<const int32_t> positions, std::span<const int32_t> slots,
                                   const RopeParams& rope, Tensor& k_cache, Tensor& v_cache) {
  GemvNorm nm{};
  const int64_t n = p.h->n_rows();
  bool ok = qkv.size() == 3 && gemv_group_ok(*p.h, qkv) && q.shape.rank == 3 && k.shape.rank == 3 &&
            v.shape == k.shape && q.shape[0] == n && q.shape[2] == k.shape[2];
  const int64_t hd = ok ? q.shape[2] : 0, n_kv = ok ? k.shape[1] : 0;
  ok = ok && qkv[0].out->data == q.data && qkv[1].out->data == k.data && qkv[2].out->data == v.data &&
       q.numel() == qkv[0].out->numel() && k.numel() == qkv[1].out->numel() && v.numel() == qkv[2].out->numel() &&
       q.dtype == p.h->dtype && k.dtype == q.dtype && v.dtype == q.dtype && qkv[0].out->dtype == q.dtype &&
       hd % 2 == 0 && rope.rot_dims % 2 == 0 && rope.rot_dims <= hd &&
       static_cast<int>(rope.inv_freq.size()) == rope.rot_dims / 2 &&
       static_cast<int64_t>(positions.size()) == n && static_cast<int64_t>(slots.size()) == n &&
       k_cache.dtype == q.dtype && v_cache.dtype == q.dtype && n_kv * hd > 0 && k_cache.numel() % (n_kv * hd) == 0 &&
       v_cache.numel() == k_cache.numel();
  if (ok) {
    const int64_t n_slots = k_cache.numel() / (n_kv * hd);
    for (const int32_t s : slots) ok = ok && s >= 0 && s < n_slots;
  }
  if (!ok || !gemv_norm(p, nm)) {  // (rope_write_kv checks the arguments and reports what is wrong)
    Backend::norm_qkv_rope_kv(p, qkv, q, k, v, positions, slots, rope, k_cache, v_cache);
    return;
  }
  ScopedOp prof(*prof_, "norm_qkv_rope_kv");
  const GemvGroup g = gemv_group(qkv);  // ok: qkv.size() == 3
  staging_->begin_op(positions.size_bytes() + slots.size_bytes() + rope.inv_freq.size_bytes(), 3);
  GemvRope rp{.positions = staging_->stage(positions),
              .slots = staging_->stage(slots),
              .inv_freq = staging_->stage(rope.inv_freq),
              .head_dim = static_cast<int>(hd),
              .rot_dims = rope.rot_dims,
              .n_kv = static_cast<int>(n_kv),
              .neox = rope.style == RopeStyle::kNeox,
              .attn_factor = rope.attn_factor,
              .k_cache = k_cache.data,
              .v_cache = v_cache.data};
  const int64_t kdim = p.h->row_len();
  const bool f32 = p.h->dtype == DType::kF32;
  if (skip_launch(nm.residual, nm.add, nm.w, nm.eps, nm.h, nm.counter, g.w[0], g.w[1], g.w[2], g.bias[0], g.bias[1],
                  g.bias[2], g.out[0], g.out[1], g.out[2], g.m[0], g.m[1], g.m[2], n, kdim, f32, rp.positions,
                  rp.slots, rp.inv_freq, rp.head_dim, rp.rot_dims, rp.n_kv, rp.neox, rp.attn_factor, rp.k_cache,
                  rp.v_cache)) {
    return;
  }
  launch_gemv_fused(g, nm, GemvEpilogue::kRopeKv, rp, static_cast<int>(n), kdim, f32, stream_);
}

}  // namespace keel::backend::cuda
