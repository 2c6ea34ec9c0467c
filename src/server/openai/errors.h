// The one place that turns errors into the wire: Status/ErrorCode and the HTTP layer's own failures
// (404, 405, 413, 415, 431) become an HTTP status plus OpenAI's error JSON
// {"error": {"message", "type", "param", "code"}}. Pure functions: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/status.h"
#include "server/http/message.h"

namespace keel::server::openai {

// A failed API call: a Status plus the request field it concerns.
struct ApiError {
  Status status;
  std::string param;          // the offending request field ("messages[2].content"), "" if none
  int http_status = 0;        // 0: derived from status.code(); set for HTTP-level failures
  int32_t retry_after_s = 0;  // sent as Retry-After with 429 and 503 when > 0
};

// A value or an ApiError (request parsing and the Api's handlers return these).
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT(implicit)
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT(implicit)
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const ApiError& error() const { return std::get<ApiError>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

// 400 naming `param`: "<param>: <message>" is the message, `param` the JSON field.
template <typename... Args>
ApiError param_error(std::string param, fmt::format_string<Args...> f, Args&&... args) {
  std::string message = fmt::format(f, std::forward<Args>(args)...);
  return ApiError{.status = Status(ErrorCode::kInvalidArgument, fmt::format("{}: {}", param, message)),
                  .param = std::move(param)};
}

// An error the HTTP layer raises by status (404 route, 405, 413, 415, 431, 400 malformed HTTP).
ApiError http_error(int http_status, std::string message);

// HTTP status for an error: http_status if set, else by ErrorCode (kInvalidArgument/kOutOfRange ->
// 400, kNotFound -> 404, kUnsupported -> 400, kResourceExhausted -> 429, kUnavailable -> 503,
// kCancelled -> 499, the rest -> 500).
int http_status_of(const ApiError& error);

// {"error": {"message", "type", "param", "code"}} (param and code null when empty).
std::string error_json(const ApiError& error);

// The complete response: status, error JSON, and Retry-After when set.
http::HttpResponse error_response(const ApiError& error);

// For http::ServerHooks::render_error.
http::HttpResponse render_http_error(int http_status, std::string_view message);

}  // namespace keel::server::openai
