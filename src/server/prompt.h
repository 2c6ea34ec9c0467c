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

// How the two prompt kinds are encoded: a rendered chat without BOS/EOS (the template writes them),
// completion text with the vocabulary's.
inline constexpr tokenizer::EncodeOptions kChatEncode{.add_special = false, .parse_special = true};
inline constexpr tokenizer::EncodeOptions kTextEncode{.add_special = true, .parse_special = true};

// The rendered chat prompt (what chat_prompt_tokens encodes).
openai::ApiResult<std::string> chat_prompt_text(const tokenizer::Tokenizer& tok,
                                                const tokenizer::ChatTemplate* chat_template,
                                                const std::vector<openai::ChatMessage>& messages);

// The first tokens of encode(text, opts), at most max_tokens, without encoding all of a long text (a
// router's prefix keys need only the prompt's head: keel router on an io thread took 196 ms to
// encode a 7.5 MB prompt). Encodes the leading max_tokens x kLeadBytesPerToken + kCutSlackBytes
// bytes, cut on a character boundary, and when it cut, drops the tokens of the last kCutSlackBytes
// bytes, which the rest of the text could have encoded differently (a word or special token the cut
// split). For
// ordinary text (3-5 bytes a token) that leaves max_tokens tokens, equal to the head of the whole
// encoding; text of longer tokens may give fewer. A routing key, not a prompt to run.
inline constexpr size_t kLeadBytesPerToken = 8;
inline constexpr size_t kCutSlackBytes = 64;
std::vector<int32_t> leading_prompt_tokens(const tokenizer::Tokenizer& tok, std::string_view text,
                                           const tokenizer::EncodeOptions& opts, size_t max_tokens);

}  // namespace keel::server
