// The op set every backend implements (cpu/ and cuda/), and the tensors it works on. Model code
// (model/arch/*) is written once against this interface; backends are checked against each other
// and against scalar references (tests/parity). Plan on the CPU, run on the device: ops take host
// spans for plans (positions, slots, sequence layout) and device tensors for data.
// A backend is used by one thread at a time: the thread that runs the model (the scheduler thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/status.h"
#include "tensor/tensor_view.h"

namespace keel::backend {

using tensor::DType;
using tensor::Shape;

enum class DeviceKind { kCpu, kCuda };

// A view of backend memory (host memory for cpu, device memory for cuda). Row-major, shape
// outermost first, last dim contiguous. Does not own its memory.
struct Tensor {
  DType dtype = DType::kF32;
  Shape shape;
  void* data = nullptr;

  int64_t numel() const { return shape.numel(); }
  int64_t n_rows() const { return shape.n_rows(); }
  int64_t row_len() const { return shape.row_len(); }
  size_t size_bytes() const { return static_cast<size_t>(n_rows()) * tensor::row_size_bytes(dtype, row_len()); }
  // Same memory, another shape with the same numel (e.g. [n, h*d] <-> [n, h, d]).
  Tensor reshaped(Shape s) const { return Tensor{dtype, s, data}; }
  // Rows [begin, begin + count) of the 2-D [n_rows, row_len] view, as a [count, row_len] tensor.
  Tensor rows(int64_t begin, int64_t count) const;
};

// Owns backend memory; frees it on destruction. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Tensor t, std::shared_ptr<void> owner) : tensor_(t), owner_(std::move(owner)) {}
  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  bool empty() const { return tensor_.data == nullptr; }

 private:
  Tensor tensor_;
  std::shared_ptr<void> owner_;
};

// RoPE variants. Positions are absolute token positions.
enum class RopeStyle {
  kInterleaved,  // rotate pairs (x[2i], x[2i+1]) — GGML "normal" (GGUF llama files)
  kNeox,         // rotate halves (x[i], x[i + d/2]) — HF rotate_half, GGUF qwen2/qwen3
};

struct RopeParams {
  RopeStyle style = RopeStyle::kNeox;
  int rot_dims = 0;  // leading dims of each head that rotate (== head_dim for Llama)
  // Per-frequency inverse wavelengths, [rot_dims / 2]: theta^(-2i/d) already adjusted by the
  // scaling method (Llama 3, YaRN, linear). Computed once by model/rope.cc.
  std::span<const float> inv_freq;
  float attn_factor = 1.0f;  // YaRN magnitude scale applied to cos/sin (1 otherwise)
};

// One sequence of a flat batch for attention. Tokens [q_begin, q_begin + n_q) of the batch are this
// sequence's new tokens; ctx_slots lists the KV slots of all its visible tokens in position order,
// the last n_q being the new ones. Causal: new token i sees ctx_slots[0 .. n_ctx - n_q + i].
struct AttnSeq {
  int32_t q_begin = 0;
  int32_t n_q = 0;
  std::span<const int32_t> ctx_slots;
};

struct AttentionParams {
  float scale = 0.0f;  // usually 1/sqrt(head_dim)
  std::span<const AttnSeq> seqs;
};

// Sampling on the device (Backend::sample_rows): one token per row, by the same algorithm as
// sample::sample_token (sample/sampler.h), so only token ids cross to the host. Plain data.
struct DeviceSampleRow {
  int32_t logit_row = 0;  // row of the logits tensor
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  uint64_t seed = 0;
  int64_t position = 0;  // index of the token being produced (the noise is a function of seed, position, id)
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t mask_offset = -1;  // first word of this row's allowed-token bitmask in DeviceSampleInput::masks; -1: none
  int32_t proc_begin = 0;    // this row's entries of DeviceSampleInput::procs
  int32_t n_proc = 0;
};
// One token a row's logits processors touch (ids unique within a row): logit += bias; then, when seen
// (in the prompt or output) and repetition_penalty != 1, the HF repetition penalty; then
// -= frequency_penalty * n_output + presence_penalty when n_output > 0 (sample/logits_processors.h).
struct DeviceSampleProc {
  int32_t token = 0;
  float bias = 0.0f;
  int32_t seen = 0;
  int32_t n_output = 0;
};
struct DeviceSampleInput {
  std::span<const DeviceSampleRow> rows;
  std::span<const DeviceSampleProc> procs;
  std::span<const uint32_t> masks;  // sample::mask_words(vocab) words per constrained row
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;
  // Activation dtype the model should use for intermediate tensors (f32 on cpu).
  virtual DType activation_dtype() const = 0;
  // Free device memory in bytes (cuda: cudaMemGetInfo), or -1 where the backend has no device of its own.
  virtual int64_t free_memory_bytes() const { return -1; }

