// A call: take a pooled connection or connect (connect timeout) -> write the request -> read the
// response head (first-byte timeout) -> read the body piece by piece (idle timeout per read) -> give
// the connection back to the pool if both sides keep it alive. Everything of one call runs on the
// strand of its connection. The request is sent at once when the socket takes it whole, and body bytes
// that came with the head are parsed from the buffer: a small answer then costs the call one reactor
// wake-up (its read) and no posted completion.
#include "router/upstream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include "server/http/server.h"

namespace keel::router {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

Status UpstreamConfig::validate() const {
  if (connect_timeout_ms < 1 || first_byte_timeout_ms < 1 || idle_timeout_ms < 1) {
    return make_error(ErrorCode::kInvalidArgument, "upstream timeouts must be >= 1 ms");
  }
  if (max_idle_per_replica < 0) return make_error(ErrorCode::kInvalidArgument, "max idle connections must be >= 0");
  if (pool_idle_ms < 1) return make_error(ErrorCode::kInvalidArgument, "the pool's idle limit must be >= 1 ms");
  if (n_threads < 0) return make_error(ErrorCode::kInvalidArgument, "upstream threads must be >= 0");
  return {};
}

std::string_view upstream_failure_name(UpstreamFailure f) {
  switch (f) {
    case UpstreamFailure::kNone: return "none";
    case UpstreamFailure::kConnect: return "connect";
    case UpstreamFailure::kFirstByte: return "first_byte";
    case UpstreamFailure::kBody: return "body";
    case UpstreamFailure::kProtocol: return "protocol";
  }
  return "unknown";
}

struct UpstreamClient::Impl : std::enable_shared_from_this<Impl> {
  explicit Impl(UpstreamConfig c) : config(c) {}

  // The context a call started on this thread runs on: the caller's own when it runs one of them (a
  // front end's connection), else the first.
  size_t context_of_caller() const {
    for (size_t i = 1; i < iocs.size(); ++i) {
      if (iocs[i]->get_executor().running_in_this_thread()) return i;
    }
    return 0;
  }
  // The most recently used connection of that context's pool (it is the likeliest to be warm and alive);
  // when even that one sat unused past pool_idle_ms, every pooled one did, and they are all dropped.
  std::unique_ptr<beast::tcp_stream> take_idle(size_t ctx, const std::string& key) {
    Pool& p = *pools[ctx];
    std::lock_guard lock(p.mu);
    auto& v = p.idle[key];
    if (v.empty()) return nullptr;
    if (Clock::now() - v.back().since > std::chrono::milliseconds(config.pool_idle_ms)) {
      v.clear();
      return nullptr;
    }
    auto s = std::move(v.back().stream);
    v.pop_back();
    return s;
  }
  void give_back(size_t ctx, const std::string& key, std::unique_ptr<beast::tcp_stream> s) {
    Pool& p = *pools[ctx];
    std::lock_guard lock(p.mu);
    auto& v = p.idle[key];
    if (static_cast<int32_t>(v.size()) < config.max_idle_per_replica && !stopping.load()) {
      v.push_back(Pooled{std::move(s), Clock::now()});
    }
  }
  void trim_idle() {
    const auto oldest = Clock::now() - std::chrono::milliseconds(config.pool_idle_ms);
    for (auto& p : pools) {
      std::lock_guard lock(p->mu);
      for (auto& [_, v] : p->idle) {  // oldest first: given back in time order
        auto keep = std::find_if(v.begin(), v.end(), [&](const Pooled& x) { return x.since >= oldest; });
        v.erase(v.begin(), keep);
      }
    }
  }
  // Runs `iocs` (one pool each): own_ioc, or shared contexts.
  void use_contexts(std::vector<net::io_context*> contexts) {
    iocs = std::move(contexts);
    pools = make_pools(iocs.size());
  }
  Result<tcp::resolver::results_type> resolve(const Endpoint& ep, const std::string& key) {
    {
      std::lock_guard lock(mu);
      if (auto it = resolved.find(key); it != resolved.end()) return it->second;
    }
    tcp::resolver resolver(*iocs.front());
    beast::error_code ec;
    auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
    if (ec) return make_error(ErrorCode::kUnavailable, "resolving {}: {}", ep.host, ec.message());
    std::lock_guard lock(mu);
    resolved[key] = results;
    return results;
  }

