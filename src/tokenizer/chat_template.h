// Chat templates: a Jinja subset interpreter sufficient for the real templates of SmolLM2,
// Llama 3.x, Qwen 2.5/3, Mistral and DeepSeek-V3. A template compiles once (syntax errors and
// unsupported constructs are a Status naming the construct and line), then renders many times with
// a JSON context: {"messages": [...], "add_generation_prompt": bool, "bos_token", "eos_token",
// "tools": [...], ...}. Compiled templates are immutable: any thread may render.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace keel::tokenizer {

namespace jinja {
struct Program;
}

class ChatTemplate {
 public:
  static Result<ChatTemplate> compile(std::string_view source);
  // Errors at render time (undefined callables, raise_exception(...), type errors) are Statuses.
  Result<std::string> render(const nlohmann::json& context) const;

 private:
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace keel::tokenizer
