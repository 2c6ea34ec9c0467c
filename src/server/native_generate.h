// keel's native POST /generate: text or input_ids in, token ids and text out, with SGLang-like
// field names ({"text" | "input_ids", "sampling_params": {...}, "stream", "return_logprob",
// "top_logprobs_num"} -> {"text", "output_ids", "meta_info"}). Parsing and the response bodies; the
// Api runs it like the OpenAI endpoints. Pure functions: any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "server/openai/request_parse.h"
#include "server/openai/response_build.h"

namespace keel::server {

struct NativeRequest {
  bool has_ids = false;
  std::string text;                 // when !has_ids
  std::vector<int32_t> input_ids;   // when has_ids
  openai::GenerationParams params;  // max_tokens from sampling_params.max_new_tokens
};

openai::ApiResult<NativeRequest> parse_native_request(std::string_view body, const openai::ParseLimits& limits);

// The whole response: one object for n == 1, a list of them otherwise.
std::string native_response_json(const std::string& id, std::span<const openai::Choice> choices,
                                 const openai::Usage& usage, bool with_logprobs);
// One stream event of one sample: the new text and ids; meta_info on its final event.
std::string native_chunk_json(const std::string& id, int32_t index, std::string_view text, std::span<const int32_t> ids,
                              sched::FinishReason finish, const openai::Usage* usage);

}  // namespace keel::server
