#include "model/arch/llama.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "base/check.h"
#include "model/batch_check.h"
#include "model/rope.h"

namespace keel::model {
namespace {

using backend::Buffer;
using backend::Tensor;
using tensor::make_shape;

struct LayerBuffers {
  Buffer attn_norm, wq, wk, wv, bq, bk, bv, q_norm, k_norm, wo, ffn_norm, w_gate, w_up, w_down;
};

// Activations for up to `cap_tokens` tokens and `cap_rows` logit rows; grown on demand, never
// shrunk. n = tokens in the step, r = logit rows, d = d_model, f = ffn_dim, V = vocab_size.
struct Scratch {
  int64_t cap_tokens = 0;
  int64_t cap_rows = 0;
  Buffer x;         // [n, d] residual stream
  Buffer h;         // [n, d] normed input of the current sub-block
  Buffer q_raw;     // [n, n_heads * head_dim] before the q norm (qk_norm only)
  Buffer k_raw;     // [n, n_kv_heads * head_dim] before the k norm (qk_norm only)
  Buffer q;         // [n, n_heads * head_dim]
  Buffer k;         // [n, n_kv_heads * head_dim]
  Buffer v;         // [n, n_kv_heads * head_dim]
  Buffer attn;      // [n, n_heads * head_dim]
  Buffer proj;      // [n, d] attention output projection, then the MLP output
  Buffer gate;      // [n, f]
  Buffer up;        // [n, f]
  Buffer act;       // [n, f]
  Buffer rows_x;    // [r, d]
  Buffer rows_add;  // [r, d]
  Buffer rows_h;    // [r, d]
  Buffer logits;    // [r, V]
};

class LlamaModel final : public Model {
 public:
  LlamaModel(ModelConfig config, ModelWeights weights, std::unique_ptr<backend::Backend> backend,
             std::shared_ptr<const void> source)
      : config_(std::move(config)),
        host_(std::move(weights)),
        backend_(std::move(backend)),
        source_(std::move(source)) {
    rope_ = compute_rope(config_.rope, config_.head_dim, host_.rope_freq_factors);
  }

  Status upload();

  const ModelConfig& config() const override { return config_; }
  backend::Backend& backend() override { return *backend_; }
  Result<KvStorage> make_kv_storage(int64_t n_slots) override;
  Status forward(const Batch& batch, KvStorage& kv, std::span<float> logits) override;
  Result<Tensor> forward_on_device(const Batch& batch, KvStorage& kv) override;
  Result<int64_t> capture_decode_graphs(KvStorage& kv, int64_t max_seqs, int64_t max_tokens, int64_t max_ctx) override;
  void set_dump_hook(DumpHook hook) override { dump_ = std::move(hook); }

 private:
  void ensure_scratch(int64_t n_tokens, int64_t n_rows);
  void run_attention(int layer, const backend::Backend::PreNorm& norm, const Batch& b,
                     std::span<const backend::AttnSeq> seqs, KvStorage& kv, int64_t n);
  void run_mlp(int layer, const backend::Backend::PreNorm& norm, int64_t n);
  backend::Tensor run_head(const Batch& b, int64_t n);
  backend::Tensor issue_forward(const Batch& b, std::span<const backend::AttnSeq> seqs, KvStorage& kv);
  static bool pad_decode_step(const Batch& b, int64_t bucket, Batch& padded, std::vector<backend::AttnSeq>& seqs);
  Tensor act(Buffer& buf, int64_t n) { return buf.tensor().rows(0, n); }
  void dump(std::string_view name, int layer, const Tensor& t) {
    if (dump_) dump_(name, layer, t);
  }
  const Tensor& output_weight() const {
    return config_.tied_embeddings ? token_embd_.tensor() : output_.tensor();
  }

