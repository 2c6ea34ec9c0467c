// The per-connection state machine and the Exchange implementation (connection.h says who calls them);
// the only translation unit that includes Boost.Beast.
//
// A connection cycles: wait for the first byte (idle timeout) -> read headers (header timeout) ->
// read body (body timeout) -> dispatch to the route handler -> while the handler works, a "watch"
// (a wait for readability, then a non-blocking read) detects the client going away and buffers
// pipelined bytes -> response bytes are written on the connection's thread -> next request or close.
// The watch started with a request stays after its answer and is the wait for the next one (idle
// timeout from a lazy timer), so a keep-alive request costs one readability wait, not a cancel and a
// fresh read. Bytes already buffered are parsed without a read, and an answer's last bytes are sent at
// once when the socket takes them (a request that arrived whole and whose answer fits the socket buffer
// costs no handler round beyond its read). Every member of Connection is touched only on its strand:
// the io_context of one io thread (context_per_thread), the shared io_context when one thread runs it,
// or a strand of it (server.cc).

#include "server/http/connection.h"

#include <chrono>
#include <exception>
#include <functional>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "base/log.h"

namespace keel::server::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kReadChunk = 4096;
constexpr size_t kMaxWatchBuffered = 64 << 10;  // pipelined bytes buffered while a request runs
}  // namespace

// Shared between an exchange and its connection: how the exchange ended.
enum class ExchangeEnd { kOpen, kDone, kAborted };

class ExchangeImpl;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket&& socket, Shared& shared)
      : stream_(std::move(socket)), idle_timer_(stream_.get_executor()), shared_(shared) {
    // The watch's read and the answer's first send must not block (on_watch, flush); async operations are
    // unaffected.
    beast::error_code ignored;
    stream_.socket().non_blocking(true, ignored);
    if (auto ep = stream_.socket().remote_endpoint(ignored); !ignored) remote_ = ep.address().to_string();
  }

  void start() {
    {
      std::lock_guard lock(shared_.mu);
      live_registered_ = true;
      shared_.live.emplace(this, weak_from_this());
    }
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->wait_idle(); });
  }

  template <typename Fn>
  void run_on_strand(Fn&& fn) {
    net::post(stream_.get_executor(), std::forward<Fn>(fn));
  }
  // Runs fn now when the caller is on this connection's strand, else posts it.
  template <typename Fn>
  void dispatch_on_strand(Fn&& fn) {
    net::dispatch(stream_.get_executor(), std::forward<Fn>(fn));
  }
  // An exchange operation (ExchangeImpl::with_conn): run at once when the caller is on the strand and
  // no earlier operation waits in the queue (so operations keep their call order), else posted. While
  // one runs at once its caller's locks are held, so the disconnect callback it may fire is posted.
  template <typename Fn>
  void exchange_op(Fn&& fn) {
    const bool none_queued = queued_ops_.fetch_add(1, std::memory_order_acq_rel) == 0;
    auto op = [self = shared_from_this(), fn = std::forward<Fn>(fn)]() mutable {
      self->in_op_ = true;
      fn(*self);
      self->in_op_ = false;
      self->queued_ops_.fetch_sub(1, std::memory_order_acq_rel);
    };
    if (none_queued) {
      net::dispatch(stream_.get_executor(), std::move(op));
    } else {
      net::post(stream_.get_executor(), std::move(op));
    }
  }

  // On the strand. Called by stop(): idle connections close now, busy ones after their response.
  void on_server_stop() {
    if (phase_ == Phase::kIdle) close();
  }
  void force_close() { close(); }
  // After the io threads are joined (no strand runs): break the self-reference of a stuck exchange.
  void abandon() { self_hold_.reset(); }

  // Exchange operations, on the strand; `seq` names the exchange.
  void respond(uint64_t seq, HttpResponse&& response);
  void begin_stream(uint64_t seq, int status, std::string_view content_type, const Headers& headers);
  void push(uint64_t seq, std::string&& bytes);
  void end_stream(uint64_t seq);
  void set_disconnect(uint64_t seq, std::function<void()>&& fn);

 private:
  enum class Phase { kIdle, kReadingHeader, kReadingBody, kHandling, kStreaming, kClosed };

  // The keep-alive wait: the watch (kept from the last exchange, or started) and the idle deadline.
  void wait_idle();
  // The idle timer is lazy: armed when none is pending, it fires at the deadline it was armed for, and
  // re-arms when the connection is still idle and the deadline moved later (each exchange moves it to
  // now + idle timeout, so it never moves earlier).
  void arm_idle_timer();
  void on_idle_timer(beast::error_code ec);
  void read_header();
  void on_header(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void dispatch();
  void fail(int status, std::string_view message);
  // Parses what buffer_ holds into parser_ (consuming it) until the request is whole or more bytes are
  // needed (ec clear), or a parse error (ec set).
  void parse_buffered(beast::error_code& ec);
  void start_watch();
  void on_watch(beast::error_code ec);
  void queue_write(std::string&& bytes, bool ends_exchange);
  void flush();
  void on_write(beast::error_code ec);
  void finish_exchange();
  void close();
  // Runs the disconnect callback: at once, or posted when an exchange operation is on the stack.
  void fire_disconnect(std::function<void()>&& fn);
  bool is_current(uint64_t seq) const {
    return seq == seq_ && (phase_ == Phase::kHandling || phase_ == Phase::kStreaming) && !ended_;
  }

  beast::tcp_stream stream_;
  net::steady_timer idle_timer_;
  Clock::time_point idle_deadline_{};
  bool idle_timer_armed_ = false;
  Shared& shared_;
  std::string remote_;  // the client's IP address, read once at accept
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  Phase phase_ = Phase::kIdle;
  uint64_t seq_ = 0;    // the current exchange
  bool ended_ = false;  // the current exchange wrote (or queued) its last bytes
  bool keep_alive_ = true;
  std::string method_, path_;  // of the current exchange, for the response observer
  std::string out_;            // bytes waiting for the write in flight
  std::string inflight_;       // bytes of the write in flight
  bool writing_ = false;
  bool end_after_write_ = false;
  bool watching_ = false;
  bool live_registered_ = false;
  std::function<void()> on_disconnect_;
  std::shared_ptr<std::atomic<ExchangeEnd>> end_state_;
  std::shared_ptr<Connection> self_hold_;  // keeps the connection alive while a handler owes an answer
  std::atomic<int32_t> queued_ops_{0};     // exchange operations posted and not yet run (any thread)
  bool in_op_ = false;                     // an exchange operation runs (on the strand)

  friend class ExchangeImpl;
};

