// The OpenAI wire format as `keel bench serve` uses it: request bodies for /v1/chat/completions and
// /v1/completions, and reading one streamed chunk (its text and usage). Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "loadgen/workload.h"

namespace keel::loadgen {

enum class Endpoint { kChat, kCompletions };

Result<Endpoint> parse_endpoint(std::string_view name);  // "chat" | "completions"
std::string_view endpoint_path(Endpoint e);

struct BodyOptions {
  std::string model;
  double temperature = 0.0;
  std::string extra_json;  // a JSON object merged into every body (e.g. {"ignore_eos": true}); may be empty
};

// Checks that extra_json is empty or a JSON object.
Status check_extra_json(std::string_view extra_json);

// A streaming request body with stream_options.include_usage. Completions prompts are system + "\n\n"
// + user, so shared-prefix requests share a textual prefix on both endpoints.
std::string make_body(Endpoint e, const RequestSpec& spec, const BodyOptions& options);

struct StreamChunk {
  bool done = false;  // the "[DONE]" marker
  std::string text;   // output text of the first choice in this chunk (may be empty)
  std::optional<int32_t> completion_tokens, prompt_tokens, cached_tokens;  // from "usage", when present
  std::string error;  // an in-stream {"error": ...} object's message
};

// Reads one SSE event's data. kInvalidArgument when it is neither "[DONE]" nor a JSON object.
Result<StreamChunk> parse_stream_chunk(std::string_view data);

// The model ids a GET /v1/models body lists, in order.
Result<std::vector<std::string>> parse_model_ids(std::string_view body);

}  // namespace keel::loadgen
