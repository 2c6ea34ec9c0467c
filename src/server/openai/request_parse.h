// Parses and validates the bodies of POST /v1/chat/completions and /v1/completions into plain
// structs, strictly: wrong types, out-of-range values and unknown fields are 400s naming the field.
// Structured output (response_format, keel's `regex` / `ebnf` fields) is parsed here and compiled by
// server/structured_output.cc, whose errors name the field it came from. Pure: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/openai/errors.h"
#include "server/openai/json_fields.h"

namespace keel::server::openai {

struct ParseLimits {
  int32_t max_n = 16;     // samples per request
  int32_t max_stop = 16;  // stop strings (OpenAI allows 4; more cost nothing here)
  int32_t max_top_logprobs = 20;
  int32_t n_vocab = 0;  // token ids must be < n_vocab (0 = unchecked)
  int32_t max_json_depth = 64;
  int64_t max_prompt_ids = 1 << 20;
};

// Structured output, as asked: response_format, or keel's `regex` / `ebnf` request fields.
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema, kRegex, kEbnf };
  Kind kind = Kind::kText;
  std::string spec;    // kJsonSchema: the schema as JSON text; kRegex: the pattern; kEbnf: the grammar
  bool strict = false;  // json_schema.strict: an absent additionalProperties means false
  std::string param;   // the request field it came from, for errors ("response_format.json_schema.schema")
  // keel's `grammar_whitespace` field: whitespace between JSON tokens for json_schema / json_object
  // ("compact": none; "flexible": bounded runs); kDefault = the server's --grammar-whitespace.
  enum class Whitespace { kDefault, kCompact, kFlexible };
  Whitespace whitespace = Whitespace::kDefault;
};

// Parameters shared by both endpoints (and, through native_generate.cc, by /generate).
struct GenerationParams {
  std::optional<int32_t> max_tokens;  // absent: the Api picks (completions: 16; chat: context left)
  float temperature = 1.0f;
  float top_p = 1.0f;
  int32_t top_k = 0;  // 0 (or -1 on the wire) = off
  float min_p = 0.0f;
  std::optional<uint64_t> seed;  // absent: a fresh random seed
  int32_t n = 1;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias in [-100, 100]
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t top_logprobs = -1;   // -1: no logprobs; else the chosen token + this many alternatives
  ResponseFormat response_format;
};

struct ChatMessage {
  std::string role;          // system | developer | user | assistant | tool
  std::string content;       // text parts joined with "\n"
  std::string name;          // optional
  std::string tool_call_id;  // role == tool
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  GenerationParams params;
};

struct CompletionRequest {
  std::string model;
  bool prompt_is_ids = false;
  std::string prompt_text;          // when !prompt_is_ids
  std::vector<int32_t> prompt_ids;  // when prompt_is_ids
  GenerationParams params;
};

ApiResult<ChatRequest> parse_chat_request(std::string_view body, const ParseLimits& limits);
ApiResult<CompletionRequest> parse_completion_request(std::string_view body, const ParseLimits& limits);

// The sampling/stop fields common to every endpoint (and /generate's sampling_params): temperature,
// top_p, top_k, min_p, seed, n, stop, stop_token_ids, penalties, logit_bias, ignore_eos.
MaybeError read_sampling_fields(FieldReader& r, const ParseLimits& limits, GenerationParams& p);

// keel's grammar fields `regex` and `ebnf` (strings), and with json_schema (/generate's
// sampling_params) `json_schema` (a schema object or its JSON text). At most one of them, and only
// when p.response_format is still text. Also `grammar_whitespace` ("compact" | "flexible").
MaybeError read_grammar_fields(FieldReader& r, bool with_json_schema, GenerationParams& p);

}  // namespace keel::server::openai
