// A loaded model: config, weights on a backend, and the forward pass. The KV storage layout belongs
// to the architecture (per layer K and V rows of [n_kv_heads, head_dim] for Llama-family models;
// latent rows for MLA later); cache/ hands out slot indices into it.
// Used by one thread at a time (the thread that runs forward passes).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "backend/backend.h"
#include "base/status.h"
#include "model/batch.h"
#include "model/config.h"

namespace keel::model {

// Per-layer KV storage for n_slots tokens.
struct KvStorage {
  int64_t n_slots = 0;
  std::vector<backend::Buffer> k;  // [n_layers] of [n_slots, n_kv_heads, head_dim]
  std::vector<backend::Buffer> v;  // [n_layers] of [n_slots, n_kv_heads, head_dim]
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual backend::Backend& backend() = 0;
  virtual Result<KvStorage> make_kv_storage(int64_t n_slots) = 0;
  // Runs the batch, writes its K/V into kv, and copies the logits of batch.logit_rows to
  // logits [logit_rows.size(), vocab_size] (host f32).
  virtual Status forward(const Batch& batch, KvStorage& kv, std::span<float> logits) = 0;
};

struct LoadOptions {
  std::string path;          // GGUF file, or HF folder (config.json + *.safetensors)
  std::string backend = "cpu";
  backend::BackendOptions backend_options;
};

// Opens the file(s), reads the config, uploads weights. Errors name the file and what is wrong.
Result<std::unique_ptr<Model>> load_model(const LoadOptions& opts);

}  // namespace keel::model
