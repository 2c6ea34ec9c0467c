#include "model/config_gguf.h"

#include <cmath>
#include <limits>
#include <string>

namespace keel::model {
namespace {

class Keys {
 public:
  Keys(const format::GgufFile& g, std::string arch) : g_(g), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  Result<int64_t> required_int(std::string_view suffix) const {
    std::string k = key(suffix);
    if (const format::GgufValue* v = g_.find(k); v && v->type == format::GgufType::kArray) {
      return make_error(ErrorCode::kUnsupported, "{}: per-layer values are not supported", k);
    }
    Result<int64_t> r = g_.get_int(k);
    if (!r.ok()) return r.status().with_context("required GGUF key");
    // Every integer key read here is a count or a length.
    if (*r <= 0) return make_error(ErrorCode::kCorruptFile, "{} = {} must be positive", k, *r);
    return r;
  }
  Result<int64_t> optional_int(std::string_view suffix, int64_t fallback) const {
    if (!g_.has(key(suffix))) return fallback;
    return required_int(suffix);
  }
  Result<float> optional_float(std::string_view suffix, float fallback) const {
    std::string k = key(suffix);
    if (!g_.has(k)) return fallback;
    KEEL_ASSIGN_OR_RETURN(double d, g_.get_float(k));
    if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
      return make_error(ErrorCode::kCorruptFile, "{} = {} is not a finite float", k, d);
    }
    return static_cast<float>(d);
  }

 private:
  const format::GgufFile& g_;
  std::string arch_;
};

Result<Arch> parse_arch(const std::string& a) {
  if (a == "llama") return Arch::kLlama;
  if (a == "qwen2") return Arch::kQwen2;
  if (a == "qwen3") return Arch::kQwen3;
  return make_error(ErrorCode::kUnsupported, "general.architecture '{}' (supported: llama, qwen2, qwen3)", a);
}

// Token list length, else the embedding table's rows. `<arch>.vocab_size` wins when present.
Result<int64_t> read_vocab_size(const format::GgufFile& g, const Keys& keys) {
  if (g.has(keys.key("vocab_size"))) return keys.required_int("vocab_size");
  if (const format::GgufValue* v = g.find("tokenizer.ggml.tokens")) {
    if (const auto* arr = std::get_if<std::shared_ptr<format::GgufArray>>(&v->value); arr && *arr) {
      return static_cast<int64_t>((*arr)->items.size());
    }
    return make_error(ErrorCode::kCorruptFile, "tokenizer.ggml.tokens is not an array");
  }
  if (const format::GgufTensorInfo* t = g.find_tensor("token_embd.weight"); t && t->shape.rank == 2) {
    return t->shape[0];
  }
  return make_error(ErrorCode::kNotFound, "no vocabulary size: {} , tokenizer.ggml.tokens and token_embd.weight are all absent",
                    keys.key("vocab_size"));
}

Status read_rope(const format::GgufFile& g, const Keys& k, ModelConfig& c) {
  RopeConfig& r = c.rope;
  KEEL_ASSIGN_OR_RETURN(r.theta, k.optional_float("rope.freq_base", 10000.0f));
  KEEL_ASSIGN_OR_RETURN(int64_t rot_dims, k.optional_int("rope.dimension_count", c.head_dim));
  if (rot_dims != c.head_dim) {
    return make_error(ErrorCode::kUnsupported, "{} = {} != head_dim {} (partial rotary)",
                      k.key("rope.dimension_count"), rot_dims, c.head_dim);
  }
  std::string type = "none";
  if (g.has(k.key("rope.scaling.type"))) {
    KEEL_ASSIGN_OR_RETURN(type, g.get_string(k.key("rope.scaling.type")));
  } else if (g.has(k.key("rope.scale_linear"))) {
    type = "linear";  // pre-2024 files: a bare linear factor
    KEEL_ASSIGN_OR_RETURN(r.factor, k.optional_float("rope.scale_linear", 1.0f));
  }
  if (type == "none") return {};
  if (g.has(k.key("rope.scaling.factor"))) {
    KEEL_ASSIGN_OR_RETURN(r.factor, k.optional_float("rope.scaling.factor", 1.0f));
  }
  if (type == "linear") {
    r.scaling = RopeScaling::kLinear;
    return {};
  }
  if (type != "yarn") {
    return make_error(ErrorCode::kUnsupported, "{} '{}' (supported: none, linear, yarn)", k.key("rope.scaling.type"),
                      type);
  }
  r.scaling = RopeScaling::kYarn;
  KEEL_ASSIGN_OR_RETURN(r.original_max_positions,
                        k.optional_int("rope.scaling.original_context_length", c.max_positions));
  KEEL_ASSIGN_OR_RETURN(r.yarn_beta_fast, k.optional_float("rope.scaling.yarn_beta_fast", 32.0f));
  KEEL_ASSIGN_OR_RETURN(r.yarn_beta_slow, k.optional_float("rope.scaling.yarn_beta_slow", 1.0f));
  // llama.cpp multiplies the file's attn_factor onto YaRN's own 0.1 ln(s) + 1.
  KEEL_ASSIGN_OR_RETURN(float extra, k.optional_float("rope.scaling.attn_factor", 1.0f));
  r.attn_factor = extra * (r.factor > 1.0f ? 0.1f * std::log(r.factor) + 1.0f : 1.0f);
  return {};
}

}  // namespace

