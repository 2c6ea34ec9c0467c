#include "server/http/fetch.h"

#include <charconv>
#include <chrono>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace keel::server::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

Result<FetchTarget> parse_http_origin(std::string_view url) {
  auto bad = [&] {
    return make_error(ErrorCode::kInvalidArgument, "'{}' is not an http://host:port origin", url.substr(0, 200));
  };
  if (!url.starts_with("http://")) return bad();
  std::string_view rest = url.substr(7);
  if (rest.ends_with('/')) rest.remove_suffix(1);
  FetchTarget out;
  size_t colon = 0;
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') return bad();
    out.host = std::string(rest.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = rest.rfind(':');
    if (colon == std::string_view::npos) return bad();
    out.host = std::string(rest.substr(0, colon));
  }
  const std::string_view port = rest.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (out.host.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535 ||
      out.host.find_first_of("/?#@ ") != std::string::npos) {
    return bad();
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

Result<FetchResponse> fetch(const FetchTarget& to, const FetchRequest& req) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  bhttp::request<bhttp::string_body> out{bhttp::string_to_verb(req.method), req.target, 11};
  out.set(bhttp::field::host, to.host + ":" + std::to_string(to.port));
  out.set(bhttp::field::user_agent, "keel-serve");
  for (const auto& [k, v] : req.headers) out.set(k, v);
  out.body() = req.body;
  out.prepare_payload();
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(static_cast<uint64_t>(req.max_body_bytes));
  parser.header_limit(64 << 10);

  beast::error_code failure;
  const char* stage = "resolve";
  stream.expires_after(std::chrono::milliseconds(req.timeout_ms));
  resolver.async_resolve(to.host, std::to_string(to.port), [&](beast::error_code ec, tcp::resolver::results_type r) {
    if (ec) return void(failure = ec);
    stage = "connect";
    stream.async_connect(r, [&](beast::error_code ec2, const tcp::endpoint&) {
      if (ec2) return void(failure = ec2);
      stage = "write";
      bhttp::async_write(stream, out, [&](beast::error_code ec3, size_t) {
        if (ec3) return void(failure = ec3);
        stage = "read";
        bhttp::async_read(stream, buffer, parser, [&](beast::error_code ec4, size_t) { failure = ec4; });
      });
    });
  });
  // The resolver has no deadline of its own: the run is bounded too (a little past the stream's).
  ioc.run_for(std::chrono::milliseconds(req.timeout_ms + 100));
  if (!ioc.stopped()) {
    resolver.cancel();
    beast::error_code ignored;
    stream.socket().close(ignored);
    ioc.run();  // the cancelled handlers
    return make_error(ErrorCode::kUnavailable, "{}:{}: no answer within {} ms ({})", to.host, to.port, req.timeout_ms,
                      stage);
  }
  if (failure == bhttp::error::body_limit) {
    return make_error(ErrorCode::kResourceExhausted, "{}:{}: the answer exceeds {} bytes", to.host, to.port,
                      req.max_body_bytes);
  }
  if (failure) {
    const bool malformed = failure.category() == bhttp::make_error_code(bhttp::error::bad_target).category();
    return make_error(malformed ? ErrorCode::kCorruptFile : ErrorCode::kUnavailable, "{}:{}: {} failed: {}", to.host,
                      to.port, stage, failure == beast::error::timeout ? "timed out" : failure.message());
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  auto msg = parser.release();
  if (static_cast<int64_t>(msg.body().size()) > req.max_body_bytes) {  // the parser's own bound is per read
    return make_error(ErrorCode::kResourceExhausted, "{}:{}: the answer exceeds {} bytes", to.host, to.port,
                      req.max_body_bytes);
  }
  return FetchResponse{.status = static_cast<int>(msg.result_int()),
                       .content_type = std::string(msg[bhttp::field::content_type]),
                       .body = std::move(msg.body())};
}

}  // namespace keel::server::http
