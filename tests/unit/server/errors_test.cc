// Error mapping: every ErrorCode and HTTP-level failure to its status, OpenAI error JSON shape,
// Retry-After.
#include "server/openai/errors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace keel::server::openai {
namespace {

using nlohmann::json;

TEST(Errors, EveryErrorCodeMapsToAStatus) {
  std::vector<std::pair<ErrorCode, int>> cases = {
      {ErrorCode::kInvalidArgument, 400}, {ErrorCode::kOutOfRange, 400},        {ErrorCode::kUnsupported, 400},
      {ErrorCode::kNotFound, 404},        {ErrorCode::kResourceExhausted, 429}, {ErrorCode::kUnavailable, 503},
      {ErrorCode::kCancelled, 499},       {ErrorCode::kCorruptFile, 500},       {ErrorCode::kIo, 500},
      {ErrorCode::kInternal, 500}};
  for (auto [code, status] : cases) {
    ApiError e{.status = Status(code, "m")};
    EXPECT_EQ(http_status_of(e), status) << error_code_name(code);
    auto resp = error_response(e);
    EXPECT_EQ(resp.status, status);
    EXPECT_EQ(resp.content_type, "application/json");
  }
}

TEST(Errors, JsonShape) {
  ApiError e = param_error("temperature", "must be in [0, 2], got {}", 3);
  json j = json::parse(error_json(e));
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "temperature: must be in [0, 2], got 3");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_EQ(j["error"]["code"], "invalid_value");
  EXPECT_EQ(j["error"].size(), 4u);

  json plain = json::parse(error_json(ApiError{.status = Status(ErrorCode::kInternal, "boom \xff")}));
  EXPECT_TRUE(plain["error"]["param"].is_null());
  EXPECT_TRUE(plain["error"]["code"].is_null());
  EXPECT_EQ(plain["error"]["type"], "server_error");
  EXPECT_EQ(plain["error"]["message"], "boom \xEF\xBF\xBD");  // invalid UTF-8 replaced, never thrown

  json model = json::parse(error_json(ApiError{.status = Status(ErrorCode::kNotFound, "no"), .param = "model"}));
  EXPECT_EQ(model["error"]["code"], "model_not_found");
}

TEST(Errors, HttpLevelErrors) {
  std::vector<std::tuple<int, std::string, std::string>> cases = {
      {400, "invalid_request_error", ""},
      {404, "invalid_request_error", "unknown_url"},
      {405, "invalid_request_error", "method_not_allowed"},
      {413, "invalid_request_error", "request_too_large"},
      {415, "invalid_request_error", "unsupported_media_type"},
      {431, "invalid_request_error", "headers_too_large"},
      {429, "rate_limit_error", "rate_limit_exceeded"},
      {503, "service_unavailable_error", "service_unavailable"},
      {500, "server_error", ""}};
  for (const auto& [status, type, code] : cases) {
    auto resp = render_http_error(status, "why");
    EXPECT_EQ(resp.status, status);
    json j = json::parse(resp.body);
    EXPECT_EQ(j["error"]["message"], "why");
    EXPECT_EQ(j["error"]["type"], type) << status;
    if (code.empty())
      EXPECT_TRUE(j["error"]["code"].is_null()) << status;
    else
      EXPECT_EQ(j["error"]["code"], code) << status;
  }
}

TEST(Errors, RetryAfterOnlyOn429And503) {
  auto busy = error_response(ApiError{.status = Status(ErrorCode::kResourceExhausted, "full"), .retry_after_s = 3});
  ASSERT_EQ(busy.headers.size(), 1u);
  EXPECT_EQ(busy.headers[0], (std::pair<std::string, std::string>{"Retry-After", "3"}));
  auto draining = error_response(ApiError{.status = Status(ErrorCode::kUnavailable, "x"), .retry_after_s = 2});
  EXPECT_EQ(draining.headers.size(), 1u);
  auto bad = error_response(ApiError{.status = Status(ErrorCode::kInvalidArgument, "x"), .retry_after_s = 2});
  EXPECT_TRUE(bad.headers.empty());
  auto unsupported = error_response(ApiError{.status = Status(ErrorCode::kUnsupported, "x"), .param = "echo"});
  EXPECT_EQ(json::parse(unsupported.body)["error"]["code"], "unsupported_parameter");
}

}  // namespace
}  // namespace keel::server::openai