  ModelConfig config_;
  ModelWeights host_;
  std::unique_ptr<backend::Backend> backend_;
  std::shared_ptr<const void> source_;
  RopeTable rope_;
  Buffer token_embd_, output_norm_, output_;
  std::vector<LayerBuffers> layers_;
  Scratch s_;
  DumpHook dump_;
};

Status LlamaModel::upload() {
  backend::Backend& be = *backend_;
  auto up = [&be](const tensor::TensorView& v, Buffer& dst) -> Status {
    if (v.data == nullptr) return {};
    KEEL_ASSIGN_OR_RETURN(dst, be.upload_weight(v));
    return {};
  };
  KEEL_RETURN_IF_ERROR(up(host_.token_embd, token_embd_).with_context("token_embd"));
  KEEL_RETURN_IF_ERROR(up(host_.output_norm, output_norm_).with_context("output_norm"));
  if (!config_.tied_embeddings) KEEL_RETURN_IF_ERROR(up(host_.output, output_).with_context("output"));
  layers_.resize(host_.layers.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerWeights& w = host_.layers[l];
    LayerBuffers& b = layers_[l];
    const std::pair<const tensor::TensorView*, Buffer*> all[] = {
        {&w.attn_norm, &b.attn_norm}, {&w.wq, &b.wq},         {&w.wk, &b.wk},         {&w.wv, &b.wv},
        {&w.bq, &b.bq},               {&w.bk, &b.bk},         {&w.bv, &b.bv},         {&w.q_norm, &b.q_norm},
        {&w.k_norm, &b.k_norm},       {&w.wo, &b.wo},         {&w.ffn_norm, &b.ffn_norm}, {&w.w_gate, &b.w_gate},
        {&w.w_up, &b.w_up},           {&w.w_down, &b.w_down},
    };
    for (const auto& [view, buf] : all) {
      KEEL_RETURN_IF_ERROR(up(*view, *buf).with_context(fmt::format("layer {}", l)));
    }
  }
  return {};
}

Result<KvStorage> LlamaModel::make_kv_storage(int64_t n_slots) {
  if (n_slots <= 0) return make_error(ErrorCode::kInvalidArgument, "KV storage needs n_slots > 0, got {}", n_slots);
  KvStorage kv;
  kv.n_slots = n_slots;
  const auto shape = make_shape({n_slots, config_.n_kv_heads, config_.head_dim});
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    kv.k.push_back(backend_->alloc(backend_->activation_dtype(), shape));
    kv.v.push_back(backend_->alloc(backend_->activation_dtype(), shape));
  }
  return kv;
}

void LlamaModel::ensure_scratch(int64_t n, int64_t r) {
  const tensor::DType dt = backend_->activation_dtype();
  const ModelConfig& c = config_;
  if (n > s_.cap_tokens) {
    const int64_t cap = std::max(n, 2 * s_.cap_tokens);
    auto mk = [&](int64_t width) { return backend_->alloc(dt, make_shape({cap, width})); };
    s_.x = mk(c.d_model);
    s_.h = mk(c.d_model);
    if (c.qk_norm) {
      s_.q_raw = mk(c.n_heads * c.head_dim);
      s_.k_raw = mk(c.n_kv_heads * c.head_dim);
    }
    s_.q = mk(c.n_heads * c.head_dim);
    s_.k = mk(c.n_kv_heads * c.head_dim);
    s_.v = mk(c.n_kv_heads * c.head_dim);
    s_.attn = mk(c.n_heads * c.head_dim);
    s_.proj = mk(c.d_model);
    s_.gate = mk(c.ffn_dim);
    s_.up = mk(c.ffn_dim);
    s_.act = mk(c.ffn_dim);
    s_.cap_tokens = cap;
  }
  if (r > s_.cap_rows) {
    const int64_t cap = std::max(r, 2 * s_.cap_rows);
    s_.rows_x = backend_->alloc(dt, make_shape({cap, c.d_model}));
    s_.rows_add = backend_->alloc(dt, make_shape({cap, c.d_model}));
    s_.rows_h = backend_->alloc(dt, make_shape({cap, c.d_model}));
    // f32 logits on every backend: bf16 would round near-tied top tokens together.
    s_.logits = backend_->alloc(tensor::DType::kF32, make_shape({cap, c.vocab_size}));
    s_.cap_rows = cap;
  }
}

// The pre-norm into h -> q, k, v (+bias, +q/k norm, RoPE) -> K/V into the pool -> attention -> o_proj
// into proj. Without q/k norms the norm, Q/K/V, RoPE and the pool write are one op (one launch for
// decode on cuda); with them the norm runs inside the Q/K/V matmul op.
void LlamaModel::run_attention(int l, const backend::Backend::PreNorm& norm, const Batch& b,
                               std::span<const backend::AttnSeq> seqs, KvStorage& kv, int64_t n) {
  const ModelConfig& c = config_;
  LayerBuffers& w = layers_[static_cast<size_t>(l)];
  backend::Backend& be = *backend_;
  Tensor h = act(s_.h, n);
  Tensor q = act(s_.q, n), k = act(s_.k, n), v = act(s_.v, n);
  auto bias = [](const Buffer& buf) { return buf.empty() ? nullptr : &buf.tensor(); };
  Tensor q3 = q.reshaped(make_shape({n, c.n_heads, c.head_dim}));
  Tensor k3 = k.reshaped(make_shape({n, c.n_kv_heads, c.head_dim}));
  Tensor v3 = v.reshaped(make_shape({n, c.n_kv_heads, c.head_dim}));
  const backend::RopeParams rp{.style = c.rope.style,
                               .rot_dims = static_cast<int>(c.head_dim),
                               .inv_freq = rope_.inv_freq,
                               .attn_factor = rope_.attn_factor};
  Tensor& k_cache = kv.k[static_cast<size_t>(l)].tensor();
  Tensor& v_cache = kv.v[static_cast<size_t>(l)].tensor();
  // Q, K and V from one read of h (with q/k norms, into the raw buffers the norms read).
  Tensor q_out = c.qk_norm ? act(s_.q_raw, n) : q, k_out = c.qk_norm ? act(s_.k_raw, n) : k;
  const backend::Backend::MatmulTarget t[] = {{&w.wq.tensor(), bias(w.bq), &q_out},
                                              {&w.wk.tensor(), bias(w.bk), &k_out},
                                              {&w.wv.tensor(), bias(w.bv), &v}};
  if (c.qk_norm) {
    be.norm_matmul_group(norm, t);
    Tensor qh = q.reshaped(make_shape({n * c.n_heads, c.head_dim}));
    Tensor kh = k.reshaped(make_shape({n * c.n_kv_heads, c.head_dim}));
    be.rms_norm(q_out.reshaped(qh.shape), w.q_norm.tensor(), c.rms_eps, qh);
    be.rms_norm(k_out.reshaped(kh.shape), w.k_norm.tensor(), c.rms_eps, kh);
    be.rope_write_kv(q3, k3, v3, b.positions, b.slots, rp, k_cache, v_cache);
  } else {
    be.norm_qkv_rope_kv(norm, t, q3, k3, v3, b.positions, b.slots, rp, k_cache, v_cache);
  }
  dump("attn_norm", l, h);
  dump("Qcur", l, q3);
  dump("Kcur", l, k3);
  dump("Vcur", l, v3);
  Tensor o3 = act(s_.attn, n).reshaped(make_shape({n, c.n_heads, c.head_dim}));
  const backend::AttentionParams ap{.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim)), .seqs = seqs};
  be.attention(q3, k_cache, v_cache, ap, o3);
  Tensor o = act(s_.attn, n);
  dump("kqv_out", l, o);
  Tensor proj = act(s_.proj, n);
  be.matmul(o, w.wo.tensor(), nullptr, proj);
  dump("attn_out", l, proj);
}

