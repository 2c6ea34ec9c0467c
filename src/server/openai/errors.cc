#include "server/openai/errors.h"

#include <nlohmann/json.hpp>

namespace keel::server::openai {

ApiError http_error(int http_status, std::string message) {
  ErrorCode code = ErrorCode::kInvalidArgument;
  if (http_status == 404) code = ErrorCode::kNotFound;
  if (http_status == 413 || http_status == 431) code = ErrorCode::kOutOfRange;
  if (http_status == 415) code = ErrorCode::kUnsupported;
  if (http_status == 429) code = ErrorCode::kResourceExhausted;
  if (http_status == 503) code = ErrorCode::kUnavailable;
  if (http_status >= 500 && http_status != 503) code = ErrorCode::kInternal;
  return ApiError{.status = Status(code, std::move(message)), .http_status = http_status};
}

int http_status_of(const ApiError& error) {
  if (error.http_status != 0) return error.http_status;
  switch (error.status.code()) {
    case ErrorCode::kOk: return 200;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfRange:
    case ErrorCode::kUnsupported: return 400;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kResourceExhausted: return 429;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kCancelled: return 499;
    case ErrorCode::kCorruptFile:
    case ErrorCode::kIo:
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

namespace {

// OpenAI's "type" for a status, and a machine-readable "code" where one applies.
std::pair<std::string_view, std::string_view> type_and_code(const ApiError& error, int status) {
  switch (status) {
    case 400:
      if (error.status.code() == ErrorCode::kUnsupported) return {"invalid_request_error", "unsupported_parameter"};
      if (!error.param.empty()) return {"invalid_request_error", "invalid_value"};
      return {"invalid_request_error", ""};
    case 401: return {"authentication_error", "invalid_api_key"};  // as keel router answers
    case 403: return {"permission_error", ""};
    case 404:
      if (error.http_status == 404) return {"invalid_request_error", "unknown_url"};
      return {"invalid_request_error", "model_not_found"};
    case 405: return {"invalid_request_error", "method_not_allowed"};
    case 413: return {"invalid_request_error", "request_too_large"};
    case 415: return {"invalid_request_error", "unsupported_media_type"};
    case 431: return {"invalid_request_error", "headers_too_large"};
    case 429: return {"rate_limit_error", "rate_limit_exceeded"};
    case 499: return {"invalid_request_error", "client_closed_request"};
    case 503: return {"service_unavailable_error", "service_unavailable"};
    default: return {"server_error", ""};
  }
}

}  // namespace

std::string error_json(const ApiError& error) {
  int status = http_status_of(error);
  auto [type, code] = type_and_code(error, status);
  nlohmann::json body = {{"error",
                          {{"message", error.status.message()},
                           {"type", type},
                           {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)},
                           {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

http::HttpResponse error_response(const ApiError& error) {
  http::HttpResponse resp{
      .status = http_status_of(error), .content_type = "application/json", .body = error_json(error)};
  if (error.retry_after_s > 0 && (resp.status == 429 || resp.status == 503)) {
    resp.headers.emplace_back("Retry-After", std::to_string(error.retry_after_s));
  }
  return resp;
}

http::HttpResponse render_http_error(int http_status, std::string_view message) {
  return error_response(http_error(http_status, std::string(message)));
}

}  // namespace keel::server::openai
