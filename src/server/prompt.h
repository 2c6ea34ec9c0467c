// Prompts to token ids: chat messages through the model's chat template (rendered as transformers'
// apply_chat_template does, then encoded without adding BOS/EOS, as HF does), and completion text
// (encoded with the vocabulary's BOS/EOS). Called by server/api.cc on an io thread; the tokenizer
// and template are immutable, so any thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "server/openai/errors.h"
#include "server/openai/request_parse.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

// kUnsupported (400) when `chat_template` is null (the model has none); template errors (e.g. its
// raise_exception on role order) are 400s on "messages".
openai::ApiResult<std::vector<int32_t>> chat_prompt_tokens(const tokenizer::Tokenizer& tok,
                                                           const tokenizer::ChatTemplate* chat_template,
                                                           const std::vector<openai::ChatMessage>& messages);

std::vector<int32_t> text_prompt_tokens(const tokenizer::Tokenizer& tok, std::string_view text);

}  // namespace keel::server