// The pre-norm into h -> silu(gate) * up (one op: one launch for decode on cuda) -> down into proj.
void LlamaModel::run_mlp(int l, const backend::Backend::PreNorm& norm, int64_t n) {
  LayerBuffers& w = layers_[static_cast<size_t>(l)];
  backend::Backend& be = *backend_;
  Tensor gate = act(s_.gate, n), upv = act(s_.up, n), a = act(s_.act, n);
  be.norm_gate_up_silu(norm, w.w_gate.tensor(), w.w_up.tensor(), gate, upv, a);
  dump("ffn_inp", l, *norm.residual);
  dump("ffn_norm", l, *norm.h);
  dump("ffn_act", l, a);
  Tensor proj = act(s_.proj, n);
  be.matmul(a, w.w_down.tensor(), nullptr, proj);
  dump("ffn_out", l, proj);
}

// Only the logit rows go through the last residual add, the final norm and the LM head. Returns the
// logits tensor [logit_rows, V] on the backend.
Tensor LlamaModel::run_head(const Batch& b, int64_t n) {
  backend::Backend& be = *backend_;
  const auto r = static_cast<int64_t>(b.logit_rows.size());
  Tensor rx = act(s_.rows_x, r), ra = act(s_.rows_add, r), rh = act(s_.rows_h, r), lg = act(s_.logits, r);
  bool all_rows = r == n;  // every token's row in order (decode steps): no gather
  for (int64_t i = 0; all_rows && i < r; ++i) all_rows = b.logit_rows[static_cast<size_t>(i)] == i;
  if (all_rows) {
    rx = act(s_.x, n);  // the residual is not read after the head: updated in place
    ra = act(s_.proj, n);
  } else {
    be.gather_rows(act(s_.x, n), b.logit_rows, rx);
    be.gather_rows(act(s_.proj, n), b.logit_rows, ra);
  }
  be.add_rms_norm(rx, ra, output_norm_.tensor(), config_.rms_eps, rh);
  dump("result_norm", -1, rh);
  be.matmul(rh, output_weight(), nullptr, lg);
  dump("result_output", -1, lg);
  return lg;
}

