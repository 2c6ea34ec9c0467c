// Chat templates: a Jinja subset interpreter sufficient for the real templates of SmolLM2,
// Llama 3.x, Qwen 2.5/3, Mistral and DeepSeek-V3 (docs/chat_templates.md lists the subset). A
// template compiles once (syntax errors and unsupported constructs are a Status naming the construct
// and line), then renders many times with a JSON context: {"messages": [...], "add_generation_prompt":
// bool, "bos_token", "eos_token", "tools": [...], ...}, exactly as transformers' apply_chat_template
// renders it (trim_blocks, lstrip_blocks, its tojson, raise_exception, strftime_now). Compiled
// templates are immutable: any thread may render.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/template/render_options.h"

namespace keel::tokenizer {

namespace jinja {
struct Program;
}

class ChatTemplate {
 public:
  static Result<ChatTemplate> compile(std::string_view source);

  // The context must be a JSON object. Keys keep their order (dict iteration and tojson show it), so
  // parse requests into nlohmann::ordered_json. Errors at render time (undefined values used in
  // operations, raise_exception(...) — message "raise_exception: <text>" — type errors, limits) are
  // Statuses with the template line.
  Result<std::string> render(const nlohmann::ordered_json& context, const jinja::RenderOptions& options = {}) const;
  // Same, from nlohmann::json, whose objects iterate in sorted key order.
  Result<std::string> render(const nlohmann::json& context, const jinja::RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace keel::tokenizer
