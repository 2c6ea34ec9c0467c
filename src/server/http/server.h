// Asynchronous HTTP/1.1 server on Boost.Beast (kept out of this header: pimpl). n_io_threads run every
// connection, no thread per connection: by default all of them one io_context, a strand per connection;
// with context_per_thread an io_context each, connections dealt to them in turn. Keep-alive,
// body size limit (413), header/body/idle timeouts, chunked streams with disconnect detection, and a
// graceful stop. start()/stop() are called from one controlling thread (the CLI's main).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/http/message.h"
#include "server/http/router.h"

namespace boost::asio {
class io_context;  // defined in <boost/asio/io_context.hpp>; only server.cc and its users include it
}  // namespace boost::asio

namespace keel::server::http {

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0 = any free port (read it back with port())
  int32_t n_io_threads = 2;
  int64_t max_body_bytes = 8 << 20;            // larger bodies get 413
  int64_t max_header_bytes = 16 << 10;         // larger headers get 431
  int64_t max_stream_buffer_bytes = 16 << 20;  // unsent stream bytes before a slow client is dropped
  int32_t header_timeout_ms = 10'000;          // first byte of a request -> end of its headers
  int32_t body_timeout_ms = 30'000;            // end of headers -> end of body
  int32_t idle_timeout_ms = 60'000;            // keep-alive wait for the next request
  int32_t write_timeout_ms = 30'000;           // one write of response bytes
  int32_t drain_timeout_ms = 60'000;           // stop(): longest wait for in-flight exchanges
  // An io thread that runs out of handlers polls for new events this long before it sleeps (0: sleeps
  // at once). Trades a core's idle time for no wake-up per event: a sleeping thread pays a kernel wake-up
  // and a context switch on each event that ends its sleep. For a dedicated core (the router's).
  int32_t busy_poll_us = 0;
  // Each io thread runs an io_context of its own and accepted connections are dealt to them in turn: no
  // scheduler lock or wake-up shared between threads, no strand (4 threads on 4 cores: 28-37 us of CPU
  // per proxied request against 45-54 shared; docs/performance.md, Session 15). But a handler that
  // blocks stalls every connection of its thread, so it is for servers whose handlers never block (the
  // router). Off (keel serve, whose handlers tokenize prompts and compile grammars in place): one
  // io_context run by all io threads, where a slow handler holds one thread and the others serve every
  // connection.
  bool context_per_thread = false;

  Status validate() const;
};

// Builds the error response the server sends on its own (400 malformed request, 404, 405, 413, 431)
// so the wire format of errors stays in one place (server/openai/errors.cc).
using ErrorRenderer = std::function<HttpResponse(int status, std::string_view message)>;
// Called (on an io thread) once per response with its status; for streams, when the head is sent.
using ResponseObserver = std::function<void(std::string_view method, std::string_view path, int status)>;

struct ServerHooks {
  ErrorRenderer render_error;    // null: plain-text bodies
  ResponseObserver on_response;  // null: none
};

class HttpServer {
 public:
  HttpServer(ServerConfig config, Router router, ServerHooks hooks = {});
  ~HttpServer();  // stops if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the io threads. kIo (with the OS message) if the address is taken.
  Status start();
  // The bound port (after start()).
  uint16_t port() const;
  // Graceful stop: closes the listener and idle connections, lets in-flight exchanges finish (up to
  // drain_timeout_ms, then closes them, firing their disconnect callbacks), joins the io threads.
  void stop();
  // Open connections right now (for tests and metrics).
  int64_t n_connections() const;
  // The io_contexts (one per io thread with context_per_thread, else one run by every io thread), alive
  // from construction to destruction. Another asynchronous component may put its own sockets and timers
  // on them so that they run on the same threads (the router's upstream client does: the thread of a
  // client's connection then carries its request to the replica and back, with no hand-off between
  // threads). Work put there runs once start() has started the threads and stops with stop(); whatever
  // it owns that is bound to these contexts must be released before the server is destroyed.
  // io_context() is the first.
  boost::asio::io_context& io_context();
  std::vector<boost::asio::io_context*> io_contexts();
  // How many io threads run each of io_contexts(): 1 with context_per_thread, else n_io_threads.
  int32_t threads_per_context() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An io thread's run loop (ioc.run(), or the busy-poll loop when busy_poll_us > 0) that survives a
// throwing handler: the exception is logged and counted, and the loop goes on. HttpServer's io threads
// run it; other components with threads of their own (the router's upstream client) use it too.
void run_io_thread(boost::asio::io_context& ioc, int32_t busy_poll_us = 0);
// Handlers that threw out of run_io_thread since the process started (a bug each: for /metrics).
int64_t handler_exceptions();

}  // namespace keel::server::http