// Every op of one forward of b (no copy to the host, no synchronize: it may be a graph capture or
// replay). Returns the logits tensor (empty without logit rows).
Tensor LlamaModel::issue_forward(const Batch& b, std::span<const backend::AttnSeq> seqs, KvStorage& kv) {
  const ModelConfig& c = config_;
  const int64_t n = b.n_tokens();
  backend::Backend& be = *backend_;
  Tensor x = act(s_.x, n), h = act(s_.h, n), proj = act(s_.proj, n);
  if (b.from_sampled.empty()) {
    be.embed(token_embd_.tensor(), b.tokens, x);
  } else {
    be.embed_sampled(token_embd_.tensor(), b.tokens, b.from_sampled, x);
  }
  dump("inp_embd", -1, x);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerBuffers& w = layers_[static_cast<size_t>(l)];
    // The residual add of the previous block's MLP is fused into this block's first norm.
    const backend::Backend::PreNorm attn_norm{
        .residual = &x, .add = l == 0 ? nullptr : &proj, .w = &w.attn_norm.tensor(), .eps = c.rms_eps, .h = &h};
    run_attention(l, attn_norm, b, seqs, kv, n);
    const backend::Backend::PreNorm ffn_norm{
        .residual = &x, .add = &proj, .w = &w.ffn_norm.tensor(), .eps = c.rms_eps, .h = &h};
    run_mlp(l, ffn_norm, n);
  }
  return b.logit_rows.empty() ? Tensor{} : run_head(b, n);
}

// A decode step (one new token per sequence) padded to `bucket` tokens for a graph replay: the pad
// tokens repeat the last sequence (same token, position, KV slot and context), so they write the same
// K/V values to the same slot; logit rows are padded to `bucket` rows (the pad rows come after the
// real ones and are not copied back). False when b is not a decode step.
bool LlamaModel::pad_decode_step(const Batch& b, int64_t bucket, Batch& padded, std::vector<backend::AttnSeq>& seqs) {
  const int64_t n = b.n_tokens();
  if (b.seqs.empty() || b.logit_rows.empty() || static_cast<int64_t>(b.seqs.size()) != n || bucket < n) return false;
  for (const BatchSeq& s : b.seqs) {
    if (s.n_q != 1) return false;
  }
  padded.tokens = b.tokens;
  padded.positions = b.positions;
  padded.slots = b.slots;
  padded.logit_rows = b.logit_rows;
  padded.from_sampled = b.from_sampled;
  const BatchSeq& last = b.seqs.back();
  for (int64_t i = n; i < bucket; ++i) {
    if (!b.from_sampled.empty()) padded.from_sampled.push_back(b.from_sampled[static_cast<size_t>(last.q_begin)]);
    padded.tokens.push_back(b.tokens[static_cast<size_t>(last.q_begin)]);
    padded.positions.push_back(b.positions[static_cast<size_t>(last.q_begin)]);
    padded.slots.push_back(b.slots[static_cast<size_t>(last.q_begin)]);
    seqs.push_back({.q_begin = static_cast<int32_t>(i), .n_q = 1, .ctx_slots = last.ctx_slots});
  }
  while (static_cast<int64_t>(padded.logit_rows.size()) < bucket) {
    padded.logit_rows.push_back(static_cast<int32_t>(bucket - 1));
  }
  return true;
}