class ExchangeImpl final : public Exchange {
 public:
  ExchangeImpl(std::weak_ptr<Connection> conn, uint64_t seq, std::shared_ptr<std::atomic<ExchangeEnd>> end)
      : conn_(std::move(conn)), seq_(seq), end_(std::move(end)) {}

  void respond(HttpResponse response) override {
    with_conn([seq = seq_, r = std::move(response)](Connection& c) mutable { c.respond(seq, std::move(r)); });
  }
  void begin_stream(int status, std::string content_type, Headers headers) override {
    with_conn([seq = seq_, status, ct = std::move(content_type), h = std::move(headers)](Connection& c) {
      c.begin_stream(seq, status, ct, h);
    });
  }
  void push(std::string bytes) override {
    with_conn([seq = seq_, b = std::move(bytes)](Connection& c) mutable { c.push(seq, std::move(b)); });
  }
  void end_stream() override {
    with_conn([seq = seq_](Connection& c) { c.end_stream(seq); });
  }
  void post(std::function<void()> fn) override {
    if (auto c = conn_.lock()) c->run_on_strand([c, fn = std::move(fn)] { fn(); });
  }
  void dispatch(std::function<void()> fn) override {
    if (auto c = conn_.lock()) c->dispatch_on_strand([c, fn = std::move(fn)] { fn(); });
  }
  void on_disconnect(std::function<void()> fn) override {
    if (auto c = conn_.lock()) {
      c->exchange_op(
          [seq = seq_, fn = std::move(fn)](Connection& conn) mutable { conn.set_disconnect(seq, std::move(fn)); });
    } else if (end_->load() != ExchangeEnd::kDone) {
      fn();  // the connection is gone and this exchange never completed
    }
  }

 private:
  template <typename Fn>
  void with_conn(Fn&& fn) {
    if (auto c = conn_.lock()) c->exchange_op(std::forward<Fn>(fn));
  }

