// The only translation unit of keel_loadgen that includes Boost.Beast/Asio: run_load and
// fetch_model_ids (declared in runner.h). Each request is a Call on the one io thread: connect ->
// write -> read the response head -> read the body piece by piece (buffer_body), feeding SSE events
// to the clock as they arrive. The whole call shares one deadline (request_timeout_s).
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "loadgen/runner.h"
#include "loadgen/sse_parser.h"

namespace keel::loadgen {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr size_t kMaxErrorBody = 4096;
constexpr uint64_t kMaxResponseBytes = uint64_t{1} << 32;  // streams are long; bound them anyway

// "HTTP 429: <error.message>" from an OpenAI-style error body, else the body's start.
std::string http_error(int status, const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return fmt::format("HTTP {}: {}", status, e["message"].get<std::string>());
    if (e.is_string()) return fmt::format("HTTP {}: {}", status, e.get<std::string>());
  }
  return fmt::format("HTTP {}: {}", status, body.substr(0, 200));
}

bhttp::request<bhttp::string_body> make_request(const Target& t, bhttp::verb verb, std::string target,
                                                std::string body) {
  bhttp::request<bhttp::string_body> req{verb, target, 11};
  req.set(bhttp::field::host, fmt::format("{}:{}", t.host, t.port));
  req.set(bhttp::field::user_agent, "keel-bench-serve");
  if (verb == bhttp::verb::post) {
    req.set(bhttp::field::content_type, "application/json");
    req.set(bhttp::field::accept, "text/event-stream");
  }
  req.set(bhttp::field::connection, "close");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

class Call : public std::enable_shared_from_this<Call> {
 public:
  Call(net::io_context& ioc, const tcp::resolver::results_type& endpoints, bhttp::request<bhttp::string_body> req,
       RequestResult& result, std::function<void()> done)
      : stream_(ioc), endpoints_(endpoints), req_(std::move(req)), result_(result), done_(std::move(done)) {}

  void start(int32_t timeout_s) {
    stream_.expires_after(std::chrono::seconds(timeout_s));
    stream_.async_connect(endpoints_, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return self->fail("connect", ec);
      self->result_.sent_us = now_us();
      bhttp::async_write(self->stream_, self->req_, [self](beast::error_code ec2, size_t) {
        if (ec2) return self->fail("write", ec2);
        self->read_head();
      });
    });
  }

 private:
  void read_head() {
    parser_.emplace();
    // A number, not boost::none: this Boost version compares a Content-Length against none as "over the limit".
    parser_->body_limit(kMaxResponseBytes);
    bhttp::async_read_header(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->fail("read header", ec);
      self->result_.http_status = static_cast<int32_t>(self->parser_->get().result_int());
      self->read_body();
    });
  }

  void read_body() {
    if (parser_->is_done()) return finish();
    parser_->get().body().data = chunk_;
    parser_->get().body().size = sizeof(chunk_);
    bhttp::async_read_some(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec) return self->fail("read body", ec);
      const size_t n = sizeof(self->chunk_) - self->parser_->get().body().size;
      self->on_bytes(std::string_view(self->chunk_, n));
      self->read_body();
    });
  }

  void on_bytes(std::string_view bytes) {
    if (result_.http_status != 200) {
      error_body_.append(bytes.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body_.size())));
      return;
    }
    const int64_t t = now_us();
    events_.clear();
    sse_.feed(bytes, events_);
    for (const std::string& data : events_) on_event(data, t);
  }

  void on_event(const std::string& data, int64_t t_us) {
    auto chunk = parse_stream_chunk(data);
    if (!chunk.ok()) {
      stream_error_ = chunk.status().message();
      return;
    }
    if (chunk->done) saw_done_ = true;
    if (!chunk->error.empty()) stream_error_ = "stream error: " + chunk->error;
    if (!chunk->text.empty()) result_.token_times_us.push_back(t_us);
    if (chunk->completion_tokens) {
      result_.usage_reported = true;
      result_.n_output_tokens = *chunk->completion_tokens;
    }
    if (chunk->prompt_tokens) result_.n_prompt_tokens = *chunk->prompt_tokens;
    if (chunk->cached_tokens) result_.n_cached_tokens = *chunk->cached_tokens;
  }

  void finish() {
    result_.end_us = now_us();
    if (result_.http_status != 200) {
      result_.error = http_error(result_.http_status, error_body_);
    } else if (!stream_error_.empty()) {
      result_.error = stream_error_;
    } else if (!saw_done_) {
      result_.error = "stream ended without [DONE]";
    } else {
      result_.ok = true;
      if (!result_.usage_reported) result_.n_output_tokens = static_cast<int32_t>(result_.token_times_us.size());
    }
    close();
  }

  void fail(std::string_view what, beast::error_code ec) {
    result_.end_us = now_us();
    result_.error =
        ec == beast::error::timeout ? fmt::format("{}: timed out", what) : fmt::format("{}: {}", what, ec.message());
    close();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    if (done_) std::exchange(done_, nullptr)();
  }

  beast::tcp_stream stream_;
  const tcp::resolver::results_type& endpoints_;
  bhttp::request<bhttp::string_body> req_;
  RequestResult& result_;
  std::function<void()> done_;
  beast::flat_buffer buf_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  char chunk_[16384];
  SseParser sse_;
  std::vector<std::string> events_;
  std::string error_body_, stream_error_;
  bool saw_done_ = false;
};

