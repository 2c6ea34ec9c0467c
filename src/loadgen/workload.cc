#include "loadgen/workload.h"

#include <iterator>
#include <random>

#include <fmt/format.h>

namespace keel::loadgen {

namespace {

// Common English words, so prompts tokenize like ordinary text on any vocabulary.
constexpr const char* kWords[] = {
    "time",    "people", "water",  "house",  "light",   "river",  "garden", "music",  "city",    "market", "winter",
    "summer",  "paper",  "school", "number", "family",  "story",  "window", "table",  "friend",  "road",   "forest",
    "animal",  "letter", "money",  "doctor", "kitchen", "travel", "energy", "nature", "island",  "bridge", "mountain",
    "moment",  "answer", "simple", "strong", "bright",  "quiet",  "happy",  "early",  "green",   "small",  "large",
    "write",   "build",  "learn",  "watch",  "follow",  "change", "carry",  "bring",  "explain", "choose", "listen",
    "measure", "repair", "cook",   "paint",  "open",    "close",  "plan",   "share",  "remember"};

std::string random_words(std::mt19937_64& rng, int32_t n) {
  std::uniform_int_distribution<size_t> pick(0, std::size(kWords) - 1);
  std::string out;
  out.reserve(static_cast<size_t>(n) * 7);
  for (int32_t i = 0; i < n; ++i) {
    if (i > 0) out += ' ';
    out += kWords[pick(rng)];
  }
  return out;
}

int32_t uniform(std::mt19937_64& rng, int32_t lo, int32_t hi) {
  return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
}

std::vector<std::string> system_prompts(const WorkloadConfig& c) {
  std::vector<std::string> out;
  for (int32_t t = 0; t < c.n_tenants; ++t) {
    for (int32_t p = 0; p < c.n_prompts_per_tenant; ++p) {
      // Each prompt has its own stream, so changing n_requests never changes the prompts.
      std::mt19937_64 rng(c.seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(t * 1000 + p + 1)));
      out.push_back(fmt::format("You are the assistant of tenant {}, policy {}. Rules: {}.", t, p,
                                random_words(rng, c.prefix_words)));
    }
  }
  return out;
}

}  // namespace

Status WorkloadConfig::validate() const {
  auto bad = [](std::string_view what, auto v) {
    return make_error(ErrorCode::kInvalidArgument, "{} is out of range: {}", what, v);
  };
  if (n_requests < 1) return bad("--num-requests (>= 1)", n_requests);
  if (input_words_min < 1 || input_words_max < input_words_min)
    return make_error(ErrorCode::kInvalidArgument, "need 1 <= --input-words-min <= --input-words-max, got {} and {}",
                      input_words_min, input_words_max);
  if (output_tokens_min < 1 || output_tokens_max < output_tokens_min)
    return make_error(ErrorCode::kInvalidArgument,
                      "need 1 <= --output-tokens-min <= --output-tokens-max, got {} and {}", output_tokens_min,
                      output_tokens_max);
  if (n_tenants < 1) return bad("--tenants (>= 1)", n_tenants);
  if (n_prompts_per_tenant < 1) return bad("--prompts-per-tenant (>= 1)", n_prompts_per_tenant);
  if (int64_t{n_tenants} * n_prompts_per_tenant > 100'000)
    return bad("--tenants x --prompts-per-tenant (<= 100000)", int64_t{n_tenants} * n_prompts_per_tenant);
  if (prefix_words < 1) return bad("--prefix-words (>= 1)", prefix_words);
  if (question_words < 1) return bad("--question-words (>= 1)", question_words);
  return {};
}

Result<WorkloadKind> parse_workload_kind(std::string_view name) {
  if (name == "random") return WorkloadKind::kRandom;
  if (name == "shared-prefix") return WorkloadKind::kSharedPrefix;
  return make_error(ErrorCode::kInvalidArgument, "unknown workload '{}' (random | shared-prefix)", name);
}

std::vector<RequestSpec> make_workload(const WorkloadConfig& c) {
  std::mt19937_64 rng(c.seed);
  std::vector<RequestSpec> out;
  out.reserve(static_cast<size_t>(c.n_requests));
  const std::vector<std::string> prefixes =
      c.kind == WorkloadKind::kSharedPrefix ? system_prompts(c) : std::vector<std::string>{};
  for (int64_t i = 0; i < c.n_requests; ++i) {
    RequestSpec r;
    r.max_tokens = uniform(rng, c.output_tokens_min, c.output_tokens_max);
    switch (c.kind) {
      case WorkloadKind::kRandom: r.user = random_words(rng, uniform(rng, c.input_words_min, c.input_words_max)); break;
      case WorkloadKind::kSharedPrefix:
        r.prefix_group = uniform(rng, 0, static_cast<int32_t>(prefixes.size()) - 1);
        r.system = prefixes[static_cast<size_t>(r.prefix_group)];
        // The request number makes every question unique even if the words repeat.
        r.user = fmt::format("Question {}: {}?", i, random_words(rng, c.question_words));
        break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace keel::loadgen
