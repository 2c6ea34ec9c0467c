// Fuzzes request parsing: the body goes through the chat, completions and native /generate parsers;
// accepted requests become engine requests, rejected ones error JSON. Nothing may crash, throw or
// leak, and every error must name a 4xx status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/engine_request.h"
#include "server/native_generate.h"
#include "server/openai/errors.h"
#include "server/openai/request_parse.h"

namespace {

using namespace keel::server;

void check_error(const openai::ApiError& e) {
  int status = openai::http_status_of(e);
  if (status < 400 || status >= 500) std::abort();
  if (openai::error_json(e).empty()) std::abort();
}

void engine_request(const openai::GenerationParams& p, std::vector<int32_t> prompt) {
  auto r = make_generate_request(p, std::move(prompt), EngineRequestLimits{.max_context_tokens = 2048});
  if (!r.ok()) check_error(r.error());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  const openai::ParseLimits limits{.n_vocab = 50000};
  if (auto chat = openai::parse_chat_request(body, limits); chat.ok()) {
    engine_request(chat.value().params, {1, 2, 3});
  } else {
    check_error(chat.error());
  }
  if (auto completion = openai::parse_completion_request(body, limits); completion.ok()) {
    auto& c = completion.value();
    engine_request(c.params, c.prompt_is_ids ? c.prompt_ids : std::vector<int32_t>{1});
  } else {
    check_error(completion.error());
  }
  if (auto native = parse_native_request(body, limits); native.ok()) {
    engine_request(native.value().params, native.value().has_ids ? native.value().input_ids : std::vector<int32_t>{1});
  } else {
    check_error(native.error());
  }
  return 0;
}
