// load_model: a GGUF file or an HF folder (config.json + safetensors, single or sharded) -> config,
// named weights (memory-mapped views), backend, Llama-family model.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "base/mapped_file.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/arch/llama.h"
#include "model/config_gguf.h"
#include "model/config_hf.h"
#include "model/dummy_weights.h"
#include "model/model.h"
#include "model/weights.h"

namespace keel::model {
namespace {

struct Loaded {
  ModelConfig config;
  ModelWeights weights;
  std::shared_ptr<const void> source;  // keeps the mapped file(s) alive
};

Result<Loaded> load_gguf(const std::string& path) {
  KEEL_ASSIGN_OR_RETURN(format::GgufFile file, format::GgufFile::open(path));
  auto gguf = std::make_shared<const format::GgufFile>(std::move(file));
  Loaded out;
  KEEL_ASSIGN_OR_RETURN(out.config, config_from_gguf(*gguf));
  TensorLookup lookup = [&gguf](std::string_view name) -> std::optional<tensor::TensorView> {
    const format::GgufTensorInfo* info = gguf->find_tensor(name);
    if (info == nullptr) return std::nullopt;
    return gguf->tensor_view(*info);
  };
  KEEL_ASSIGN_OR_RETURN(out.weights, collect_weights(out.config, WeightNaming::kGguf, lookup));
  out.source = gguf;
  return out;
}

Result<Loaded> load_hf(const std::string& dir, bool dummy) {
  const std::string config_path = (std::filesystem::path(dir) / "config.json").string();
  KEEL_ASSIGN_OR_RETURN(std::string text, read_text_file(config_path));
  Loaded out;
  Result<ModelConfig> config = config_from_hf_json(text);
  if (!config.ok()) return config.status().with_context(config_path);
  out.config = std::move(config).value();
  if (dummy) {
    TensorLookup lookup = make_dummy_lookup(out.config, out.source);
    KEEL_ASSIGN_OR_RETURN(out.weights, collect_weights(out.config, WeightNaming::kHf, lookup));
    return out;
  }
  KEEL_ASSIGN_OR_RETURN(format::SafetensorsSet set, format::SafetensorsSet::open(dir));
  auto st = std::make_shared<const format::SafetensorsSet>(std::move(set));
  TensorLookup lookup = [&st](std::string_view name) -> std::optional<tensor::TensorView> {
    const tensor::TensorView* v = st->find(name);
    if (v == nullptr) return std::nullopt;
    return *v;
  };
  KEEL_ASSIGN_OR_RETURN(out.weights, collect_weights(out.config, WeightNaming::kHf, lookup));
  out.source = st;
  return out;
}

// Elements of the weights the cuda backend keeps as matrices (embedding, LM head, projections).
int64_t matrix_elements(const ModelWeights& w) {
  int64_t n = w.token_embd.numel();
  if (w.output.data != nullptr && w.output.data != w.token_embd.data) n += w.output.numel();
  for (const LayerWeights& l : w.layers) {
    for (const tensor::TensorView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      if (v->data != nullptr) n += v->numel();
    }
  }
  return n;
}

// `--dtype auto` on cuda: f32 for a GGUF file whose matrices take at most 2 GiB as f32 (models up to
// ~500M parameters: the cost is small and greedy output then follows the cpu backend's), else bf16
// (safetensors, dummy weights, larger GGUFs). docs/cuda_backend.md "Precision" argues the choice.
constexpr int64_t kAutoF32MaxBytes = int64_t{2} << 30;

std::string resolve_dtype(const LoadOptions& opts, bool gguf, const ModelWeights& w) {
  if (opts.backend != "cuda" || opts.backend_options.dtype != "auto") return opts.backend_options.dtype;
  return gguf && matrix_elements(w) * 4 <= kAutoF32MaxBytes ? "f32" : "bf16";
}

}  // namespace

Result<std::unique_ptr<Model>> load_model(const LoadOptions& opts) {
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(opts.path, ec);
  if (!is_dir && !std::filesystem::is_regular_file(opts.path, ec)) {
    return make_error(ErrorCode::kNotFound, "model path '{}' does not exist", opts.path);
  }
  if (opts.dummy_weights && !is_dir) {
    return make_error(ErrorCode::kInvalidArgument, "dummy weights need a Hugging Face folder with config.json, got '{}'",
                      opts.path);
  }
  Result<Loaded> loaded = is_dir ? load_hf(opts.path, opts.dummy_weights) : load_gguf(opts.path);
  if (!loaded.ok()) return loaded.status().with_context(fmt::format("loading {}", opts.path));
  Loaded& l = loaded.value();
  backend::BackendOptions bo = opts.backend_options;
  bo.dtype = resolve_dtype(opts, !is_dir, l.weights);
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Backend> be, backend::create_backend(opts.backend, bo));
  Result<std::unique_ptr<Model>> m =
      create_llama_model(std::move(l.config), std::move(l.weights), std::move(be), std::move(l.source));
  if (!m.ok()) return m.status().with_context(fmt::format("loading {}", opts.path));
  return m;
}

}  // namespace keel::model
