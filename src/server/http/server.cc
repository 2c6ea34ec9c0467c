// The listener and the io threads of HttpServer (server.h): one io_context run by every io thread, or
// with context_per_thread an io_context per io thread with accepted connections dealt to them in turn
// (connection.h/.cc serve them).
#include "server/http/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "base/log.h"
#include "server/http/connection.h"

namespace keel::server::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

Status ServerConfig::validate() const {
  if (n_io_threads < 1)
    return make_error(ErrorCode::kInvalidArgument, "n_io_threads must be >= 1, got {}", n_io_threads);
  if (max_body_bytes < 1) return make_error(ErrorCode::kInvalidArgument, "max_body_bytes must be >= 1");
  if (max_header_bytes < 256) return make_error(ErrorCode::kInvalidArgument, "max_header_bytes must be >= 256");
  if (max_stream_buffer_bytes < 1)
    return make_error(ErrorCode::kInvalidArgument, "max_stream_buffer_bytes must be >= 1");
  if (header_timeout_ms < 1 || body_timeout_ms < 1 || idle_timeout_ms < 1 || write_timeout_ms < 1 ||
      drain_timeout_ms < 0) {
    return make_error(ErrorCode::kInvalidArgument, "timeouts must be positive");
  }
  if (busy_poll_us < 0 || busy_poll_us > 1'000'000) {
    return make_error(ErrorCode::kInvalidArgument, "busy_poll_us must be in [0, 1000000], got {}", busy_poll_us);
  }
  return {};
}

namespace {

// An io thread's loop: ioc.run(), or with busy_poll_us > 0, ready handlers and reactor events are taken
// without blocking (poll: epoll_wait with timeout 0) until none came for busy_poll_us; only then does it
// block for the next one (run_one).
void run_loop(net::io_context& ioc, int32_t busy_poll_us) {
  if (busy_poll_us <= 0) {
    ioc.run();
    return;
  }
  const auto window = std::chrono::microseconds(busy_poll_us);
  while (!ioc.stopped()) {
    const auto until = Clock::now() + window;
    bool ran = false;
    while (!(ran = ioc.poll() > 0) && !ioc.stopped() && Clock::now() < until) {
    }
    if (!ran && !ioc.stopped()) ioc.run_one();
  }
}

std::atomic<int64_t> g_handler_exceptions{0};

}  // namespace

int64_t handler_exceptions() { return g_handler_exceptions.load(std::memory_order_relaxed); }

void run_io_thread(net::io_context& ioc, int32_t busy_poll_us) {
  // A handler that throws (request handlers are guarded in dispatch; this is for the others: timers,
  // upstream callbacks, posted work) unwinds out of run(). Asio leaves the io_context usable, so the
  // loop logs it, counts it and runs on: one exchange is lost instead of every connection of the process.
  for (;;) {
    try {
      run_loop(ioc, busy_poll_us);
      return;
    } catch (const std::exception& e) {
      g_handler_exceptions.fetch_add(1, std::memory_order_relaxed);
      KEEL_LOG_ERROR("io thread: a handler threw ({}); the thread runs on", e.what());
    }
  }
}

struct HttpServer::Impl {
  explicit Impl(ServerConfig config, Router router, ServerHooks hooks)
      : iocs(make_contexts(config)), acceptor(net::make_strand(*iocs.front())), accept_retry(acceptor.get_executor()) {
    shared.config = std::move(config);
    shared.router = std::move(router);
    shared.hooks = std::move(hooks);
  }
  static std::vector<std::unique_ptr<net::io_context>> make_contexts(const ServerConfig& c) {
    const int32_t threads = std::max(c.n_io_threads, 1);
    std::vector<std::unique_ptr<net::io_context>> out;
    for (int32_t i = 0; i < (c.context_per_thread ? threads : 1); ++i) {
      out.push_back(std::make_unique<net::io_context>(c.context_per_thread ? 1 : threads));
    }
    return out;
  }

  // Each connection's handlers run one at a time. With a context per thread, connections are dealt to
  // the contexts in turn (accept handlers run on the first's thread only) and need no strand; with one
  // context, one io thread needs none either (a strand would add its queue, a lock and a reference count
  // to every completion), several need a strand per connection.
  // take = false: the next context without using up its turn (an accept that may find the backlog
  // empty); dealt() then moves the turn on once a connection did arrive.
  net::any_io_executor connection_executor(bool take = true) {
    if (iocs.size() > 1) {
      auto ex = iocs[next_ioc % iocs.size()]->get_executor();
      if (take) ++next_ioc;
      return ex;
    }
    if (shared.config.n_io_threads <= 1) return iocs.front()->get_executor();
    return net::make_strand(*iocs.front());
  }
  void dealt() { ++next_ioc; }

  // One accept completion also takes what else waits in the backlog (up to kAcceptBatch, non-blocking):
  // a completion is queued behind every handler already ready, so with a busy loop (hundreds of
  // streams' reads queued) accepting one connection per completion let a burst of 512 new connections
  // wait ~1 s for their turn (docs/performance.md, Session 16). After an error (EMFILE, ENFILE, ...) the
  // next accept waits kAcceptRetryMs instead of spinning on a backlog it cannot take.
  static constexpr int kAcceptBatch = 64;
  static constexpr int kAcceptRetryMs = 50;