  UpstreamConfig config;
  net::io_context own_ioc;  // run by `threads`
  // Where calls run: own_ioc, or the shared contexts (a call on the caller's; timers on the first).
  std::vector<net::io_context*> iocs{&own_ioc};
  bool one_thread = false;  // one thread runs each context: calls need no strand
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  mutable std::mutex mu;  // guards `resolved`
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> connects{0};
  struct Pooled {
    std::unique_ptr<beast::tcp_stream> stream;
    Clock::time_point since;  // given back
  };
  // Idle connections of one context (a socket is used only on its context's thread), by replica.
  struct Pool {
    std::mutex mu;
    std::map<std::string, std::vector<Pooled>> idle;
  };
  std::vector<std::unique_ptr<Pool>> pools = make_pools(1);
  static std::vector<std::unique_ptr<Pool>> make_pools(size_t n) {
    std::vector<std::unique_ptr<Pool>> out;
    for (size_t i = 0; i < n; ++i) out.push_back(std::make_unique<Pool>());
    return out;
  }
  std::map<std::string, tcp::resolver::results_type> resolved;
};

namespace {

constexpr size_t kBodyPiece = 16 << 10;

class Call final : public UpstreamCall, public std::enable_shared_from_this<Call> {
 public:
  Call(std::shared_ptr<UpstreamClient::Impl> client, Endpoint ep, UpstreamRequest req, UpstreamCallbacks cb)
      : client_(std::move(client)), ep_(std::move(ep)), req_(std::move(req)), cb_(std::move(cb)) {
    const auto& c = client_->config;
    first_byte_ms_ = req_.first_byte_timeout_ms > 0 ? req_.first_byte_timeout_ms : c.first_byte_timeout_ms;
    idle_ms_ = req_.idle_timeout_ms > 0 ? req_.idle_timeout_ms : c.idle_timeout_ms;
    key_.reserve(ep_.host.size() + 6);
    key_.append(ep_.host).append(":").append(std::to_string(ep_.port));
    // The head only; the body goes out from req_.body in the same write (two buffers, no copy).
    size_t n = req_.method.size() + req_.target.size() + key_.size() + 96;
    for (const auto& [k, v] : req_.headers) n += k.size() + v.size() + 4;
    wire_.reserve(n);
    wire_.append(req_.method).append(" ").append(req_.target).append(" HTTP/1.1\r\nHost: ").append(key_);
    for (const auto& [k, v] : req_.headers) wire_.append("\r\n").append(k).append(": ").append(v);
    wire_.append("\r\nContent-Length: ").append(std::to_string(req_.body.size()));
    wire_.append("\r\nConnection: keep-alive\r\n\r\n");
  }

  void start() {
    ctx_ = client_->context_of_caller();
    if (auto s = client_->take_idle(ctx_, key_)) {
      stream_ = std::move(s);
      strand_ = stream_->get_executor();
      reused_ = true;
      // At once when the caller already runs on the connection's executor (one io thread): write()
      // only starts the write, and no callback can run inside it (its completion is always posted).
      net::dispatch(strand_, [self = shared_from_this()] { self->write(); });
      return;
    }
    if (client_->one_thread) {
      strand_ = client_->iocs[ctx_]->get_executor();
    } else {
      strand_ = net::make_strand(*client_->iocs[ctx_]);
    }
    net::post(strand_, [self = shared_from_this()] { self->connect(); });
  }

  void cancel() override {
    net::post(strand_, [self = shared_from_this()] {
      self->done_ = true;
      self->cb_ = {};
      if (!self->stream_) return;
      beast::error_code ignored;
      self->stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_->close();
    });
  }

 private:
  void connect() {
    if (done_) return;
    reused_ = false;
    client_->connects.fetch_add(1, std::memory_order_relaxed);
    stream_ = std::make_unique<beast::tcp_stream>(strand_);
    auto results = client_->resolve(ep_, key_);
    if (!results.ok()) return finish(UpstreamFailure::kConnect, results.status().message());
    stream_->expires_after(std::chrono::milliseconds(client_->config.connect_timeout_ms));
    stream_->async_connect(*results, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (self->done_) return;
      if (ec) return self->finish(UpstreamFailure::kConnect, fmt::format("connect {}: {}", self->key_, ec.message()));
      beast::error_code ignored;  // write() sends without blocking; async operations are unaffected
      self->stream_->socket().non_blocking(true, ignored);
      self->write();
    });
  }

