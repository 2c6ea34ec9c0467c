// `--load-format dummy`: random weights for any HF config.json, so a model of any shape can be run
// and benchmarked without its safetensors. Matrices are bf16 views into one shared random buffer (at
// per-tensor offsets), norms are ones, biases small random f32. Called by load.cc; any thread.
#pragma once

#include <memory>

#include "base/status.h"
#include "model/config.h"
#include "model/weights.h"

namespace keel::model {

// A lookup answering every HF tensor name the config needs; `storage` receives the buffers the views
// point into (keep it alive as long as the views).
TensorLookup make_dummy_lookup(const ModelConfig& config, std::shared_ptr<const void>& storage);

}  // namespace keel::model
