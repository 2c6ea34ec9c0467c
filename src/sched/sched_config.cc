#include "sched/sched_config.h"

#include <limits>

namespace keel::sched {

std::string_view policy_name(Policy policy) {
  switch (policy) {
    case Policy::kFcfs: return "fcfs";
    case Policy::kLongestPrefix: return "lpm";
  }
  return "?";
}

Result<Policy> parse_policy(std::string_view name) {
  if (name == "fcfs") return Policy::kFcfs;
  if (name == "lpm" || name == "longest-prefix") return Policy::kLongestPrefix;
  return make_error(ErrorCode::kInvalidArgument, "scheduling policy '{}' is not one of fcfs, lpm", name);
}

Status SchedConfig::validate() const {
  constexpr int64_t kMaxSlots = std::numeric_limits<int32_t>::max();
  if (kv_tokens < 0 || kv_tokens > kMaxSlots) {
    return make_error(ErrorCode::kInvalidArgument, "kv_tokens = {} is outside [0, {}]", kv_tokens, kMaxSlots);
  }
  if (max_batch_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "max_batch_tokens = {} must be at least 1", max_batch_tokens);
  }
  if (prefill_chunk < 1) {
    return make_error(ErrorCode::kInvalidArgument, "prefill_chunk = {} must be at least 1", prefill_chunk);
  }
  if (max_running < 1) {
    return make_error(ErrorCode::kInvalidArgument, "max_running = {} must be at least 1", max_running);
  }
  if (max_batch_tokens < max_running) {
    return make_error(ErrorCode::kInvalidArgument,
                      "max_batch_tokens = {} is less than max_running = {}: every running sequence needs one "
                      "decode token per step",
                      max_batch_tokens, max_running);
  }
  if (max_queue < 1) return make_error(ErrorCode::kInvalidArgument, "max_queue = {} must be at least 1", max_queue);
  if (event_queue_capacity < 0) {
    return make_error(ErrorCode::kInvalidArgument, "event_queue_capacity = {} is negative", event_queue_capacity);
  }
  if (prefix_wait_min_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "prefix_wait_min_tokens = {} must be at least 1",
                      prefix_wait_min_tokens);
  }
  if (prefix_wait_max_steps < 0) {
    return make_error(ErrorCode::kInvalidArgument, "prefix_wait_max_steps = {} is negative", prefix_wait_max_steps);
  }
  return {};
}

}  // namespace keel::sched