  void write() {
    if (done_) return;
    stream_->expires_after(std::chrono::milliseconds(first_byte_ms_));
    // Sent now when the socket takes the whole request (it usually does): the asynchronous write would
    // make the same send, then cost a handler round to report it. No callback runs inside write() (start()
    // may run under its caller's locks): a failed send is reported from the queue, and the head's read
    // below completes from the reactor or the queue, never inline.
    beast::error_code sec;
    const size_t sent = stream_->socket().write_some(
        std::array<net::const_buffer, 2>{net::buffer(wire_), net::buffer(req_.body)}, sec);  // non-blocking socket
    if (!sec && sent == wire_.size() + req_.body.size()) return read_head();
    if (sec && sec != net::error::would_block && sec != net::error::try_again) {
      net::post(strand_, [self = shared_from_this(), sec] {
        if (!self->done_) self->early_failure(sec);
      });
      return;
    }
    const size_t head = sec ? 0 : std::min(sent, wire_.size()), body = sec ? 0 : sent - head;
    const std::array<net::const_buffer, 2> out{net::buffer(wire_) + head, net::buffer(req_.body) + body};
    net::async_write(*stream_, out, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->done_) return;
      if (ec) return self->early_failure(ec);
      self->read_head();
    });
  }

  void read_head() {
    parser_.emplace();
    parser_->header_limit(64 << 10);
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // not boost::none: 1.74 compares it wrongly
    bhttp::async_read_header(*stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->done_) return;
      if (ec) return self->early_failure(ec);
      self->on_head();
    });
  }

  // Before any response byte: a reused connection the replica had closed is retried fresh once.
  void early_failure(beast::error_code ec) {
    if (reused_ && ec != beast::error::timeout) {
      stream_->close();
      buffer_.clear();
      parser_.reset();
      return connect();
    }
    auto kind = ec == beast::error::timeout ? "timed out waiting for the response" : ec.message();
    finish(UpstreamFailure::kFirstByte, fmt::format("{}: {}", key_, kind));
  }

  void on_head() {
    HeaderList headers;
    const auto& res = parser_->get();
    for (const auto& f : res) headers.emplace_back(f.name_string(), f.value());
    if (cb_.on_head) cb_.on_head(static_cast<int>(res.result_int()), headers);
    read_body();
  }

  void read_body() {
    while (!done_) {
      if (parser_->is_done()) return complete();
      if (!piece_) {  // sized to the body when its length is known and small (most answers are)
        const auto length = parser_->content_length();
        piece_size_ = length && *length > 0 && *length < kBodyPiece ? static_cast<size_t>(*length) : kBodyPiece;
        piece_ = std::make_unique<char[]>(piece_size_);
      }
      parser_->get().body().data = piece_.get();
      parser_->get().body().size = piece_size_;
      parser_->get().body().more = true;
      if (buffer_.size() == 0) break;
      // Bytes that came with the head (or an earlier piece): parsed here. Beast's read would find them in
      // the buffer and post its completion.
      beast::error_code ec;
      const size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == bhttp::error::need_more) {
        if (used == 0) break;  // a chunk's head or the like is cut short: read the rest
        ec = {};
      }
      if (!deliver_piece(ec) || used == 0) break;
    }
    if (done_) return;
    // The idle timeout between body reads is the call's own lazy timer, not Beast's per-read one (a timer
    // started and cancelled per read: a posted completion per streamed event).
    body_deadline_ = Clock::now() + std::chrono::milliseconds(idle_ms_);
    if (!body_timer_) {
      stream_->expires_never();
      body_timer_.emplace(strand_);
    }
    if (!body_timer_armed_) arm_body_timer();
    bhttp::async_read_some(*stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->done_) return;
      if (self->deliver_piece(ec)) self->read_body();
    });
  }

  // Fires at the deadline it was armed for; re-arms while reads keep moving the deadline later.
  void arm_body_timer() {
    body_timer_armed_ = true;
    body_timer_->expires_at(body_deadline_);
    body_timer_->async_wait([self = shared_from_this()](beast::error_code ec) {
      self->body_timer_armed_ = false;
      if (ec || self->done_) return;
      if (Clock::now() < self->body_deadline_) return self->arm_body_timer();
      self->finish(UpstreamFailure::kBody, fmt::format("{}: idle timeout in the response body", self->key_));
    });
  }

  // Hands the body bytes the last parse put into the piece to on_data; false when the call ended (an error
  // or a callback that cancelled it).
  bool deliver_piece(beast::error_code ec) {
    if (ec == bhttp::error::need_buffer) ec = {};
    const size_t n = piece_size_ - parser_->get().body().size;
    if (n > 0 && cb_.on_data) cb_.on_data(std::string_view(piece_.get(), n));
    if (done_) return false;
    if (ec == bhttp::error::end_of_stream && parser_->is_done()) ec = {};
    if (ec) {
      auto what = ec == beast::error::timeout ? std::string("idle timeout in the response body") : ec.message();
      finish(UpstreamFailure::kBody, fmt::format("{}: {}", key_, what));
      return false;
    }
    return true;
  }

  void complete() {
    bool keep = parser_->keep_alive() && buffer_.size() == 0;
    if (keep) {
      stream_->expires_never();
      client_->give_back(ctx_, key_, std::move(stream_));
    }
    finish(UpstreamFailure::kNone, "");
  }

  void finish(UpstreamFailure f, const std::string& message) {
    if (done_) return;
    done_ = true;
    if (body_timer_armed_) body_timer_->cancel();
    if (f != UpstreamFailure::kNone && stream_) {
      beast::error_code ignored;
      stream_->socket().close(ignored);
    }
    auto cb = std::move(cb_.on_done);
    cb_ = {};
    if (cb) cb(f, message);
  }

  std::shared_ptr<UpstreamClient::Impl> client_;
  Endpoint ep_;
  std::string key_;
  UpstreamRequest req_;
  UpstreamCallbacks cb_;
  int32_t first_byte_ms_ = 0, idle_ms_ = 0;
  std::string wire_;
  net::any_io_executor strand_;  // fixed before start() returns: a reconnect reuses it (the
                                 // context's own executor when one thread runs it)
  std::unique_ptr<beast::tcp_stream> stream_;
  size_t ctx_ = 0;  // the client's context (and pool) this call runs on
  std::optional<net::steady_timer> body_timer_;  // the body's idle timeout (lazy), from the first body read
  Clock::time_point body_deadline_{};
  bool body_timer_armed_ = false;
  bool reused_ = false;
  bool done_ = false;
  beast::flat_buffer buffer_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  std::unique_ptr<char[]> piece_;  // body bytes of one read, allocated at the first body read
  size_t piece_size_ = 0;
};

}  // namespace

