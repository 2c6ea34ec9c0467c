// RoPE inverse frequencies for none / linear / llama3 / yarn scaling, computed once at load exactly
// as transformers' rope init functions do (f32 arithmetic in the same order), plus GGUF's optional
// per-frequency divisors (`rope_freqs.weight`, how llama.cpp stores Llama 3 scaling). Used by
// arch/*.cc at load; pure functions, any thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"

namespace keel::model {

struct RopeTable {
  std::vector<float> inv_freq;  // [rot_dims / 2]
  float attn_factor = 1.0f;     // magnitude scale on cos/sin (YaRN), 1 otherwise
};

// rot_dims: rotated dims per head (even). freq_factors: empty, or [rot_dims / 2] divisors applied
// after scaling (llama.cpp's rope_freqs). The config must have passed validate_config.
RopeTable compute_rope(const RopeConfig& rope, int64_t rot_dims, std::span<const float> freq_factors = {});

}  // namespace keel::model
