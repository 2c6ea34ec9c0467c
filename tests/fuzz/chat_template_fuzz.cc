// Fuzzes chat-template compile + render: arbitrary bytes as the template source, rendered against a
// fixed context with tools, tool calls and non-ASCII text under tight limits. Any Status is fine; a
// crash, sanitizer report, hang or unbounded allocation is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Grüße 世界 👋 <b>&</b>"},
      {"role": "assistant", "content": "<think>hm</think>ok", "tool_calls": [
        {"id": "abcDEF123", "type": "function",
         "function": {"name": "get_weather", "arguments": {"location": "Paris", "n": 2, "x": 1.5e-7}}}]},
      {"role": "tool", "tool_call_id": "abcDEF123", "content": "{\"t\": 22}"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
               "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = keel::tokenizer::ChatTemplate::compile(source);
  if (!tmpl.ok()) return 0;
  keel::tokenizer::jinja::RenderOptions options;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_loop_iterations = 20'000;
  options.limits.max_string_work_bytes = 8 << 20;
  options.limits.max_call_depth = 16;
  std::tm tm{};
  tm.tm_year = 125;
  tm.tm_mday = 1;
  options.now = tm;
  (void)tmpl->render(context(), options);
  return 0;
}