  std::weak_ptr<Connection> conn_;
  uint64_t seq_;
  std::shared_ptr<std::atomic<ExchangeEnd>> end_;
};

void Connection::wait_idle() {
  phase_ = Phase::kIdle;
  if (shared_.stopping.load()) return close();
  if (buffer_.size() > 0) {
    // Pipelined bytes. Inside an exchange operation (an answer sent at once) its caller may hold locks
    // that the next request's handler takes, so that request starts from the queue.
    if (!in_op_) return read_header();
    return run_on_strand([self = shared_from_this()] {
      if (self->phase_ == Phase::kIdle) self->read_header();
    });
  }
  idle_deadline_ = Clock::now() + std::chrono::milliseconds(shared_.config.idle_timeout_ms);
  arm_idle_timer();
  start_watch();  // a watch still pending from the exchange goes on waiting
}

void Connection::arm_idle_timer() {
  if (idle_timer_armed_) return;
  idle_timer_armed_ = true;
  idle_timer_.expires_at(idle_deadline_);
  idle_timer_.async_wait([self = shared_from_this()](beast::error_code ec) { self->on_idle_timer(ec); });
}

void Connection::on_idle_timer(beast::error_code ec) {
  idle_timer_armed_ = false;
  if (ec || phase_ != Phase::kIdle) return;  // cancelled by close(), or a request runs (its end re-arms)
  if (Clock::now() >= idle_deadline_) return close();
  arm_idle_timer();
}

void Connection::read_header() {
  phase_ = Phase::kReadingHeader;
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(shared_.config.max_header_bytes));
  parser_->body_limit(static_cast<uint64_t>(shared_.config.max_body_bytes));
  // Most requests arrive whole in one read: what is buffered is parsed here. The asynchronous reads
  // below would find the same bytes, read nothing, and still cost a posted completion (a handler round)
  // each for the header and the body.
  if (buffer_.size() > 0) {
    beast::error_code ec;
    parse_buffered(ec);
    if (ec) return parser_->is_header_done() ? on_body(ec) : on_header(ec);
    if (parser_->is_header_done()) return on_header(ec);  // dispatches a whole request; else reads the rest
  }
  stream_.expires_after(std::chrono::milliseconds(shared_.config.header_timeout_ms));
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(beast::error_code ec) {
  if (ec == bhttp::error::header_limit) return fail(431, "request headers are too large");
  if (ec == bhttp::error::body_limit) {
    return fail(413, fmt::format("request body is larger than the limit of {} bytes", shared_.config.max_body_bytes));
  }
  if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
      ec == net::error::operation_aborted || ec == net::error::connection_reset) {
    return close();
  }
  if (ec) return fail(400, fmt::format("malformed HTTP request: {}", ec.message()));
  const auto& req = parser_->get();
  method_ = std::string(req.method_string());
  path_ = std::string(req.target().substr(0, req.target().find('?')));
  if (parser_->is_done()) return dispatch();  // the body came with the header
  if (iequals(req[bhttp::field::expect], "100-continue")) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(std::chrono::milliseconds(shared_.config.write_timeout_ms));
    net::async_write(stream_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code wec, size_t) {
      if (wec) return self->close();
      self->read_body();
    });
    return;
  }
  read_body();
}