  // Memory.
  virtual Buffer alloc(DType dtype, Shape shape) = 0;
  // Makes a weight usable by ops. cpu may return a view of the host memory (zero copy: the caller
  // keeps the mapping alive); cuda copies (and may convert) it to the device.
  virtual Result<Buffer> upload_weight(const tensor::TensorView& host) = 0;
  virtual void copy_to_host(const Tensor& src, std::span<float> dst) = 0;  // any float dtype -> f32
  virtual void copy_from_host(std::span<const float> src, Tensor& dst) = 0;
  virtual void synchronize() = 0;

  // out[i, :] = table[ids[i], :]; table is [vocab, d] of any weight dtype, out [n, d].
  virtual void embed(const Tensor& table, std::span<const int32_t> ids, Tensor& out) = 0;
  // out = x / rms(x) * w over the last dim; x [n, d], w [d] (f32).
  virtual void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor& out) = 0;
  // residual += x; out = rms_norm(residual, w). All [n, d].
  virtual void add_rms_norm(Tensor& residual, const Tensor& x, const Tensor& w, float eps, Tensor& out) = 0;
  // out[n, m] = x[n, k] · w[m, k]^T (+ bias[m] when bias.data != nullptr). w of any weight dtype.
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) = 0;
  // Several matmuls of one x (Q/K/V, gate/up): out_i = x · w_i^T (+ bias_i). cuda runs decode-sized
  // ones as one launch; the default runs matmul for each.
  struct MatmulTarget {
    const Tensor* w;
    const Tensor* bias;  // may be null
    Tensor* out;
  };
  virtual void matmul_group(const Tensor& x, std::span<const MatmulTarget> targets) {
    for (const MatmulTarget& t : targets) matmul(x, *t.w, t.bias, *t.out);
  }
  // The pre-norm of a block in front of its matmuls: residual += add (when add is not null), then
  // h = rms_norm(residual, w, eps); all [n, d]. The two ops below take it so that cuda can compute h
  // inside the decode GEMV that consumes it (docs/cuda_backend.md "Fused decode GEMVs"); their
  // defaults (the CPU backend's, the reference) run the ops one by one.
  struct PreNorm {
    Tensor* residual;
    const Tensor* add;  // may be null: h = rms_norm(residual), the residual is left as it is
    const Tensor* w;    // [d] f32
    float eps;
    Tensor* h;
  };
  // The pre-norm, then matmul_group(h, targets).
  virtual void norm_matmul_group(const PreNorm& p, std::span<const MatmulTarget> targets) {
    pre_norm(p);
    matmul_group(*p.h, targets);
  }
  // The pre-norm, then gate = h · w_gate^T, up = h · w_up^T and out = silu(gate) * up ([n, f]). gate
  // and up are scratch: what they hold afterwards is unspecified (cuda's fused GEMV leaves them).
  virtual void norm_gate_up_silu(const PreNorm& p, const Tensor& w_gate, const Tensor& w_up, Tensor& gate, Tensor& up,
                                 Tensor& out) {
    pre_norm(p);
    const MatmulTarget t[] = {{&w_gate, nullptr, &gate}, {&w_up, nullptr, &up}};
    matmul_group(*p.h, t);
    silu_mul(gate, up, out);
  }
  // The pre-norm, then Q/K/V (norm_matmul_group of h with qkv = the q, k and v targets, whose outputs
  // q, k, v are [n, heads, head_dim] views of), then rope_write_kv(q, k, v, ...): the attention block's
  // front as one op (cuda: one launch for decode).
  virtual void norm_qkv_rope_kv(const PreNorm& p, std::span<const MatmulTarget> qkv, Tensor& q, Tensor& k,
                                const Tensor& v, std::span<const int32_t> positions, std::span<const int32_t> slots,
                                const RopeParams& rope, Tensor& k_cache, Tensor& v_cache) {
    norm_matmul_group(p, qkv);
    rope_write_kv(q, k, v, positions, slots, rope, k_cache, v_cache);
  }
  // In place on x [n, n_heads, head_dim]; positions [n].
  virtual void rope(Tensor& x, std::span<const int32_t> positions, const RopeParams& p) = 0;
  // Writes k, v [n, n_kv_heads, head_dim] into k_cache, v_cache [n_slots, n_kv_heads, head_dim]
  // at rows slots[n].
  virtual void write_kv(const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                        Tensor& k_cache, Tensor& v_cache) = 0;
  // RoPE of q [n, n_heads, head_dim] and k [n, n_kv_heads, head_dim] in place, then k (roped) and v
  // into the KV pool at rows slots[n]: rope(q), rope(k) and write_kv as one op (cuda: one launch).
  // The default (the CPU backend's, the reference) runs the three ops.
  virtual void rope_write_kv(Tensor& q, Tensor& k, const Tensor& v, std::span<const int32_t> positions,
                             std::span<const int32_t> slots, const RopeParams& p, Tensor& k_cache, Tensor& v_cache) {
    rope(q, positions, p);
    rope(k, positions, p);
    write_kv(k, v, slots, k_cache, v_cache);
  }
  // q [n, n_heads, head_dim] attends over the KV pool per AttentionParams; GQA when
  // n_heads > n_kv_heads. out [n, n_heads, head_dim].
  virtual void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                         const AttentionParams& p, Tensor& out) = 0;
  // out = silu(gate) * up; all [n, f].
  virtual void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
  // out = a + b; all same shape.
  virtual void add(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // out[i, :] = x[rows[i], :].
  virtual void gather_rows(const Tensor& x, std::span<const int32_t> rows, Tensor& out) = 0;

  // Decode-step graphs (cuda). step_graph_bucket(n): the padded token count a decode step of n
  // single-token sequences runs at as a graph replay, or 0 when this backend replays no graphs (cpu,
  // KEEL_CUDA_GRAPHS=0, profiling, n too large). run_step(key, issue): runs `issue` (which only calls
  // ops, no copies to the host, no synchronize); with key > 0 as a replay of the graph captured for
  // key, captured at first use. The ops `issue` calls must then see the same shapes and buffers at
  // every call with that key (only host span contents may change); the backend checks that and
  // captures again when they differ.
  virtual int64_t step_graph_bucket(int64_t /*n_tokens*/) const { return 0; }
  virtual void run_step(int64_t /*graph_key*/, const std::function<void()>& issue) { issue(); }

  // Device sampling (cuda): whether sample_rows is available (false on cpu, and on cuda with
  // KEEL_CUDA_SAMPLING=0). sample_rows(logits, in, tokens): logits f32 [r, vocab] on the backend (left
  // unchanged), tokens[i] for in.rows[i]; processors and masks work on a copy. Synchronizes.
  virtual bool can_sample_rows() const { return false; }
  virtual void sample_rows(const Tensor& /*logits*/, const DeviceSampleInput& /*in*/, std::span<int32_t> /*tokens*/) {
    KEEL_CHECK(false, "backend {} does not sample on the device", name());
  }

  // Overlap scheduling (cuda; docs/scheduler.md "Overlap"). sample_rows_async(logits, in): sample_rows'
  // work queued on the device and nothing waited for: the token ids stay in a fixed device buffer
  // (read by the next forward through embed_sampled) and are copied to pinned host memory behind an
  // event. wait_sampled(tokens): waits for that copy and returns the ids of the last sample_rows_async
  // (tokens.size() == its rows); each async sampling is read exactly once, before the next one.
  // embed_sampled: like embed, but where from_sampled[i] >= 0 the id is row from_sampled[i] of the last
  // sample_rows_async output, read on the device (ids[i] is then ignored).
  virtual bool can_sample_async() const { return false; }
  virtual void sample_rows_async(const Tensor& /*logits*/, const DeviceSampleInput& /*in*/) {
    KEEL_CHECK(false, "backend {} does not sample asynchronously", name());
  }
  virtual void wait_sampled(std::span<int32_t> /*tokens*/) {
    KEEL_CHECK(false, "backend {} does not sample asynchronously", name());
  }
  virtual void embed_sampled(const Tensor& /*table*/, std::span<const int32_t> /*ids*/,
                             std::span<const int32_t> /*from_sampled*/, Tensor& /*out*/) {
    KEEL_CHECK(false, "backend {} does not embed sampled tokens on the device", name());
  }

 protected:
  void pre_norm(const PreNorm& p) {
    if (p.add != nullptr) {
      add_rms_norm(*p.residual, *p.add, *p.w, p.eps, *p.h);
    } else {
      rms_norm(*p.residual, *p.w, p.eps, *p.h);
    }
  }
};

// Backends by name: "cpu" (always), "cuda" (when built with KEEL_CUDA and a device is present).
struct BackendOptions {
  int n_threads = 0;  // cpu: 0 = ThreadPool::default_threads()
  int device = 0;     // cuda: device ordinal
  // Precision of activations, matrix weights and the KV cache (docs/cuda_backend.md "Precision"). cuda:
  // "bf16" or "f32" (weights dequantized to f32, fp32 GEMMs); "auto" is bf16 here, load_model resolves
  // it per model first. cpu computes in f32: "auto" dots quantized weights with activations rounded to
  // 8 bits (llama.cpp's way), "f32" dequantizes them to f32 at load (the cuda f32 mode's arithmetic).
  std::string dtype = "auto";
};
Result<std::unique_ptr<Backend>> create_backend(const std::string& name, const BackendOptions& opts);

}  // namespace keel::backend
