// Scheduler::export_prefix and import_prefix: a cached prefix's KV out of and into the pool, for KV
// pulls between replicas (sched/kv_prefix.h). Both run on the scheduler thread between steps
// (ThreadedEngine::call): they use the backend, which only that thread may. Rows travel as f32
// through the backend's own gather_rows / copy_to_host and copy_from_host / write_kv, so the pool's
// dtype and device do not matter here.
#include <algorithm>

#include "sched/scheduler.h"

namespace keel::sched {

int64_t Scheduler::kv_floats_per_token() const {
  const model::ModelConfig& c = model_.config();
  return c.n_layers * 2 * c.n_kv_heads * c.head_dim;
}

KvPrefix Scheduler::export_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  KvPrefix out;
  // At most 65,535 rows: the CUDA backend's gather_rows launches one block row per token.
  const auto n_want = static_cast<size_t>(
      std::clamp<int64_t>(std::min<int64_t>(max_tokens, 65535), 0, static_cast<int64_t>(tokens.size())));
  if (n_want == 0) return out;
  cache::PrefixMatch m = tree_.match(tokens.first(n_want));  // a use: the prefix is fresh in the LRU
  const int64_t n = m.prefix_len;
  if (n == 0) return out;
  const model::ModelConfig& c = model_.config();
  const int64_t width = c.n_kv_heads * c.head_dim;
  backend::Backend& be = model_.backend();
  std::vector<int32_t> rows;
  cache::append_slot_indices(m.slots, rows);
  backend::Buffer tmp = be.alloc(kv_.k[0].tensor().dtype, tensor::make_shape({n, width}));
  out.tokens.assign(tokens.begin(), tokens.begin() + n);
  out.data.resize(static_cast<size_t>(c.n_layers * 2 * n * width));
  std::span<float> dst(out.data);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      const backend::Tensor& pool = (kv == 0 ? kv_.k : kv_.v)[static_cast<size_t>(l)].tensor();
      be.gather_rows(pool.reshaped(tensor::make_shape({kv_.n_slots, width})), rows, tmp.tensor());
      be.copy_to_host(tmp.tensor(), dst.subspan(static_cast<size_t>((l * 2 + kv) * n * width), static_cast<size_t>(n * width)));
    }
  }
  stats_.n_exported_tokens += n;
  return out;
}

Result<int64_t> Scheduler::import_prefix(const KvPrefix& p) {
  const int64_t n = p.n_tokens();
  if (n == 0) return int64_t{0};
  if (static_cast<int64_t>(p.data.size()) != n * kv_floats_per_token()) {
    return make_error(ErrorCode::kInvalidArgument, "KV prefix of {} tokens has {} floats, this model needs {}", n,
                      p.data.size(), n * kv_floats_per_token());
  }
  if (n > n_ctx_) return make_error(ErrorCode::kInvalidArgument, "KV prefix of {} tokens exceeds the context ({})", n, n_ctx_);
  for (int32_t t : p.tokens) {
    if (t < 0 || t >= n_vocab_) return make_error(ErrorCode::kInvalidArgument, "KV prefix token {} outside the vocabulary", t);
  }
  std::span<const int32_t> tokens(p.tokens);
  cache::PrefixMatch m = tree_.match(tokens);
  const int64_t have = m.prefix_len;
  if (have >= n) return int64_t{0};
  const int64_t need = n - have;
  tree_.lock(m.node);  // the local part must survive the eviction below
  if (!evict_for(need)) {
    tree_.unlock(m.node);
    return make_error(ErrorCode::kResourceExhausted, "no room for {} imported KV tokens ({} free)", need, pool_.n_free());
  }
  std::vector<cache::SlotId> slots = std::move(m.slots);
  const size_t first_new = slots.size();
  Status got = pool_.alloc(need, slots);
  KEEL_CHECK(got.ok(), "allocating {} slots with {} free: {}", need, pool_.n_free(), got.to_string());
  std::vector<int32_t> rows;
  cache::append_slot_indices(std::span<const cache::SlotId>(slots).subspan(first_new), rows);

  const model::ModelConfig& c = model_.config();
  const int64_t width = c.n_kv_heads * c.head_dim;
  backend::Backend& be = model_.backend();
  const auto shape = tensor::make_shape({need, c.n_kv_heads, c.head_dim});
  backend::Buffer k = be.alloc(kv_.k[0].tensor().dtype, shape);
  backend::Buffer v = be.alloc(kv_.v[0].tensor().dtype, shape);
  std::span<const float> src(p.data);
  auto rows_of = [&](int64_t l, int kv) {
    return src.subspan(static_cast<size_t>((l * 2 + kv) * n * width + have * width), static_cast<size_t>(need * width));
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    be.copy_from_host(rows_of(l, 0), k.tensor());
    be.copy_from_host(rows_of(l, 1), v.tensor());
    be.write_kv(k.tensor(), v.tensor(), rows, kv_.k[static_cast<size_t>(l)].tensor(), kv_.v[static_cast<size_t>(l)].tensor());
  }
  be.synchronize();  // the staging buffers go when this returns
  cache::InsertResult r = tree_.insert(tokens, slots);
  pool_.free(r.duplicate_slots);
  tree_.unlock(m.node);
  const int64_t added = need - static_cast<int64_t>(r.duplicate_slots.size());
  stats_.n_imported_tokens += added;
  return added;
}

}  // namespace keel::sched
