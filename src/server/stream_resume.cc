#include "server/stream_resume.h"

#include <nlohmann/json.hpp>

#include "server/http/sse.h"

namespace keel::server {

using nlohmann::json;

bool wants_token_ids(const http::HttpRequest& req) { return req.header("X-Keel-Token-Ids") == "1"; }

openai::ApiResult<std::optional<std::vector<int32_t>>> take_resume_tokens(const http::HttpRequest& req,
                                                                          std::string& body, int32_t n_vocab) {
  if (req.header("X-Keel-Resume") != "1") return std::optional<std::vector<int32_t>>{};
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("keel_resume_token_ids") ||
      !j["keel_resume_token_ids"].is_array()) {
    return openai::param_error("keel_resume_token_ids", "X-Keel-Resume needs a JSON body with an array of token ids");
  }
  std::vector<int32_t> ids;
  for (const json& t : j["keel_resume_token_ids"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || (n_vocab > 0 && t.get<int64_t>() >= n_vocab)) {
      return openai::param_error("keel_resume_token_ids", "token ids must be integers in [0, {})", n_vocab);
    }
    ids.push_back(t.get<int32_t>());
  }
  j.erase("keel_resume_token_ids");
  body = j.dump();
  return std::optional<std::vector<int32_t>>(std::move(ids));
}

std::string token_ids_event(int32_t index, std::span<const int32_t> tokens) {
  return http::sse_event(json{{"index", index}, {"token_ids", tokens}}.dump(), "keel_tokens");
}

}  // namespace keel::server
