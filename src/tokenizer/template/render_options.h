// Per-render options of a chat template: the limits that bound one render (exceeding one is a
// kResourceExhausted Status, never a hang) and the clock strftime_now() reads. Filled by callers of
// ChatTemplate::render (tokenizer/chat_template.h); read by the evaluator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>

namespace keel::tokenizer::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;          // any one string, the output included
  uint64_t max_loop_iterations = 1'000'000;            // for-loop iterations plus list elements built
  uint64_t max_string_work_bytes = uint64_t{1} << 30;  // bytes built by concatenation, repetition, filters
  int max_call_depth = 64;                             // nested macro calls
};

struct RenderOptions {
  RenderLimits limits;
  std::optional<std::tm> now;  // what strftime_now() formats; unset: the local time at render
};

}  // namespace keel::tokenizer::jinja
