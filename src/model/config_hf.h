// ModelConfig from a Hugging Face config.json (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM),
// with transformers' defaults for absent keys and both RoPE spellings (`rope_theta` + `rope_scaling`,
// and transformers 5's `rope_parameters`). Errors name the key. Called by load.cc; any thread.
#pragma once

#include <string_view>

#include "base/status.h"
#include "model/config.h"

namespace keel::model {

Result<ModelConfig> config_from_hf_json(std::string_view json_text);

}  // namespace keel::model
