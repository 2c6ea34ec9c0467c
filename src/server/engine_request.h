// Turns validated API parameters plus a tokenized prompt into the sched::GenerateRequest the engine
// runs (sampling, penalties, logit_bias, stops, max_tokens against the context). Structured output
// is compiled separately (server/structured_output.h) and attached by server/api.cc. Any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/request.h"
#include "server/openai/errors.h"
#include "server/openai/request_parse.h"

namespace keel::server {

struct EngineRequestLimits {
  int32_t max_context_tokens = 0;         // prompt + completion; 0 = unknown (the engine checks)
  int32_t default_max_tokens = 16;        // when the request sets none and the context is unknown
  bool max_tokens_fills_context = false;  // chat: an absent max_tokens means "the rest of the context"
  const char* prompt_param = "prompt";    // named when the prompt does not fit ("messages" for chat)
};

openai::ApiResult<sched::GenerateRequest> make_generate_request(const openai::GenerationParams& params,
                                                                std::vector<int32_t> prompt,
                                                                const EngineRequestLimits& limits);

// A seed for requests that set none: distinct per call, from a random start. Thread-safe.
uint64_t fresh_seed();

}  // namespace keel::server
