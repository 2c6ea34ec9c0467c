#include "server/prompt.h"

#include <nlohmann/json.hpp>

namespace keel::server {

using nlohmann::ordered_json;

namespace {

std::string special_text(const tokenizer::Tokenizer& tok, int32_t id) {
  if (id < 0 || id >= tok.n_vocab()) return "";
  return tok.token_bytes(id);
}

}  // namespace

openai::ApiResult<std::vector<int32_t>> chat_prompt_tokens(const tokenizer::Tokenizer& tok,
                                                           const tokenizer::ChatTemplate* chat_template,
                                                           const std::vector<openai::ChatMessage>& messages) {
  if (chat_template == nullptr) {
    return openai::ApiError{
        .status = Status(ErrorCode::kUnsupported, "this model has no chat template; use /v1/completions"),
        .param = "messages"};
  }
  ordered_json msgs = ordered_json::array();
  for (const auto& m : messages) {
    ordered_json j = {{"role", m.role}, {"content", m.content}};
    if (!m.name.empty()) j["name"] = m.name;
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    msgs.push_back(std::move(j));
  }
  const auto& spec = tok.spec();
  ordered_json context = {{"messages", std::move(msgs)},
                          {"add_generation_prompt", true},
                          {"bos_token", special_text(tok, spec.bos_id)},
                          {"eos_token", special_text(tok, spec.eos_id)}};
  auto text = chat_template->render(context);
  if (!text.ok()) {
    return openai::ApiError{.status = Status(ErrorCode::kInvalidArgument, text.status().message()),
                            .param = "messages"};
  }
  return tok.encode(*text, tokenizer::EncodeOptions{.add_special = false, .parse_special = true});
}

std::vector<int32_t> text_prompt_tokens(const tokenizer::Tokenizer& tok, std::string_view text) {
  return tok.encode(text, tokenizer::EncodeOptions{.add_special = true, .parse_special = true});
}

}  // namespace keel::server
