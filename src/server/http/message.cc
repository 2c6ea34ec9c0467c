#include "server/http/message.h"

#include <fmt/format.h>

#include "base/check.h"

namespace keel::server::http {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

static void append_headers(std::string& out, const Headers& headers) {
  for (const auto& [k, v] : headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
}

std::string serialize_response(const HttpResponse& response, bool keep_alive) {
  size_t n = 128 + response.content_type.size() + response.body.size();
  for (const auto& [k, v] : response.headers) n += k.size() + v.size() + 4;
  std::string out;
  out.reserve(n);  // one allocation: the head is appended piece by piece, then the body
  out.append("HTTP/1.1 ").append(std::to_string(response.status)).append(" ");
  out.append(reason_phrase(response.status)).append("\r\nContent-Type: ").append(response.content_type);
  out.append("\r\nContent-Length: ").append(std::to_string(response.body.size()));
  out.append("\r\nConnection: ").append(keep_alive ? "keep-alive" : "close").append("\r\n");
  append_headers(out, response.headers);
  out += "\r\n";
  out += response.body;
  return out;
}

std::string serialize_stream_head(int status, std::string_view content_type, const Headers& headers, bool keep_alive) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
      "Connection: {}\r\n",
      status, reason_phrase(status), content_type, keep_alive ? "keep-alive" : "close");
  append_headers(out, headers);
  out += "\r\n";
  return out;
}

std::string frame_chunk(std::string_view data) {
  KEEL_CHECK(!data.empty());
  std::string out = fmt::format("{:x}\r\n", data.size());
  out += data;
  out += "\r\n";
  return out;
}

std::string_view last_chunk() { return "0\r\n\r\n"; }

}  // namespace keel::server::http