// Checks b and issues its ops (a decode step through Backend::run_step); returns the logits rows of
// b on the backend, without copying or synchronizing.
Result<Tensor> LlamaModel::forward_on_device(const Batch& b, KvStorage& kv) {
  const ModelConfig& c = config_;
  KEEL_RETURN_IF_ERROR(validate_batch(b, c.vocab_size, kv.n_slots));
  if (static_cast<int64_t>(kv.k.size()) != c.n_layers || kv.v.size() != kv.k.size()) {
    return make_error(ErrorCode::kInvalidArgument, "KV storage has {} layers, the model {}", kv.k.size(), c.n_layers);
  }
  std::vector<backend::AttnSeq> seqs;
  seqs.reserve(b.seqs.size());
  for (const BatchSeq& s : b.seqs) seqs.push_back({.q_begin = s.q_begin, .n_q = s.n_q, .ctx_slots = s.ctx_slots});
  backend::Backend& be = *backend_;
  const auto r = static_cast<int64_t>(b.logit_rows.size());
  // Decode steps (one new token per sequence) go through Backend::run_step: on cuda a CUDA graph
  // replay at a padded batch size.
  const int64_t bucket = dump_ ? 0 : be.step_graph_bucket(b.n_tokens());
  Batch padded;
  const bool graph = bucket > 0 && pad_decode_step(b, bucket, padded, seqs);
  // A backend that samples asynchronously: every graph step embeds through embed_sampled (all -1 when
  // no token comes from the last sampling), so overlapped and plain decode steps replay one graph.
  if (graph && be.can_sample_async() && padded.from_sampled.empty()) padded.from_sampled.assign(padded.tokens.size(), -1);
  const Batch& run = graph ? padded : b;
  ensure_scratch(run.n_tokens(), static_cast<int64_t>(run.logit_rows.size()));
  Tensor lg;
  be.run_step(graph ? bucket : 0, [&] { lg = issue_forward(run, seqs, kv); });
  return r > 0 ? lg.rows(0, r) : Tensor{};
}

// The buffers a graph captures must keep their addresses: the scratch buffers are sized for
// max_tokens first (no prefill step grows them later), and the largest bucket runs first with the
// longest contexts a step can have (the KV pool shared out, up to max_ctx each), so the staging
// buffer already has the room of the largest real step (the context lists of any bucket's step add up
// to at most the pool, unless sequences share a cached prefix). A second pass replays what stayed
// valid and captures again what a later bucket's first capture moved.
Result<int64_t> LlamaModel::capture_decode_graphs(KvStorage& kv, int64_t max_seqs, int64_t max_tokens,
                                                  int64_t max_ctx) {
  backend::Backend& be = *backend_;
  std::vector<int64_t> buckets;
  for (int64_t n = 1; n <= std::min(max_seqs, kv.n_slots); ++n) {
    const int64_t b = be.step_graph_bucket(n);
    if (b > 0 && b <= kv.n_slots && (buckets.empty() || buckets.back() != b)) buckets.push_back(b);
  }
  if (buckets.empty()) return int64_t{0};
  ensure_scratch(std::max(max_tokens, buckets.back()), std::max(max_seqs, buckets.back()));
  for (const bool first_pass : {true, false}) {
    for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
      const auto n = static_cast<int32_t>(*it);
      const bool long_ctx = first_pass && it == buckets.rbegin();
      const auto len = static_cast<int32_t>(long_ctx ? std::max<int64_t>(1, std::min(max_ctx, kv.n_slots / n)) : 1);
      Batch batch;
      for (int32_t i = 0; i < n; ++i) {
        BatchSeq s{.q_begin = i, .n_q = 1, .ctx_slots = {}};
        for (int32_t j = 0; j < len; ++j) s.ctx_slots.push_back(i * len + j);
        batch.tokens.push_back(0);
        batch.positions.push_back(len - 1);
        batch.slots.push_back(s.ctx_slots.back());
        batch.logit_rows.push_back(i);
        batch.seqs.push_back(std::move(s));
      }
      KEEL_RETURN_IF_ERROR(forward_on_device(batch, kv).status());
      be.synchronize();
    }
  }
  return static_cast<int64_t>(buckets.size());
}

Status LlamaModel::forward(const Batch& b, KvStorage& kv, std::span<float> logits) {
  if (logits.size() != b.logit_rows.size() * static_cast<size_t>(config_.vocab_size)) {
    return make_error(ErrorCode::kInvalidArgument, "logits span holds {} floats, {} rows x {} vocab needed",
                      logits.size(), b.logit_rows.size(), config_.vocab_size);
  }
  KEEL_ASSIGN_OR_RETURN(Tensor lg, forward_on_device(b, kv));
  if (!logits.empty()) backend_->copy_to_host(lg, logits);
  backend_->synchronize();
  return {};
}

}  // namespace

Result<std::unique_ptr<Model>> create_llama_model(ModelConfig config, ModelWeights weights,
                                                  std::unique_ptr<backend::Backend> backend,
                                                  std::shared_ptr<const void> source) {
  KEEL_CHECK(backend != nullptr);
  KEEL_CHECK(static_cast<int64_t>(weights.layers.size()) == config.n_layers);
  auto m = std::make_unique<LlamaModel>(std::move(config), std::move(weights), std::move(backend), std::move(source));
  KEEL_RETURN_IF_ERROR(m->upload());
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace keel::model
