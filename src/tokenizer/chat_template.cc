#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include "tokenizer/template/evaluator.h"
#include "tokenizer/template/parser.h"

namespace keel::tokenizer {

Result<ChatTemplate> ChatTemplate::compile(std::string_view source) {
  // transformers' environment: trim_blocks and lstrip_blocks on, trailing newline dropped.
  auto program = jinja::parse_template(source, jinja::LexOptions{});
  if (!program.ok()) return program.status().with_context("chat template");
  ChatTemplate t;
  t.program_ = std::make_shared<const jinja::Program>(std::move(program).value());
  return t;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context,
                                         const jinja::RenderOptions& options) const {
  if (!context.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "chat template context must be a JSON object");
  }
  auto value = jinja::from_json(context);
  if (!value.ok()) return value.status().with_context("chat template");
  jinja::Interpreter interpreter(options, value->as_dict());
  auto out = interpreter.render(*program_);
  if (!out.ok()) return out.status().with_context("chat template");
  return out;
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context, const jinja::RenderOptions& options) const {
  return render(nlohmann::ordered_json::parse(context.dump()), options);
}

}  // namespace keel::tokenizer