// Launches requests in order: `concurrency` in flight, or each at its arrival offset.
class Driver {
 public:
  Driver(const RunConfig& c, const std::vector<RequestSpec>& specs, tcp::resolver::results_type endpoints)
      : c_(c), specs_(specs), endpoints_(std::move(endpoints)), timer_(ioc_), results_(specs.size()) {}

  std::vector<RequestResult> run() {
    t0_us_ = now_us();
    if (c_.arrival.concurrency > 0) {
      const auto n = std::min<size_t>(static_cast<size_t>(c_.arrival.concurrency), specs_.size());
      for (size_t i = 0; i < n; ++i) launch(now_us());
    } else {
      offsets_ = arrival_offsets_us(c_.arrival, static_cast<int64_t>(specs_.size()));
      arm_timer();
    }
    ioc_.run();
    return std::move(results_);
  }

 private:
  void launch(int64_t start_us) {
    const size_t i = next_++;
    results_[i].start_us = start_us;
    auto body = make_body(c_.endpoint, specs_[i], c_.body);
    auto req = make_request(c_.target, bhttp::verb::post, c_.target.base_path + std::string(endpoint_path(c_.endpoint)),
                            std::move(body));
    std::make_shared<Call>(ioc_, endpoints_, std::move(req), results_[i], [this] {
      on_done();
    })->start(c_.request_timeout_s);
  }

  void on_done() {
    ++n_done_;
    if (c_.on_done) c_.on_done(n_done_);
    if (c_.arrival.concurrency > 0 && next_ < specs_.size()) launch(now_us());
  }

  void arm_timer() {
    if (next_ >= specs_.size()) return;
    timer_.expires_at(net::steady_timer::clock_type::now() +
                      std::chrono::microseconds(t0_us_ + offsets_[next_] - now_us()));
    timer_.async_wait([this](beast::error_code ec) {
      if (ec) return;
      const int64_t now = now_us();
      while (next_ < specs_.size() && t0_us_ + offsets_[next_] <= now) launch(t0_us_ + offsets_[next_]);
      arm_timer();
    });
  }

  const RunConfig& c_;
  const std::vector<RequestSpec>& specs_;
  net::io_context ioc_{1};
  tcp::resolver::results_type endpoints_;
  net::steady_timer timer_;
  std::vector<RequestResult> results_;
  std::vector<int64_t> offsets_;
  int64_t t0_us_ = 0;
  size_t next_ = 0;
  int64_t n_done_ = 0;
};

Result<tcp::resolver::results_type> resolve(const Target& t) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(t.host, std::to_string(t.port), ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "cannot resolve '{}': {}", t.host, ec.message());
  return endpoints;
}

}  // namespace

Result<std::vector<RequestResult>> run_load(const RunConfig& config, const std::vector<RequestSpec>& requests) {
  KEEL_ASSIGN_OR_RETURN(auto endpoints, resolve(config.target));
  Driver driver(config, requests, std::move(endpoints));
  return driver.run();
}

Result<std::vector<std::string>> fetch_model_ids(const Target& target, int32_t timeout_ms) {
  KEEL_ASSIGN_OR_RETURN(auto endpoints, resolve(target));
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  auto req = make_request(target, bhttp::verb::get, target.base_path + "/v1/models", "");
  beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  beast::error_code error;
  stream.expires_after(std::chrono::milliseconds(timeout_ms));  // one deadline for the whole exchange
  stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
    if (ec) return void(error = ec);
    bhttp::async_write(stream, req, [&](beast::error_code ec2, size_t) {
      if (ec2) return void(error = ec2);
      bhttp::async_read(stream, buf, res, [&](beast::error_code ec3, size_t) { error = ec3; });
    });
  });
  ioc.run();
  if (error)
    return make_error(ErrorCode::kUnavailable, "GET http://{}:{}{}/v1/models failed: {}", target.host, target.port,
                      target.base_path, error.message());
  if (res.result_int() != 200)
    return make_error(ErrorCode::kUnavailable, "GET /v1/models: {}",
                      http_error(static_cast<int>(res.result_int()), res.body()));
  return parse_model_ids(res.body());
}

}  // namespace keel::loadgen
