// JSON bodies of OpenAI responses: chat.completion, text_completion, their stream chunks
// (chat.completion.chunk / text_completion), usage (with prompt_tokens_details.cached_tokens) and
// logprobs in OpenAI's two shapes. Called by server/generation.cc on a connection strand; pure
// functions of their arguments, so any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/request.h"

namespace keel::server::openai {

// The raw bytes of a token (tokenizer::Tokenizer::token_bytes), for logprob entries.
using TokenBytes = std::function<const std::string&(int32_t)>;

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
};

// Logprob data of some tokens of one choice.
struct LogprobRun {
  std::span<const int32_t> tokens;
  std::span<const sched::TokenLogprob> chosen;                     // [n_tokens]
  std::span<const std::vector<sched::TokenLogprob>> alternatives;  // [n_tokens][top_logprobs]
};

// One finished choice of a non-streamed response.
struct Choice {
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<sched::TokenLogprob> logprobs;
  std::vector<std::vector<sched::TokenLogprob>> top_logprobs;
  sched::FinishReason finish = sched::FinishReason::kNone;
};

// What every response object names.
struct ResponseHead {
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// "stop", "length", or null (kNone; kCancelled and kError never reach a success body).
nlohmann::json finish_reason_json(sched::FinishReason reason);
nlohmann::json usage_json(const Usage& usage);

// {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]}
nlohmann::json chat_logprobs_json(const LogprobRun& run, const TokenBytes& token_bytes);
// {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}; offsets start at
// text_offset (the length of the choice's text before this run).
nlohmann::json completion_logprobs_json(const LogprobRun& run, const TokenBytes& token_bytes, int64_t text_offset);

// Non-streamed bodies.
std::string chat_completion_json(const ResponseHead& head, std::span<const Choice> choices, const Usage& usage,
                                 bool with_logprobs, const TokenBytes& token_bytes);
std::string text_completion_json(const ResponseHead& head, std::span<const Choice> choices, const Usage& usage,
                                 bool with_logprobs, const TokenBytes& token_bytes);

// One chat.completion.chunk for one choice. `role` set only on the first chunk of a choice;
// `logprobs` (may be null) in chat shape; usage null unless `usage_null` is false and usage given.
struct ChunkDelta {
  int32_t index = 0;
  std::optional<std::string> role;
  std::optional<std::string> content;
  nlohmann::json logprobs;  // null or chat_logprobs_json(...)
  sched::FinishReason finish = sched::FinishReason::kNone;
};
std::string chat_chunk_json(const ResponseHead& head, const ChunkDelta& delta, bool include_usage_field);
// One text_completion stream chunk (`logprobs` null or completion_logprobs_json(...)).
std::string completion_chunk_json(const ResponseHead& head, int32_t index, std::string_view text,
                                  const nlohmann::json& logprobs, sched::FinishReason finish, bool include_usage_field);
// The final usage-only chunk (choices: []) of a stream with stream_options.include_usage.
std::string usage_chunk_json(const ResponseHead& head, std::string_view object, const Usage& usage);

// Serialises with invalid UTF-8 replaced by U+FFFD (token bytes may split a character).
std::string dump_json(const nlohmann::json& j);

}  // namespace keel::server::openai