  void accept_next() {
    acceptor.async_accept(connection_executor(), [this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open() || shared.stopping.load()) return;
      if (ec) return accept_later(ec);
      start_connection(std::move(socket), shared);
      for (int i = 1; i < kAcceptBatch; ++i) {
        tcp::socket more(connection_executor(/*take=*/false));
        acceptor.accept(more, ec);
        if (ec == net::error::would_block || ec == net::error::try_again) break;
        if (ec) return accept_later(ec);
        dealt();
        start_connection(std::move(more), shared);
      }
      accept_next();
    });
  }

  void accept_later(const boost::system::error_code& ec) {
    KEEL_LOG_WARN("accept failed: {}; accepting again in {} ms", ec.message(), kAcceptRetryMs);
    accept_retry.expires_after(std::chrono::milliseconds(kAcceptRetryMs));
    accept_retry.async_wait([this](boost::system::error_code wait_ec) {
      if (!wait_ec && acceptor.is_open() && !shared.stopping.load()) accept_next();
    });
  }

  std::vector<std::shared_ptr<Connection>> live_connections() {
    std::vector<std::shared_ptr<Connection>> out;
    std::lock_guard lock(shared.mu);
    for (auto& [_, weak] : shared.live) {
      if (auto c = weak.lock()) out.push_back(std::move(c));
    }
    return out;
  }

  bool wait_until_closed(std::chrono::milliseconds timeout) {
    std::unique_lock lock(shared.mu);
    return shared.cv.wait_for(lock, timeout, [&] { return shared.live.empty(); });
  }

  Shared shared;  // first: outlives the io_contexts, whose teardown destroys connections
  std::vector<std::unique_ptr<net::io_context>> iocs;  // one per io thread, or one for all of them
  size_t next_ioc = 0;                                 // the context of the next accepted connection
  tcp::acceptor acceptor;          // on a strand: stop()'s posted close must not run beside an accept handler
  net::steady_timer accept_retry;  // on the acceptor's strand
  std::vector<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool running = false;
};

HttpServer::HttpServer(ServerConfig config, Router router, ServerHooks hooks)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(router), std::move(hooks))) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  KEEL_RETURN_IF_ERROR(impl_->shared.config.validate());
  const auto& cfg = impl_->shared.config;
  boost::system::error_code ec;
  auto address = net::ip::make_address(cfg.host, ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "host '{}' is not an IP address: {}", cfg.host, ec.message());
  tcp::endpoint endpoint(address, cfg.port);
  auto& acc = impl_->acceptor;
  if (acc.open(endpoint.protocol(), ec); ec) return make_error(ErrorCode::kIo, "socket: {}", ec.message());
  if (acc.set_option(net::socket_base::reuse_address(true), ec); ec) {
    return make_error(ErrorCode::kIo, "setsockopt: {}", ec.message());
  }
  if (acc.bind(endpoint, ec); ec) {
    return make_error(ErrorCode::kIo, "binding {}:{}: {}", cfg.host, cfg.port, ec.message());
  }
  if (acc.listen(net::socket_base::max_listen_connections, ec); ec) {
    return make_error(ErrorCode::kIo, "listen: {}", ec.message());
  }
  // Synchronous accepts (the batch after an accept completion) must answer would_block, not wait.
  if (acc.non_blocking(true, ec); ec) return make_error(ErrorCode::kIo, "non-blocking listener: {}", ec.message());
  impl_->port = acc.local_endpoint().port();
  for (auto& ioc : impl_->iocs) impl_->work.push_back(net::make_work_guard(*ioc));
  impl_->accept_next();
  for (int32_t i = 0; i < cfg.n_io_threads; ++i) {
    net::io_context* c = impl_->iocs[static_cast<size_t>(i) % impl_->iocs.size()].get();
    impl_->threads.emplace_back([this, c] { run_io_thread(*c, impl_->shared.config.busy_poll_us); });
  }
  impl_->running = true;
  return {};
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  if (!impl_->running) return;
  impl_->running = false;
  impl_->shared.stopping.store(true);
  net::post(impl_->acceptor.get_executor(), [this] {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->accept_retry.cancel();
  });
  for (auto& c : impl_->live_connections()) post_server_stop(c);
  if (!impl_->wait_until_closed(std::chrono::milliseconds(impl_->shared.config.drain_timeout_ms))) {
    KEEL_LOG_WARN("stop: closing connections still busy after {} ms", impl_->shared.config.drain_timeout_ms);
    for (auto& c : impl_->live_connections()) post_force_close(c);
    impl_->wait_until_closed(std::chrono::milliseconds(1000));
  }
  impl_->work.clear();
  for (auto& ioc : impl_->iocs) ioc->stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  // The close posted above may not have run before ioc.stop(): with the io threads gone it is safe
  // here, and the port must not stay listening (accepting into a backlog nobody serves) until the
  // server object is destroyed.
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
  for (auto& c : impl_->live_connections()) abandon(c);
}

net::io_context& HttpServer::io_context() { return *impl_->iocs.front(); }

int32_t HttpServer::threads_per_context() const {
  const auto& c = impl_->shared.config;
  return c.context_per_thread ? 1 : std::max(c.n_io_threads, 1);
}

std::vector<net::io_context*> HttpServer::io_contexts() {
  std::vector<net::io_context*> out;
  for (auto& ioc : impl_->iocs) out.push_back(ioc.get());
  return out;
}

int64_t HttpServer::n_connections() const {
  std::lock_guard lock(impl_->shared.mu);
  return static_cast<int64_t>(impl_->shared.live.size());
}

}  // namespace keel::server::http
