#include "model/config_hf.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace keel::model {
namespace {

using nlohmann::json;

// Reading helpers: a key that is absent or null takes the fallback; a key of the wrong type is an
// error naming it.
Result<int64_t> get_int(const json& j, const char* key, std::optional<int64_t> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::kNotFound, "config.json: required key '{}' is missing", key);
  }
  if (!it->is_number_integer()) {
    return make_error(ErrorCode::kCorruptFile, "config.json: '{}' must be an integer, got {}", key, it->dump());
  }
  int64_t v = it->get<int64_t>();
  if (v <= 0) return make_error(ErrorCode::kCorruptFile, "config.json: '{}' = {} must be positive", key, v);
  return v;
}

Result<float> get_float(const json& j, const char* key, std::optional<float> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return make_error(ErrorCode::kNotFound, "config.json: required key '{}' is missing", key);
  }
  if (!it->is_number()) {
    return make_error(ErrorCode::kCorruptFile, "config.json: '{}' must be a number, got {}", key, it->dump());
  }
  double d = it->get<double>();
  if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
    return make_error(ErrorCode::kCorruptFile, "config.json: '{}' = {} is not a finite float", key, d);
  }
  return static_cast<float>(d);
}

Result<bool> get_bool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return make_error(ErrorCode::kCorruptFile, "config.json: '{}' must be a boolean, got {}", key, it->dump());
  }
  return it->get<bool>();
}

Result<std::string> get_string(const json& j, const char* key, const char* fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string(fallback);
  if (!it->is_string()) {
    return make_error(ErrorCode::kCorruptFile, "config.json: '{}' must be a string, got {}", key, it->dump());
  }
  return it->get<std::string>();
}

Result<Arch> read_arch(const json& j) {
  if (auto it = j.find("architectures"); it != j.end() && it->is_array() && !it->empty()) {
    const json& a = (*it)[0];
    if (a == "LlamaForCausalLM") return Arch::kLlama;
    if (a == "Qwen2ForCausalLM") return Arch::kQwen2;
    if (a == "Qwen3ForCausalLM") return Arch::kQwen3;
    return make_error(ErrorCode::kUnsupported,
                      "config.json: architectures[0] = {} (supported: LlamaForCausalLM, Qwen2ForCausalLM, "
                      "Qwen3ForCausalLM)", a.dump());
  }
  KEEL_ASSIGN_OR_RETURN(std::string mt, get_string(j, "model_type", ""));
  if (mt == "llama") return Arch::kLlama;
  if (mt == "qwen2") return Arch::kQwen2;
  if (mt == "qwen3") return Arch::kQwen3;
  return make_error(ErrorCode::kUnsupported, "config.json: neither 'architectures' nor 'model_type' names a "
                                             "supported model (model_type = '{}')", mt);
}

// YaRN's cos/sin magnitude, as transformers' _compute_yarn_parameters resolves it.
float yarn_attention_factor(float factor, std::optional<float> explicit_factor, float mscale, float mscale_all_dim) {
  if (explicit_factor) return *explicit_factor;
  auto get_mscale = [](float scale, float m) { return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f; };
  if (mscale != 0.0f && mscale_all_dim != 0.0f) return get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim);
  return get_mscale(factor, 1.0f);
}

Status read_yarn(const json& s, ModelConfig& c) {
  RopeConfig& r = c.rope;
  r.scaling = RopeScaling::kYarn;
  KEEL_ASSIGN_OR_RETURN(r.original_max_positions, get_int(s, "original_max_position_embeddings", c.max_positions));
  if (s.contains("factor") && s["factor"].is_null()) {
    r.factor = static_cast<float>(c.max_positions) / static_cast<float>(r.original_max_positions);
  } else {
    KEEL_ASSIGN_OR_RETURN(r.factor, get_float(s, "factor", std::nullopt));
  }
  KEEL_ASSIGN_OR_RETURN(r.yarn_beta_fast, get_float(s, "beta_fast", 32.0f));
  KEEL_ASSIGN_OR_RETURN(r.yarn_beta_slow, get_float(s, "beta_slow", 1.0f));
  KEEL_ASSIGN_OR_RETURN(r.yarn_truncate, get_bool(s, "truncate", true));
  std::optional<float> explicit_factor;
  if (s.contains("attention_factor") && !s["attention_factor"].is_null()) {
    KEEL_ASSIGN_OR_RETURN(explicit_factor, get_float(s, "attention_factor", std::nullopt));
  }
  KEEL_ASSIGN_OR_RETURN(float mscale, get_float(s, "mscale", 0.0f));
  KEEL_ASSIGN_OR_RETURN(float mscale_all_dim, get_float(s, "mscale_all_dim", 0.0f));
  r.attn_factor = yarn_attention_factor(r.factor, explicit_factor, mscale, mscale_all_dim);
  return {};
}

