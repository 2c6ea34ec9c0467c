// ModelConfig from GGUF metadata (`general.architecture` = llama / qwen2 / qwen3 and the
// `<arch>.*` keys llama.cpp's converter writes). Errors name the key. Called by load.cc; any thread.
#pragma once

#include "base/status.h"
#include "format/gguf.h"
#include "model/config.h"

namespace keel::model {

// Reads and validates the config. Uses tensor infos too: vocab size falls back to token_embd's
// rows, tied_embeddings is "no output.weight", attn_bias is "blk.0.attn_q.bias present".
Result<ModelConfig> config_from_gguf(const format::GgufFile& gguf);

}  // namespace keel::model
