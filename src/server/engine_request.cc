#include "server/engine_request.h"

#include <algorithm>
#include <atomic>
#include <random>

#include "sample/rng.h"

namespace keel::server {

using openai::ApiError;
using openai::GenerationParams;

uint64_t fresh_seed() {
  static const uint64_t base = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  return sample::mix64(base + counter.fetch_add(1, std::memory_order_relaxed));
}

openai::ApiResult<sched::GenerateRequest> make_generate_request(const GenerationParams& params,
                                                                std::vector<int32_t> prompt,
                                                                const EngineRequestLimits& limits) {
  if (prompt.empty()) return openai::param_error("prompt", "is empty (no tokens after tokenization)");
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  int32_t max_tokens = params.max_tokens.value_or(limits.default_max_tokens);
  if (limits.max_context_tokens > 0) {
    int64_t room = limits.max_context_tokens - n_prompt;
    if (room < 1) {
      return openai::param_error(limits.prompt_param,
                                 "the prompt has {} tokens, more than the context of {} tokens leaves room for",
                                 n_prompt, limits.max_context_tokens);
    }
    if (!params.max_tokens) {
      max_tokens = limits.max_tokens_fills_context ? static_cast<int32_t>(room)
                                                   : static_cast<int32_t>(std::min<int64_t>(max_tokens, room));
    } else if (*params.max_tokens > room) {
      return openai::param_error("max_tokens",
                                 "the prompt ({} tokens) plus max_tokens ({}) exceed the context of {} tokens",
                                 n_prompt, *params.max_tokens, limits.max_context_tokens);
    }
  }
  sched::GenerateRequest req;
  req.prompt = std::move(prompt);
  req.sampling = sample::SamplingParams{.temperature = params.temperature,
                                        .top_k = params.top_k,
                                        .top_p = params.top_p,
                                        .min_p = params.min_p,
                                        .seed = params.seed.value_or(fresh_seed()),
                                        .repetition_penalty = params.repetition_penalty,
                                        .frequency_penalty = params.frequency_penalty,
                                        .presence_penalty = params.presence_penalty,
                                        .logit_bias = params.logit_bias};
  if (Status s = req.sampling.validate(); !s.ok()) return ApiError{.status = s};
  req.stop = sched::StopConditions{.max_tokens = max_tokens,
                                   .stop_strings = params.stop,
                                   .stop_token_ids = params.stop_token_ids,
                                   .ignore_eos = params.ignore_eos};
  req.n = params.n;
  req.top_logprobs = params.top_logprobs;
  return req;
}

}  // namespace keel::server