UpstreamClient::UpstreamClient(UpstreamConfig config) : impl_(std::make_shared<Impl>(config)) {}
UpstreamClient::~UpstreamClient() { stop(); }

void UpstreamClient::start(net::io_context* shared, int32_t shared_threads) {
  start(shared ? std::vector<net::io_context*>{shared} : std::vector<net::io_context*>{}, shared_threads);
}

void UpstreamClient::start(std::vector<net::io_context*> shared, int32_t threads_each) {
  if (!shared.empty() && impl_->config.n_threads == 0) {
    impl_->use_contexts(std::move(shared));
    impl_->one_thread = threads_each == 1;
    return;
  }
  impl_->work.emplace(impl_->own_ioc.get_executor());
  const int n = std::max(1, impl_->config.n_threads);
  impl_->one_thread = n == 1;
  for (int i = 0; i < n; ++i) impl_->threads.emplace_back([impl = impl_] { server::http::run_io_thread(impl->own_ioc); });
}

net::io_context& UpstreamClient::io_context() { return *impl_->iocs.front(); }

void UpstreamClient::stop() {
  impl_->stopping.store(true);
  for (auto& p : impl_->pools) {
    std::lock_guard lock(p->mu);
    p->idle.clear();
  }
  if (impl_->threads.empty()) return;
  impl_->work.reset();
  impl_->own_ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

std::shared_ptr<UpstreamCall> UpstreamClient::send(const Endpoint& endpoint, UpstreamRequest request,
                                                   UpstreamCallbacks callbacks) {
  auto call = std::make_shared<Call>(impl_, endpoint, std::move(request), std::move(callbacks));
  call->start();
  return call;
}

void UpstreamClient::run_after(int64_t delay_ms, std::function<void()> fn) {
  auto timer = std::make_shared<net::steady_timer>(*impl_->iocs.front(), std::chrono::milliseconds(delay_ms));
  timer->async_wait([timer, fn = std::move(fn)](beast::error_code ec) {
    if (!ec) fn();
  });
}

void UpstreamClient::trim_idle() { impl_->trim_idle(); }
int64_t UpstreamClient::n_connects() const { return impl_->connects.load(std::memory_order_relaxed); }

int64_t UpstreamClient::n_idle() const {
  int64_t n = 0;
  for (auto& p : impl_->pools) {
    std::lock_guard lock(p->mu);
    for (const auto& [_, v] : p->idle) n += static_cast<int64_t>(v.size());
  }
  return n;
}

}  // namespace keel::router
