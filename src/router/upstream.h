// UpstreamClient: the router's asynchronous HTTP/1.1 client to replicas (Boost.Beast; the only
// router TU that includes it). Keep-alive connections are pooled per replica endpoint; each call
// runs on its connection's strand, so no thread is tied to a connection. The client either runs io
// threads of its own or puts its sockets and timers on an io_context someone else runs (the HTTP
// front end's): then a proxied request never changes threads between client and replica. Response bodies are handed
// over as they arrive (SSE flows through without buffering). Timeouts: connect, first byte (request
// sent -> response head), idle (between body reads). A pooled connection the replica already closed
// is retried once on a fresh one, invisibly. Callbacks run on the call's strand, one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "router/replica.h"

namespace boost::asio {
class io_context;  // <boost/asio/io_context.hpp>, included by upstream.cc only
}  // namespace boost::asio

namespace keel::router {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct UpstreamConfig {
  int32_t connect_timeout_ms = 1000;
  int32_t first_byte_timeout_ms = 60'000;
  int32_t idle_timeout_ms = 30'000;
  // Kept-alive connections pooled per replica once their call ended. Beyond it a finished call's
  // connection is closed, and the next call beyond the pool connects again: under a concurrency above
  // the pool that is a connect and a close per request (Session 15: 192 client connections through one
  // core with a pool of 64 served 20-29k req/s against 38-42k with 8).
  int32_t max_idle_per_replica = 1024;
  // A pooled connection unused this long is closed (trim_idle(), and when a call would take it): under
  // keel serve's 60 s keep-alive, so the router drops it before the replica does.
  int32_t pool_idle_ms = 50'000;
  int32_t n_threads = 0;  // own io threads; 0 = none of its own: the io_context given to start() (else 1)

  Status validate() const;
};

struct UpstreamRequest {
  std::string method = "POST";
  std::string target;  // path + query
  HeaderList headers;  // Host, Content-Length and Connection are added
  std::string body;
  int32_t first_byte_timeout_ms = 0;  // 0 = the config's
  int32_t idle_timeout_ms = 0;        // 0 = the config's
};

// Where a call failed; kNone = the whole response arrived.
enum class UpstreamFailure { kNone, kConnect, kFirstByte, kBody, kProtocol };
std::string_view upstream_failure_name(UpstreamFailure f);

struct UpstreamCallbacks {
  std::function<void(int status, const HeaderList& headers)> on_head;
  std::function<void(std::string_view bytes)> on_data;
  std::function<void(UpstreamFailure failure, const std::string& message)> on_done;  // exactly once
};

class UpstreamCall {
 public:
  virtual ~UpstreamCall() = default;
  // Closes the connection; no callback runs after cancel() returns... on the call's strand (it is
  // posted there), so a callback already running finishes first.
  virtual void cancel() = 0;
};

class UpstreamClient {
 public:
  explicit UpstreamClient(UpstreamConfig config);
  ~UpstreamClient();  // stops
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  // Starts n_threads io threads of the client's own. With `shared` (only used when n_threads is 0)
  // the client starts none and runs every call and timer on that io_context, whose `shared_threads`
  // threads its owner runs; n_threads 0 without one starts a single own thread. `shared` must
  // outlive the client's calls and timers, and stop() must run before it is destroyed (it drops the
  // pooled connections, which are bound to it). When one thread runs the context, calls skip their
  // strands (that thread already runs their handlers one at a time).
  void start(boost::asio::io_context* shared = nullptr, int32_t shared_threads = 1);
  // With n_threads 0: runs on `shared` contexts, each run by `threads_each` threads of its owner (the
  // front end's, HttpServer::io_contexts()). A call runs on the context of the thread that sends it (that
  // thread then carries it from client to replica and back), or on the first when it runs none of them,
  // on a strand when threads_each > 1; each context has its own pool; timers run on the first. Empty, or
  // n_threads > 0: as start() above.
  void start(std::vector<boost::asio::io_context*> shared, int32_t threads_each);
  // Stops the own threads (a shared context's owner stops that one) and drops idle connections;
  // calls still running on a shared context finish there and do not return to the pool.
  void stop();

  std::shared_ptr<UpstreamCall> send(const Endpoint& endpoint, UpstreamRequest request, UpstreamCallbacks callbacks);
  // Runs fn on the client's threads after delay_ms (retry backoff, periodic checks).
  void run_after(int64_t delay_ms, std::function<void()> fn);
  // The io_context its calls and timers run on (after start()): for sockets of others that should run
  // beside them (the peer links).
  boost::asio::io_context& io_context();
  // Pooled idle connections right now (for tests and metrics).
  int64_t n_idle() const;
  // Closes the pooled connections unused for pool_idle_ms (the service calls it each health round).
  void trim_idle();
  // Connections opened since start (a rate near the request rate means the pool is too small).
  int64_t n_connects() const;

  struct Impl;  // upstream.cc (public so its calls can hold it)

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace keel::router
