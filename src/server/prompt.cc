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

openai::ApiResult<std::string> chat_prompt_text(const tokenizer::Tokenizer& tok,
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
  return std::move(text).value();
}

openai::ApiResult<std::vector<int32_t>> chat_prompt_tokens(const tokenizer::Tokenizer& tok,
                                                           const tokenizer::ChatTemplate* chat_template,
                                                           const std::vector<openai::ChatMessage>& messages) {
  auto text = chat_prompt_text(tok, chat_template, messages);
  if (!text.ok()) return text.error();
  return tok.encode(text.value(), kChatEncode);
}

std::vector<int32_t> leading_prompt_tokens(const tokenizer::Tokenizer& tok, std::string_view text,
                                           const tokenizer::EncodeOptions& opts, size_t max_tokens) {
  const size_t budget = max_tokens * kLeadBytesPerToken + kCutSlackBytes;
  if (text.size() <= budget) {
    auto ids = tok.encode(text, opts);
    if (ids.size() > max_tokens) ids.resize(max_tokens);
    return ids;
  }
  size_t cut = budget;  // on a character's first byte
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  auto ids = tok.encode(text.substr(0, cut), opts);
  size_t dropped = 0;
  while (!ids.empty() && dropped < kCutSlackBytes) {
    dropped += tok.token_bytes(ids.back()).size();
    ids.pop_back();
  }
  if (ids.size() > max_tokens) ids.resize(max_tokens);
  return ids;
}

std::vector<int32_t> text_prompt_tokens(const tokenizer::Tokenizer& tok, std::string_view text) {
  return tok.encode(text, kTextEncode);
}

}  // namespace keel::server