void Connection::read_body() {
  phase_ = Phase::kReadingBody;
  stream_.expires_after(std::chrono::milliseconds(shared_.config.body_timeout_ms));
  bhttp::async_read(stream_, buffer_, *parser_,
                    [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
}

void Connection::on_body(beast::error_code ec) {
  if (ec == bhttp::error::body_limit) {
    return fail(413, fmt::format("request body is larger than the limit of {} bytes", shared_.config.max_body_bytes));
  }
  if (ec == bhttp::error::partial_message || ec == bhttp::error::end_of_stream) {
    return fail(400, "request body ended before its declared length");
  }
  if (ec == beast::error::timeout || ec == net::error::operation_aborted || ec == net::error::connection_reset) {
    return close();
  }
  if (ec) return fail(400, fmt::format("malformed HTTP request body: {}", ec.message()));
  dispatch();
}

void Connection::dispatch() {
  auto req = parser_->release();
  parser_.reset();
  keep_alive_ = req.keep_alive();
  HttpRequest request;
  request.method = std::string(req.method_string());
  request.target = std::string(req.target());
  auto q = request.target.find('?');
  request.path = request.target.substr(0, q);
  if (q != std::string::npos) request.query = request.target.substr(q + 1);
  for (const auto& field : req) request.headers.emplace_back(field.name_string(), field.value());
  request.body = std::move(req.body());
  request.remote = remote_;

  ++seq_;
  ended_ = false;
  phase_ = Phase::kHandling;
  self_hold_ = shared_from_this();
  end_state_ = std::make_shared<std::atomic<ExchangeEnd>>(ExchangeEnd::kOpen);
  start_watch();

  auto lookup = shared_.router.find(request.method, request.path);
  if (lookup.match == Router::Match::kNoPath) {
    return respond(seq_, shared_.error_response(404, fmt::format("no route for {} {}", request.method, request.path)));
  }
  if (lookup.match == Router::Match::kNoMethod) {
    auto resp = shared_.error_response(405, fmt::format("{} is not allowed on {}", request.method, request.path));
    resp.headers.emplace_back("Allow", lookup.allow);
    return respond(seq_, std::move(resp));
  }
  auto exchange = std::make_shared<ExchangeImpl>(weak_from_this(), seq_, end_state_);
  try {
    (*lookup.handler)(std::move(request), exchange);
  } catch (const std::exception& e) {
    KEEL_LOG_ERROR("handler for {} {} threw: {}", method_, path_, e.what());
    respond(seq_, shared_.error_response(500, "internal error while handling the request"));
  }
}

void Connection::fail(int status, std::string_view message) {
  keep_alive_ = false;
  ++seq_;
  ended_ = false;
  phase_ = Phase::kHandling;
  self_hold_ = shared_from_this();
  end_state_.reset();
  respond(seq_, shared_.error_response(status, message));
}

void Connection::parse_buffered(beast::error_code& ec) {
  while (buffer_.size() > 0 && !parser_->is_done()) {
    const size_t n = parser_->put(buffer_.data(), ec);
    buffer_.consume(n);
    if (ec == bhttp::error::need_more) {
      ec = {};
      return;
    }
    if (ec || n == 0) return;
  }
}

// The watch waits for readability rather than reading: a read started now would find nothing (the
// client waits for its answer) and cost a failed recvmsg per request before the reactor took over.
void Connection::start_watch() {
  if (watching_ || buffer_.size() >= kMaxWatchBuffered) return;
  watching_ = true;
  stream_.expires_never();
  stream_.socket().async_wait(tcp::socket::wait_read,
                              [self = shared_from_this()](beast::error_code ec) { self->on_watch(ec); });
}

void Connection::on_watch(beast::error_code ec) {
  watching_ = false;
  // A request's own reads (a request that arrived in pieces) own the buffer: the watch that outlived the
  // last exchange just ends.
  if (phase_ == Phase::kClosed || phase_ == Phase::kReadingHeader || phase_ == Phase::kReadingBody) return;
  if (!ec) {  // readable: the next request, pipelined bytes, or the client's EOF or reset
    beast::error_code rec;
    const size_t n = stream_.socket().read_some(buffer_.prepare(kReadChunk), rec);  // non-blocking socket
    if (rec && rec != net::error::would_block && rec != net::error::try_again) ec = rec;
    if (!rec) buffer_.commit(n);
  }
  if (ec)
    return close();  // the client went away (or the server closed the socket): close() fires the
                     // disconnect callback of an exchange in flight
  if (phase_ == Phase::kIdle && buffer_.size() > 0) return read_header();
  start_watch();  // an exchange in flight, or a wake-up with nothing to read
}

void Connection::respond(uint64_t seq, HttpResponse&& response) {
  if (!is_current(seq)) return;
  ended_ = true;
  if (shared_.hooks.on_response) shared_.hooks.on_response(method_, path_, response.status);
  bool keep = keep_alive_ && !shared_.stopping.load();
  keep_alive_ = keep;
  queue_write(serialize_response(response, keep), true);
}

void Connection::begin_stream(uint64_t seq, int status, std::string_view content_type, const Headers& headers) {
  if (!is_current(seq) || phase_ != Phase::kHandling) return;
  phase_ = Phase::kStreaming;
  if (shared_.hooks.on_response) shared_.hooks.on_response(method_, path_, status);
  queue_write(serialize_stream_head(status, content_type, headers, keep_alive_), false);
}

void Connection::push(uint64_t seq, std::string&& bytes) {
  if (!is_current(seq) || phase_ != Phase::kStreaming || bytes.empty()) return;
  queue_write(frame_chunk(bytes), false);
}

void Connection::end_stream(uint64_t seq) {
  if (!is_current(seq) || phase_ != Phase::kStreaming) return;
  ended_ = true;
  if (shared_.stopping.load()) keep_alive_ = false;
  queue_write(std::string(last_chunk()), true);
}

void Connection::set_disconnect(uint64_t seq, std::function<void()>&& fn) {
  if (seq != seq_) return;  // that exchange completed and a later one runs
  if (phase_ == Phase::kClosed) {
    if (end_state_ && end_state_->load() != ExchangeEnd::kDone) fire_disconnect(std::move(fn));
    return;
  }
  if (!ended_) on_disconnect_ = std::move(fn);
}

void Connection::queue_write(std::string&& bytes, bool ends_exchange) {
  if (out_.empty()) {
    out_ = std::move(bytes);
  } else {
    out_ += bytes;
  }
  if (ends_exchange) end_after_write_ = true;
  if (!ends_exchange && static_cast<int64_t>(out_.size()) > shared_.config.max_stream_buffer_bytes) {
    KEEL_LOG_WARN("dropping a client that lets more than {} stream bytes pile up",
                  shared_.config.max_stream_buffer_bytes);
    return close();
  }
  flush();
}

void Connection::flush() {
  if (writing_ || phase_ == Phase::kClosed) return;
  if (out_.empty()) {
    if (end_after_write_) finish_exchange();
    return;
  }
  {
    // No write in flight: the bytes go out now when the socket takes them all (an answer, a stream's
    // event; they usually fit its buffer). The asynchronous write would make the same send, then cost a
    // handler round to report it. What the socket does not take goes out asynchronously.
    beast::error_code ec;
    const size_t n = stream_.socket().write_some(net::buffer(out_), ec);  // non-blocking socket
    if (!ec && n == out_.size()) {
      out_.clear();
      if (end_after_write_) finish_exchange();
      return;
    }
    if (ec && ec != net::error::would_block && ec != net::error::try_again) return close();
    if (!ec) out_.erase(0, n);
  }
  writing_ = true;
  inflight_.swap(out_);
  out_.clear();
  stream_.expires_after(std::chrono::milliseconds(shared_.config.write_timeout_ms));
  net::async_write(stream_, net::buffer(inflight_),
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->on_write(ec); });
}

void Connection::on_write(beast::error_code ec) {
  writing_ = false;
  inflight_.clear();
  if (ec) return close();
  flush();
}

void Connection::finish_exchange() {
  end_after_write_ = false;
  on_disconnect_ = nullptr;
  if (end_state_) end_state_->store(ExchangeEnd::kDone);
  self_hold_.reset();
  if (!keep_alive_ || shared_.stopping.load()) return close();
  wait_idle();
}

void Connection::close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  idle_timer_.cancel();
  if (end_state_ && end_state_->load() == ExchangeEnd::kOpen) end_state_->store(ExchangeEnd::kAborted);
  if (auto fn = std::move(on_disconnect_)) {
    on_disconnect_ = nullptr;
    fire_disconnect(std::move(fn));
  }
  self_hold_.reset();
  if (live_registered_) {
    std::lock_guard lock(shared_.mu);
    shared_.live.erase(this);
    live_registered_ = false;
    shared_.cv.notify_all();
  }
}

void Connection::fire_disconnect(std::function<void()>&& fn) {
  if (in_op_) {
    run_on_strand([self = shared_from_this(), fn = std::move(fn)] { fn(); });
  } else {
    fn();
  }
}

void start_connection(tcp::socket&& socket, Shared& shared) {
  std::make_shared<Connection>(std::move(socket), shared)->start();
}
void post_server_stop(const std::shared_ptr<Connection>& c) {
  c->run_on_strand([c] { c->on_server_stop(); });
}
void post_force_close(const std::shared_ptr<Connection>& c) {
  c->run_on_strand([c] { c->force_close(); });
}
void abandon(const std::shared_ptr<Connection>& c) { c->abandon(); }

}  // namespace keel::server::http
