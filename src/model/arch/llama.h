// The Llama-family forward (Llama 2/3, SmolLM, Qwen2 with q/k/v biases, Qwen3 with q/k norms),
// written once against backend::Backend over a flat Batch. Created by load.cc from a validated
// config and collected weights; the Model it returns is used by one thread at a time.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "base/status.h"
#include "model/config.h"
#include "model/model.h"
#include "model/weights.h"

namespace keel::model {

// Uploads the weights to the backend. `source` keeps the mapped file(s) the weight views point
// into alive for as long as the model (the cpu backend uses the mapping in place).
Result<std::unique_ptr<Model>> create_llama_model(ModelConfig config, ModelWeights weights,
                                                  std::unique_ptr<backend::Backend> backend,
                                                  std::shared_ptr<const void> source);

}  // namespace keel::model
