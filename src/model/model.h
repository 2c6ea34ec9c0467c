// A loaded model: config, weights on a backend, and the forward pass. The KV storage layout belongs
// to the architecture (per layer K and V rows of [n_kv_heads, head_dim] for Llama-family models;
// latent rows for MLA later); cache/ hands out slot indices into it.
// Used by one thread at a time (the thread that runs forward passes).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// Called during forward with each named intermediate tensor (llama.cpp's names: "attn_norm",
// "Qcur", "Kcur", "Vcur", "kqv_out", "ffn_inp", "ffn_out", "result_norm", "result_output", ...);
// layer is -1 for tensors outside the blocks. The tensor lives on the backend and is valid only
// during the call (copy it with Backend::copy_to_host).
using DumpHook = std::function<void(std::string_view name, int layer, const backend::Tensor& t)>;

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual backend::Backend& backend() = 0;
  virtual Result<KvStorage> make_kv_storage(int64_t n_slots) = 0;
  // Runs the batch, writes its K/V into kv, and copies the logits of batch.logit_rows to
  // logits [logit_rows.size(), vocab_size] (host f32).
  // A malformed batch (ids, slots or rows out of range, sequences not covering the tokens) is a
  // kInvalidArgument Status and runs nothing.
  virtual Status forward(const Batch& batch, KvStorage& kv, std::span<float> logits) = 0;
  // Like forward, but the logits stay on the backend: the f32 [logit_rows.size(), vocab] tensor, valid
  // until the next forward; nothing is copied or synchronized (sampling on the device reads it, see
  // Backend::sample_rows). kUnsupported where the model has no such path.
  virtual Result<backend::Tensor> forward_on_device(const Batch& /*batch*/, KvStorage& /*kv*/) {
    return make_error(ErrorCode::kUnsupported, "this model keeps no logits on the device");
  }
  // Captures the backend's decode-step graphs (Backend::step_graph_bucket) for every bucket up to
  // max_seqs sequences now instead of at first use, with dummy single-token steps written into KV
  // slots that are still free (real tokens overwrite them before anything reads them). max_tokens
  // (most tokens of any step) and max_ctx (longest context) size the buffers the graphs capture, so
  // later steps do not move them. Returns the number of buckets (0 where the backend has no graphs).
  virtual Result<int64_t> capture_decode_graphs(KvStorage& /*kv*/, int64_t /*max_seqs*/, int64_t /*max_tokens*/,
                                                int64_t /*max_ctx*/) {
    return int64_t{0};
  }
  // Installs (or, with an empty function, removes) the intermediate-tensor hook. Debugging only:
  // it slows the forward down.
  virtual void set_dump_hook(DumpHook hook) = 0;
};

struct LoadOptions {
  std::string path;          // GGUF file, or HF folder (config.json + *.safetensors)
  std::string backend = "cpu";
  bool dummy_weights = false;  // random weights from config.json alone (HF folder; `--load-format dummy`)
  backend::BackendOptions backend_options;
};

// Opens the file(s), reads the config, uploads weights. Errors name the file and what is wrong.
Result<std::unique_ptr<Model>> load_model(const LoadOptions& opts);

}  // namespace keel::model
