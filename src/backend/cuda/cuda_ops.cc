// CudaBackend's ops: shape/dtype checks and index-range checks on the host (as the CPU backend
// makes them), host spans staged to the device, then one launch (or one cuBLAS call) each.
#include <algorithm>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/attention_tc.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/profile_label.h"
#include "backend/cuda/rms_norm_rows.h"

namespace keel::backend::cuda {
namespace {

ActType act_type(const Tensor& t, const char* op) {
  KEEL_CHECK(t.dtype == DType::kF32 || t.dtype == DType::kBF16, "{}: activations must be f32 or bf16, got {}", op,
             tensor::dtype_name(t.dtype));
  return t.dtype == DType::kF32 ? ActType::kF32 : ActType::kBF16;
}

void check_same(const Tensor& a, const Tensor& b, const char* op) {
  KEEL_CHECK(a.dtype == b.dtype && a.numel() == b.numel(), "{}: {} {} vs {} {}", op, tensor::dtype_name(a.dtype),
             a.shape.to_string(), tensor::dtype_name(b.dtype), b.shape.to_string());
}

// RMSNorm of n rows of d through rms_norm_rows.cu (16-byte vectors) when there are more rows than a
// decode batch of the GEMV path and the operands fit; through rms_norm.cu's kernels otherwise.
// KEEL_CUDA_ROW_KERNELS=0 keeps rms_norm.cu's for every size (before/after runs).
void launch_norm(void* residual, const void* x, const float* w, float eps, int64_t n, int64_t d, void* out, ActType t,
                 cudaStream_t s) {
  static const bool rows_on = env_on("KEEL_CUDA_ROW_KERNELS");
  if (rows_on && n > kGemvMaxTokens && rms_norm_rows_fits(residual, x, w, d, out, t)) {
    launch_rms_norm_rows(residual, x, w, eps, n, d, out, t, s);
  } else {
    launch_rms_norm(residual, x, w, eps, n, d, out, t, s);
  }
}

void check_indices(std::span<const int32_t> idx, int64_t limit, const char* op, const char* what) {
  for (int32_t i : idx) KEEL_CHECK(i >= 0 && i < limit, "{}: {} {} outside [0, {})", op, what, i, limit);
}

}  // namespace

void CudaBackend::embed_rows(const Tensor& table, const int32_t* ids, const int32_t* from, const int32_t* sampled,
                             int64_t n, Tensor& out, ActType ot) {
  if (table.dtype == DType::kF32) {
    launch_embed_f32_table(static_cast<const float*>(table.data), ids, from, sampled, n, table.row_len(), out.data, ot,
                           stream_);
  } else {
    launch_embed(table.data, ids, from, sampled, n, table.row_len(), out.data, ot, stream_);
  }
}

void CudaBackend::embed(const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  ScopedOp prof(*prof_, "embed");
  const int64_t d = table.row_len();
  KEEL_CHECK(table.dtype == DType::kBF16 || table.dtype == DType::kF32,
             "embed: table must be an uploaded (bf16 or f32) weight");
  KEEL_CHECK(out.numel() == static_cast<int64_t>(ids.size()) * d, "embed: out {} for {} ids of width {}",
             out.shape.to_string(), ids.size(), d);
  check_indices(ids, table.n_rows(), "embed", "token id");
  staging_->begin_op(ids.size_bytes(), 1);
  const int32_t* ids_d = staging_->stage(ids);
  const ActType ot = act_type(out, "embed");
  if (skip_launch(table.data, ids_d, ids.size(), d, out.data, ot)) return;
  embed_rows(table, ids_d, nullptr, nullptr, static_cast<int64_t>(ids.size()), out, ot);
}

void CudaBackend::embed_sampled(const Tensor& table, std::span<const int32_t> ids, std::span<const int32_t> from_sampled,
                                Tensor& out) {
  ScopedOp prof(*prof_, "embed");
  const int64_t d = table.row_len();
  KEEL_CHECK(table.dtype == DType::kBF16 || table.dtype == DType::kF32,
             "embed: table must be an uploaded (bf16 or f32) weight");
  KEEL_CHECK(out.numel() == static_cast<int64_t>(ids.size()) * d, "embed: out {} for {} ids of width {}",
             out.shape.to_string(), ids.size(), d);
  KEEL_CHECK(from_sampled.size() == ids.size(), "embed_sampled: {} from_sampled for {} ids", from_sampled.size(),
             ids.size());
  check_indices(ids, table.n_rows(), "embed", "token id");
  for (int32_t k : from_sampled) {
    KEEL_CHECK(k >= -1 && k < last_sampled_rows_, "embed_sampled: sampled row {} of the last {} sampled", k,
               last_sampled_rows_);
  }
  staging_->begin_op(ids.size_bytes() + from_sampled.size_bytes(), 2);
  const int32_t* ids_d = staging_->stage(ids);
  const int32_t* from_d = staging_->stage(from_sampled);
  const auto* sampled_d = static_cast<const int32_t*>(sample_tokens_.get());
  const ActType ot = act_type(out, "embed");
  if (skip_launch(table.data, ids_d, from_d, sampled_d, ids.size(), d, out.data, ot)) return;
  embed_rows(table, ids_d, from_d, sampled_d, static_cast<int64_t>(ids.size()), out, ot);
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor& out) {
  ScopedOp prof(*prof_, "rms_norm");
  check_same(x, out, "rms_norm");
  KEEL_CHECK(w.dtype == DType::kF32 && w.numel() == x.row_len(), "rms_norm: weight {} for rows of {}",
             w.shape.to_string(), x.row_len());
  if (skip_launch(x.data, w.data, eps, x.n_rows(), x.row_len(), out.data, x.dtype)) return;
  // Without a residual to update the kernel only reads `residual`.
  launch_norm(const_cast<void*>(x.data), nullptr, static_cast<const float*>(w.data), eps, x.n_rows(), x.row_len(),
              out.data, act_type(x, "rms_norm"), stream_);
}

void CudaBackend::add_rms_norm(Tensor& residual, const Tensor& x, const Tensor& w, float eps, Tensor& out) {
  ScopedOp prof(*prof_, profile_label("add_rms_norm", x.n_rows(), 0, 0));
  check_same(residual, x, "add_rms_norm");
  check_same(residual, out, "add_rms_norm");
  KEEL_CHECK(w.dtype == DType::kF32 && w.numel() == x.row_len(), "add_rms_norm: weight {} for rows of {}",
             w.shape.to_string(), x.row_len());
  if (skip_launch(residual.data, x.data, w.data, eps, x.n_rows(), x.row_len(), out.data, x.dtype)) return;
  launch_norm(residual.data, x.data, static_cast<const float*>(w.data), eps, x.n_rows(), x.row_len(), out.data,
              act_type(x, "add_rms_norm"), stream_);
}

void CudaBackend::rope(Tensor& x, std::span<const int32_t> positions, const RopeParams& p) {
  ScopedOp prof(*prof_, "rope");
  KEEL_CHECK(x.shape.rank == 3, "rope: x must be [n, n_heads, head_dim], is {}", x.shape.to_string());
  const int64_t n = x.shape[0], head_dim = x.shape[2];
  KEEL_CHECK(static_cast<int64_t>(positions.size()) == n, "rope: {} positions for {} tokens", positions.size(), n);
  KEEL_CHECK(p.rot_dims % 2 == 0 && p.rot_dims <= head_dim && static_cast<int>(p.inv_freq.size()) == p.rot_dims / 2,
             "rope: rot_dims {} with {} frequencies for head_dim {}", p.rot_dims, p.inv_freq.size(), head_dim);
  staging_->begin_op(positions.size_bytes() + p.inv_freq.size_bytes(), 2);
  const int32_t* pos = staging_->stage(positions);
  const float* inv_freq = staging_->stage(p.inv_freq);
  if (skip_launch(x.data, pos, inv_freq, n, x.shape[1], head_dim, p.rot_dims, p.style, p.attn_factor, x.dtype)) return;
  launch_rope(x.data, pos, inv_freq,
              RopeLaunch{.n = n, .n_heads = x.shape[1], .head_dim = head_dim, .rot_dims = p.rot_dims,
                         .neox = p.style == RopeStyle::kNeox, .attn_factor = p.attn_factor},
              act_type(x, "rope"), stream_);
}

void CudaBackend::write_kv(const Tensor& k, const Tensor& v, std::span<const int32_t> slots, Tensor& k_cache,
                           Tensor& v_cache) {
  ScopedOp prof(*prof_, "write_kv");
  const auto n = static_cast<int64_t>(slots.size());
  check_same(k, v, "write_kv");
  KEEL_CHECK(n > 0 && k.numel() % n == 0, "write_kv: k {} for {} slots", k.shape.to_string(), n);
  const int64_t w = k.numel() / n;
  KEEL_CHECK(k_cache.dtype == k.dtype && v_cache.dtype == k.dtype && k_cache.numel() % w == 0 &&
                 v_cache.numel() == k_cache.numel(),
             "write_kv: caches {} {} for rows of {} {}", tensor::dtype_name(k_cache.dtype), k_cache.shape.to_string(), w,
             tensor::dtype_name(k.dtype));
  check_indices(slots, k_cache.numel() / w, "write_kv", "slot");
  staging_->begin_op(slots.size_bytes(), 1);
  const int32_t* slots_d = staging_->stage(slots);
  if (skip_launch(k.data, v.data, slots_d, n, w, k_cache.data, v_cache.data, k.dtype)) return;
  launch_write_kv(k.data, v.data, slots_d, n, w, k_cache.data, v_cache.data, act_type(k, "write_kv"),
                  stream_);
}

void CudaBackend::rope_write_kv(Tensor& q, Tensor& k, const Tensor& v, std::span<const int32_t> positions,
                                std::span<const int32_t> slots, const RopeParams& p, Tensor& k_cache, Tensor& v_cache) {
  ScopedOp prof(*prof_, profile_label("rope_write_kv", q.shape[0], 0, 0));
  KEEL_CHECK(q.shape.rank == 3 && k.shape.rank == 3 && v.shape == k.shape && q.shape[0] == k.shape[0] &&
                 q.shape[2] == k.shape[2] && q.dtype == k.dtype && v.dtype == k.dtype,
             "rope_write_kv: q {} k {} v {} must be [n, heads, head_dim] of one dtype", q.shape.to_string(),
             k.shape.to_string(), v.shape.to_string());
  const int64_t n = q.shape[0], n_kv = k.shape[1], head_dim = q.shape[2];
  KEEL_CHECK(static_cast<int64_t>(positions.size()) == n && static_cast<int64_t>(slots.size()) == n,
             "rope_write_kv: {} positions and {} slots for {} tokens", positions.size(), slots.size(), n);
  KEEL_CHECK(head_dim % 2 == 0 && p.rot_dims % 2 == 0 && p.rot_dims <= head_dim &&
                 static_cast<int>(p.inv_freq.size()) == p.rot_dims / 2,
             "rope_write_kv: rot_dims {} with {} frequencies for head_dim {}", p.rot_dims, p.inv_freq.size(), head_dim);
  const int64_t w = n_kv * head_dim;
  KEEL_CHECK(k_cache.dtype == k.dtype && v_cache.dtype == k.dtype && w > 0 && k_cache.numel() % w == 0 &&
                 v_cache.numel() == k_cache.numel(),
             "rope_write_kv: caches {} {} for rows of {} {}", tensor::dtype_name(k_cache.dtype),
             k_cache.shape.to_string(), w, tensor::dtype_name(k.dtype));
  check_indices(slots, k_cache.numel() / w, "rope_write_kv", "slot");
  staging_->begin_op(positions.size_bytes() + slots.size_bytes() + p.inv_freq.size_bytes(), 3);
  const int32_t* pos = staging_->stage(positions);
  const int32_t* slots_d = staging_->stage(slots);
  const float* inv_freq = staging_->stage(p.inv_freq);
  if (skip_launch(q.data, k.data, v.data, pos, slots_d, inv_freq, n, q.shape[1], n_kv, head_dim, p.rot_dims, p.style,
                  p.attn_factor, k_cache.data, v_cache.data, q.dtype)) {
    return;
  }
  launch_rope_write_kv(q.data, k.data, v.data, pos, slots_d, inv_freq,
                       RopeLaunch{.n = n, .n_heads = q.shape[1], .head_dim = head_dim, .rot_dims = p.rot_dims,
                                  .neox = p.style == RopeStyle::kNeox, .attn_factor = p.attn_factor},
                       n_kv, k_cache.data, v_cache.data, act_type(q, "rope_write_kv"), stream_);
}

float* CudaBackend::attention_partials(size_t n_floats) {
  if (n_floats > partials_floats_) {
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old scratch may still be in use
    partials_floats_ = std::max(n_floats, 2 * partials_floats_);
    partials_ = pool_->allocate(partials_floats_ * sizeof(float));
  }
  return static_cast<float*>(partials_.get());
}

unsigned* CudaBackend::split_counters() {
  if (split_counters_ == nullptr) {
    const size_t bytes = sizeof(unsigned) * kSplitCounters * static_cast<size_t>(n_sm_);
    split_counters_ = pool_->allocate(bytes);
    KEEL_CUDA_CHECK(cudaMemsetAsync(split_counters_.get(), 0, bytes, stream_));
  }
  return static_cast<unsigned*>(split_counters_.get());
}

void CudaBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const AttentionParams& p,
                            Tensor& out) {
  ScopedOp prof(*prof_, profile_label("attention", q.shape[0], 0, 0));
  KEEL_CHECK(q.shape.rank == 3 && out.shape == q.shape && out.dtype == q.dtype,
             "attention: q {} out {} must be [n, n_heads, head_dim]", q.shape.to_string(), out.shape.to_string());
  KEEL_CHECK(k_cache.shape.rank == 3 && k_cache.shape == v_cache.shape && k_cache.dtype == q.dtype &&
                 v_cache.dtype == q.dtype,
             "attention: caches must be [n_slots, n_kv_heads, head_dim] of q's dtype");
  const int64_t n = q.shape[0], n_heads = q.shape[1], hd = q.shape[2], n_kv = k_cache.shape[1];
  KEEL_CHECK(k_cache.shape[2] == hd && n_kv > 0 && n_heads % n_kv == 0 && hd <= kAttnMaxHeadDim,
             "attention: {} heads over {} kv heads, head_dim {} vs {} (at most {})", n_heads, n_kv, hd,
             k_cache.shape[2], kAttnMaxHeadDim);
  size_t ctx_bytes = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    KEEL_CHECK(sq.n_q >= 0 && static_cast<int64_t>(sq.ctx_slots.size()) >= sq.n_q && sq.q_begin >= 0 &&
                   sq.q_begin + sq.n_q <= n,
               "attention: sequence {} has {} new tokens at {} and {} context slots", s, sq.n_q, sq.q_begin,
               sq.ctx_slots.size());
    // A list staged earlier in this step (the same one for every layer) was checked then.
    if (!staging_->holds(sq.ctx_slots.data(), sq.ctx_slots.size_bytes())) {
      check_indices(sq.ctx_slots, k_cache.shape[0], "attention", "slot");
    }
    ctx_bytes += sq.ctx_slots.size_bytes();
  }
  plan_attention(p, static_cast<int>(n_heads), static_cast<int>(n_kv), static_cast<int>(hd), q.dtype == DType::kBF16,
                 n_sm_, graph_plan_, plan_);
  const AttentionPlan& plan = plan_;
  if (plan.items.empty()) return;
  std::vector<AttnSeqDev>& seqs = plan_seqs_;
  seqs.resize(p.seqs.size());
  staging_->begin_op(ctx_bytes + seqs.size() * sizeof(AttnSeqDev) +
                         (plan.items.size() + plan.decode_items.size()) * sizeof(AttnItem) + 4,
                     p.seqs.size() + 4);
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const AttnSeq& sq = p.seqs[s];
    // In a graph step the context lists (their sizes change every step) go to the staging tail, so
    // the spans the kernels' arguments point at keep their offsets; the kernels find the lists
    // through the per-sequence descriptors, which are data.
    const auto* ctx = static_cast<const int32_t*>(graph_plan_ ? staging_->stage_tail(sq.ctx_slots.data(),
                                                                                    sq.ctx_slots.size_bytes())
                                                              : staging_->stage(sq.ctx_slots));
    seqs[s] = {.ctx = ctx, .q_begin = sq.q_begin, .n_q = sq.n_q,
               .n_ctx = static_cast<int32_t>(sq.ctx_slots.size()), .pad = 0};
  }
  AttnLaunch l{.q = q.data, .k_cache = k_cache.data, .v_cache = v_cache.data, .out = out.data,
               .items = staging_->stage(std::span<const AttnItem>(plan.items)),
               .seqs = staging_->stage(std::span<const AttnSeqDev>(seqs)),
               .n_items = static_cast<int>(plan.items.size()), .n_tokens = n, .n_heads = static_cast<int>(n_heads),
               .n_kv = static_cast<int>(n_kv), .head_dim = static_cast<int>(hd), .scale = p.scale,
               .n_splits = plan.grid_splits, .split_len = plan.split_len,
               .split_len_dev = graph_plan_ ? staging_->stage(std::span<const int32_t>(&plan_.split_len, 1)) : nullptr,
               .partial_acc = nullptr, .partial_ml = nullptr, .split_counters = nullptr,
               .tensor_cores = plan.tensor_cores, .decode = plan.decode};
  // The merge scratch of a split launch: `rows` partial rows (accumulators, then max and sum). Keys are
  // split only while items < 2 x SMs, so rows = splits x (query rows) < 64 x SMs (each item holds at
  // most kAttnRowsPerBlock rows and splits <= 2 x SMs / items + 1; the decode plans keep splits x items
  // x group <= 64 x SMs themselves): the scratch is allocated at that bound once and never moves under a
  // captured graph. The decode kernel's last split block merges, counting splits in split_counters.
  auto bind_split_scratch = [&](AttnLaunch& x, size_t rows) {
    const size_t bound = static_cast<size_t>(4 * n_sm_ * kAttnRowsPerBlock);
    float* scratch = attention_partials(std::max(rows, bound) * (static_cast<size_t>(hd) + 2));
    x.partial_acc = scratch;
    x.partial_ml = scratch + rows * static_cast<size_t>(hd);
    if (x.decode) {
      KEEL_CHECK(x.n_items <= kSplitCounters * n_sm_, "attention: {} split items", x.n_items);
      x.split_counters = split_counters();
    }
  };
  if (plan.grid_splits > 1) {
    bind_split_scratch(l, static_cast<size_t>(plan.grid_splits) * static_cast<size_t>(n * n_heads));
  }
  // The decode rows of a mixed batch (plan_attention): the decode kernel over the same sequence
  // descriptors, one split each, after the tensor-core items.
  const AttnItem* decode_items =
      plan.decode_items.empty() ? nullptr : staging_->stage(std::span<const AttnItem>(plan.decode_items));
  const ActType at = act_type(q, "attention");
  if (skip_launch(l.q, l.k_cache, l.v_cache, l.out, l.items, l.seqs, l.n_items, l.n_tokens, l.n_heads, l.n_kv,
                  l.head_dim, l.scale, l.n_splits, l.split_len_dev, l.partial_acc, l.partial_ml, l.split_counters,
                  l.tensor_cores, l.decode, plan.tc_rows, decode_items, plan.decode_items.size(), at)) {
    return;
  }
  if (!plan.tensor_cores) {
    launch_attention(l, at, stream_);
    return;
  }
  // Mixed mode 2: the decode rows beside the tensor-core items, on a second stream (their outputs are
  // other rows; both only read q and the caches, written before): the bandwidth-bound decode blocks fill
  // the SMs the compute-bound tensor-core blocks leave, and its tail. Joined back before the next op.
  const bool beside = decode_items != nullptr && attention_mixed_mode() == 2;
  if (beside) {
    if (aux_stream_ == nullptr) {
      KEEL_CUDA_CHECK(cudaStreamCreateWithFlags(&aux_stream_, cudaStreamNonBlocking));
      KEEL_CUDA_CHECK(cudaEventCreateWithFlags(&fork_ev_, cudaEventDisableTiming));
      KEEL_CUDA_CHECK(cudaEventCreateWithFlags(&join_ev_, cudaEventDisableTiming));
    }
    KEEL_CUDA_CHECK(cudaEventRecord(fork_ev_, stream_));
    KEEL_CUDA_CHECK(cudaStreamWaitEvent(aux_stream_, fork_ev_, 0));
  }
  launch_attention_tc(l, plan.tc_rows, stream_);
  if (decode_items == nullptr) return;
  AttnLaunch d = l;
  d.items = decode_items;
  d.n_items = static_cast<int>(plan.decode_items.size());
  d.n_splits = plan.decode_splits;
  d.split_len = plan.decode_split_len;
  d.tensor_cores = false;
  d.decode = true;
  if (plan.decode_splits > 1) {  // partial rows (split x item) x group: within the bound (decode_splits)
    bind_split_scratch(
        d, static_cast<size_t>(plan.decode_splits) * plan.decode_items.size() * static_cast<size_t>(n_heads / n_kv));
  }
  launch_attention(d, at, beside ? aux_stream_ : stream_);
  if (beside) {
    KEEL_CUDA_CHECK(cudaEventRecord(join_ev_, aux_stream_));
    KEEL_CUDA_CHECK(cudaStreamWaitEvent(stream_, join_ev_, 0));
  }
}

