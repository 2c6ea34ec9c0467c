// Plain HTTP request/response values handed between the Beast connection code (http/connection.cc) and
// route handlers (server/api.cc). Values only: any thread may build, copy and move them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel::server::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path plus optional "?query"
  std::string path;    // target without the query
  std::string query;   // after '?', undecoded ("" if none)
  Headers headers;     // in arrival order, names as sent
  std::string body;
  std::string remote;  // the client's IP address as text ("127.0.0.1", "::1"), "" if unknown
  // Value of the first header named `name` (ASCII case-insensitive), "" if absent.
  std::string_view header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;  // extra headers (Retry-After, Allow, ...); framing headers are added by the server
  std::string body;
};

// ASCII case-insensitive equality, for header names and tokens.
bool iequals(std::string_view a, std::string_view b);

// "200 OK"-style reason phrase for a status code ("Unknown" for codes it does not know).
std::string_view reason_phrase(int status);

// The bytes of `response` on the wire: status line, headers (Content-Type, Content-Length,
// Connection, extras) and body.
std::string serialize_response(const HttpResponse& response, bool keep_alive);

// The status line and headers that open a chunked stream (no body bytes).
std::string serialize_stream_head(int status, std::string_view content_type, const Headers& headers, bool keep_alive);

// One HTTP/1.1 chunk framing `data` ("" is not allowed: it would end the body; see last_chunk()).
std::string frame_chunk(std::string_view data);
std::string_view last_chunk();

}  // namespace keel::server::http