// `rope_scaling` (transformers 4) or `rope_parameters` (transformers 5, which also carries rope_theta).
Status read_rope(const json& j, ModelConfig& c) {
  RopeConfig& r = c.rope;
  r.style = backend::RopeStyle::kNeox;
  KEEL_ASSIGN_OR_RETURN(r.theta, get_float(j, "rope_theta", 10000.0f));
  KEEL_ASSIGN_OR_RETURN(float partial, get_float(j, "partial_rotary_factor", 1.0f));
  const json* s = nullptr;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object()) return make_error(ErrorCode::kCorruptFile, "config.json: '{}' must be an object", key);
    s = &*it;
    break;
  }
  if (s == nullptr) {
    if (partial != 1.0f) return make_error(ErrorCode::kUnsupported, "config.json: partial_rotary_factor = {}", partial);
    return {};
  }
  KEEL_ASSIGN_OR_RETURN(r.theta, get_float(*s, "rope_theta", r.theta));
  KEEL_ASSIGN_OR_RETURN(partial, get_float(*s, "partial_rotary_factor", partial));
  if (partial != 1.0f) return make_error(ErrorCode::kUnsupported, "config.json: partial_rotary_factor = {}", partial);
  KEEL_ASSIGN_OR_RETURN(std::string type, get_string(*s, "rope_type", ""));
  if (type.empty()) {
    KEEL_ASSIGN_OR_RETURN(type, get_string(*s, "type", "default"));
  }
  if (type == "default") return {};
  if (type == "linear") {
    r.scaling = RopeScaling::kLinear;
    KEEL_ASSIGN_OR_RETURN(r.factor, get_float(*s, "factor", std::nullopt));
    return {};
  }
  if (type == "llama3") {
    r.scaling = RopeScaling::kLlama3;
    KEEL_ASSIGN_OR_RETURN(r.factor, get_float(*s, "factor", std::nullopt));
    KEEL_ASSIGN_OR_RETURN(r.low_freq_factor, get_float(*s, "low_freq_factor", std::nullopt));
    KEEL_ASSIGN_OR_RETURN(r.high_freq_factor, get_float(*s, "high_freq_factor", std::nullopt));
    KEEL_ASSIGN_OR_RETURN(r.original_max_positions, get_int(*s, "original_max_position_embeddings", c.max_positions));
    return {};
  }
  if (type == "yarn") return read_yarn(*s, c);
  return make_error(ErrorCode::kUnsupported, "config.json: rope_scaling type '{}' (supported: default, linear, "
                                             "llama3, yarn)", type);
}

Status read_unsupported_features(const json& j) {
  KEEL_ASSIGN_OR_RETURN(std::string act, get_string(j, "hidden_act", "silu"));
  if (act != "silu") return make_error(ErrorCode::kUnsupported, "config.json: hidden_act '{}' (only silu)", act);
  KEEL_ASSIGN_OR_RETURN(bool mlp_bias, get_bool(j, "mlp_bias", false));
  if (mlp_bias) return make_error(ErrorCode::kUnsupported, "config.json: mlp_bias = true");
  KEEL_ASSIGN_OR_RETURN(bool sliding, get_bool(j, "use_sliding_window", false));
  if (sliding) return make_error(ErrorCode::kUnsupported, "config.json: use_sliding_window = true");
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array()) {
    for (const json& t : *it) {
      if (t != "full_attention") {
        return make_error(ErrorCode::kUnsupported, "config.json: layer_types contains {}", t.dump());
      }
    }
  }
  return {};
}

Result<ModelConfig> parse(const json& j) {
  if (!j.is_object()) return make_error(ErrorCode::kCorruptFile, "config.json: top level must be an object");
  ModelConfig c;
  KEEL_ASSIGN_OR_RETURN(c.arch, read_arch(j));
  KEEL_ASSIGN_OR_RETURN(c.name, get_string(j, "_name_or_path", ""));
  KEEL_RETURN_IF_ERROR(read_unsupported_features(j));
  KEEL_ASSIGN_OR_RETURN(c.n_layers, get_int(j, "num_hidden_layers", std::nullopt));
  KEEL_ASSIGN_OR_RETURN(c.d_model, get_int(j, "hidden_size", std::nullopt));
  KEEL_ASSIGN_OR_RETURN(c.n_heads, get_int(j, "num_attention_heads", std::nullopt));
  KEEL_ASSIGN_OR_RETURN(c.n_kv_heads, get_int(j, "num_key_value_heads", c.n_heads));
  // Qwen3Config defaults head_dim to 128; the others derive it.
  KEEL_ASSIGN_OR_RETURN(c.head_dim, get_int(j, "head_dim", c.arch == Arch::kQwen3 ? 128 : c.d_model / c.n_heads));
  KEEL_ASSIGN_OR_RETURN(c.ffn_dim, get_int(j, "intermediate_size", std::nullopt));
  KEEL_ASSIGN_OR_RETURN(c.vocab_size, get_int(j, "vocab_size", std::nullopt));
  KEEL_ASSIGN_OR_RETURN(c.max_positions, get_int(j, "max_position_embeddings", std::nullopt));
  KEEL_ASSIGN_OR_RETURN(c.rms_eps, get_float(j, "rms_norm_eps", 1e-6f));
  KEEL_ASSIGN_OR_RETURN(c.tied_embeddings, get_bool(j, "tie_word_embeddings", false));
  // Qwen2's attention always has q/k/v biases; Llama and Qwen3 follow attention_bias.
  KEEL_ASSIGN_OR_RETURN(c.attn_bias, get_bool(j, "attention_bias", false));
  if (c.arch == Arch::kQwen2) c.attn_bias = true;
  c.qk_norm = c.arch == Arch::kQwen3;
  KEEL_RETURN_IF_ERROR(read_rope(j, c));
  Status s = validate_config(c);
  if (!s.ok()) return s.with_context("config.json");
  return c;
}

}  // namespace

Result<ModelConfig> config_from_hf_json(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(ErrorCode::kCorruptFile, "config.json is not valid JSON");
  return parse(j);
}

}  // namespace keel::model
