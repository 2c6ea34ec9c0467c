// One HTTP/1.1 request to another server, answered whole, under one deadline: what a replica uses to
// pull a prefix's KV from another (server/kv_pull.h). Blocking: call it from a worker thread, never an
// io thread. A new connection per call (a pull moves megabytes; its connect costs microseconds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace keel::server::http {

struct FetchTarget {
  std::string host;
  uint16_t port = 0;
};
// "http://host:port" (an optional trailing '/', IPv6 hosts in brackets); kInvalidArgument otherwise.
Result<FetchTarget> parse_http_origin(std::string_view url);

struct FetchRequest {
  std::string method = "POST";
  std::string target;  // "/v1/kv/export"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int32_t timeout_ms = 2000;            // connect to last byte
  int64_t max_body_bytes = 64ll << 20;  // a larger answer fails
};
struct FetchResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// kUnavailable when the server cannot be reached or the deadline passes, kResourceExhausted for an
// answer over max_body_bytes, kCorruptFile for a malformed one.
Result<FetchResponse> fetch(const FetchTarget& to, const FetchRequest& req);

}  // namespace keel::server::http
