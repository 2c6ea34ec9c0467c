// Workloads for `keel bench serve`: the list of requests a run sends, made deterministically from a
// seed so keel and a peer server get the same prompts. Text, not token ids, because the client speaks
// plain OpenAI HTTP to servers with different tokenizers; lengths are in words (about 1.3 SmolLM2
// tokens per word of the built-in vocabulary). Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace keel::loadgen {

enum class WorkloadKind {
  kRandom,        // independent prompts of random length
  kSharedPrefix,  // T tenants x P system prompts, each request one of them + a short unique question
};

struct WorkloadConfig {
  WorkloadKind kind = WorkloadKind::kRandom;
  int64_t n_requests = 100;
  uint64_t seed = 0;
  int32_t input_words_min = 16, input_words_max = 64;      // kRandom: user prompt length
  int32_t output_tokens_min = 16, output_tokens_max = 64;  // max_tokens of each request, both kinds
  int32_t n_tenants = 4;                                   // kSharedPrefix
  int32_t n_prompts_per_tenant = 2;                        // kSharedPrefix: system prompts per tenant
  int32_t prefix_words = 400;                              // kSharedPrefix: words per system prompt
  int32_t question_words = 12;                             // kSharedPrefix: words per unique question

  Status validate() const;
};

struct RequestSpec {
  std::string system;  // empty: no system message (chat) / no prefix (completions)
  std::string user;
  int32_t max_tokens = 0;
  int32_t prefix_group = -1;  // kSharedPrefix: tenant * n_prompts_per_tenant + prompt; else -1
};

std::vector<RequestSpec> make_workload(const WorkloadConfig& config);

// Parses "random" | "shared-prefix".
Result<WorkloadKind> parse_workload_kind(std::string_view name);

}  // namespace keel::loadgen