Result<ModelConfig> config_from_gguf(const format::GgufFile& g) {
  KEEL_ASSIGN_OR_RETURN(std::string arch_str, g.get_string("general.architecture"));
  ModelConfig c;
  KEEL_ASSIGN_OR_RETURN(c.arch, parse_arch(arch_str));
  if (g.has("general.name")) {
    KEEL_ASSIGN_OR_RETURN(c.name, g.get_string("general.name"));
  }
  Keys k(g, arch_str);
  KEEL_ASSIGN_OR_RETURN(c.n_layers, k.required_int("block_count"));
  KEEL_ASSIGN_OR_RETURN(c.d_model, k.required_int("embedding_length"));
  KEEL_ASSIGN_OR_RETURN(c.n_heads, k.required_int("attention.head_count"));
  KEEL_ASSIGN_OR_RETURN(c.n_kv_heads, k.optional_int("attention.head_count_kv", c.n_heads));
  KEEL_ASSIGN_OR_RETURN(c.head_dim, k.optional_int("attention.key_length", c.d_model / c.n_heads));
  KEEL_ASSIGN_OR_RETURN(int64_t v_dim, k.optional_int("attention.value_length", c.head_dim));
  if (v_dim != c.head_dim) {
    return make_error(ErrorCode::kUnsupported, "{} = {} differs from key_length {}", k.key("attention.value_length"),
                      v_dim, c.head_dim);
  }
  KEEL_ASSIGN_OR_RETURN(c.ffn_dim, k.required_int("feed_forward_length"));
  KEEL_ASSIGN_OR_RETURN(c.max_positions, k.required_int("context_length"));
  KEEL_ASSIGN_OR_RETURN(c.rms_eps, k.optional_float("attention.layer_norm_rms_epsilon", 1e-5f));
  KEEL_ASSIGN_OR_RETURN(c.vocab_size, read_vocab_size(g, k));
  c.rope.style = c.arch == Arch::kLlama ? backend::RopeStyle::kInterleaved : backend::RopeStyle::kNeox;
  KEEL_RETURN_IF_ERROR(read_rope(g, k, c));
  c.tied_embeddings = g.find_tensor("output.weight") == nullptr;
  c.attn_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = c.arch == Arch::kQwen3;
  Status s = validate_config(c);
  if (!s.ok()) return s.with_context(fmt::format("GGUF {} config", arch_str));
  return c;
}

}  // namespace keel::model