void CudaBackend::silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  ScopedOp prof(*prof_, profile_label("silu_mul", gate.n_rows(), 0, 0));
  check_same(gate, up, "silu_mul");
  check_same(gate, out, "silu_mul");
  if (skip_launch(gate.data, up.data, out.data, gate.numel(), gate.dtype)) return;
  launch_silu_mul(gate.data, up.data, out.data, gate.numel(), act_type(gate, "silu_mul"), stream_);
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& out) {
  ScopedOp prof(*prof_, "add");
  check_same(a, b, "add");
  check_same(a, out, "add");
  if (skip_launch(a.data, b.data, out.data, a.numel(), a.dtype)) return;
  launch_add(a.data, b.data, out.data, a.numel(), act_type(a, "add"), stream_);
}

void CudaBackend::gather_rows(const Tensor& x, std::span<const int32_t> rows, Tensor& out) {
  ScopedOp prof(*prof_, "gather_rows");
  const int64_t d = x.row_len();
  KEEL_CHECK(out.dtype == x.dtype && out.numel() == static_cast<int64_t>(rows.size()) * d,
             "gather_rows: out {} for {} rows of {}", out.shape.to_string(), rows.size(), d);
  KEEL_CHECK(rows.size() <= 65535, "gather_rows: {} rows (at most 65535)", rows.size());
  check_indices(rows, x.n_rows(), "gather_rows", "row");
  staging_->begin_op(rows.size_bytes(), 1);
  const int32_t* rows_d = staging_->stage(rows);
  const auto row_bytes = static_cast<int64_t>(tensor::row_size_bytes(x.dtype, d));
  if (skip_launch(x.data, rows_d, rows.size(), row_bytes, out.data)) return;
  launch_gather_rows(x.data, rows_d, static_cast<int64_t>(rows.size()), row_bytes, out.data, stream_);
}

}  // namespace keel::backend::cuda
