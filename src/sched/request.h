// What the server hands the scheduler for one generation, and what the scheduler streams back.
// Plain data, built by server/ (from OpenAI or native requests) and consumed by sched/. The prompt is
// already tokenized (server/ runs the chat template and tokenizer off the scheduler thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sample/constraint.h"
#include "sample/sampler.h"

namespace keel::sched {

using RequestId = uint64_t;

struct StopConditions {
  int32_t max_tokens = 16;
  std::vector<std::string> stop_strings;   // matched across token boundaries, excluded from output
  std::vector<int32_t> stop_token_ids;     // in addition to the model's end-of-generation ids
  bool ignore_eos = false;
};

struct GenerateRequest {
  RequestId id = 0;
  std::vector<int32_t> prompt;             // token ids
  sample::SamplingParams sampling;
  StopConditions stop;
  int32_t n = 1;                           // independent samples sharing the prompt
  int32_t top_logprobs = -1;               // -1 = no logprobs; 0..20 = chosen + that many alternatives
  int32_t priority = 0;                    // higher runs first under pressure
  std::string tenant;                      // for fairness policies and metrics
  // Structured output: makes each sample's TokenConstraint (a compiled grammar); null = free text.
  std::shared_ptr<const sample::ConstraintFactory> constraint;
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

// One step of one sample's stream. Text is complete UTF-8 with stop strings removed.
struct StreamEvent {
  RequestId id = 0;
  int32_t index = 0;                       // which of the n samples
  std::vector<int32_t> tokens;             // new token ids in this event
  std::string text;                        // new text in this event
  std::vector<TokenLogprob> logprobs;      // per new token (when requested)
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  FinishReason finish = FinishReason::kNone;
  std::string error;                       // when finish == kError
  // Set on the final event of each sample:
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;               // prompt tokens served from the prefix cache
  int32_t completion_tokens = 0;
};

}  // namespace keel::sched
