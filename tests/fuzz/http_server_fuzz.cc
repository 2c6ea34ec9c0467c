// Fuzzes the HTTP/1.1 front end (server/http, used by `keel serve` and `keel router`) over a real socket:
// each input's bytes are sent on a fresh connection to a running HttpServer, the client half-closes, and
// the server must answer with well-formed status lines only and close the connection within the test's
// deadline (a hang is a failure), without a crash or sanitizer report. The first byte picks how the bytes
// go out: whole, or in pieces with pauses, so that both the parse of a buffered request and the
// asynchronous header and body reads run. Routes: POST /echo (answers the body), GET /hello,
// GET /stream (a short chunked stream).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "server/http/server.h"
#include "server/http/sse.h"

namespace {

using namespace keel::server::http;
using Clock = std::chrono::steady_clock;

HttpServer& server() {
  static HttpServer* s = [] {
    Router r;
    r.add("POST", "/echo", [](HttpRequest&& req, const ExchangePtr& ex) {
      ex->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = std::move(req.body)});
    });
    r.add("GET", "/hello", [](HttpRequest&&, const ExchangePtr& ex) {
      ex->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = "hello"});
    });
    r.add("GET", "/stream", [](HttpRequest&&, const ExchangePtr& ex) {
      ex->begin_stream(200, "text/event-stream", {});
      ex->push(sse_event("one"));
      ex->end_stream();
    });
    auto* srv = new HttpServer(ServerConfig{.host = "127.0.0.1",
                                            .port = 0,
                                            .n_io_threads = 1,
                                            .max_body_bytes = 4096,
                                            .max_header_bytes = 1024,
                                            .header_timeout_ms = 300,
                                            .body_timeout_ms = 300,
                                            .idle_timeout_ms = 300,
                                            .write_timeout_ms = 1000},
                               std::move(r));
    if (!srv->start().ok()) std::abort();
    return srv;
  }();
  return *s;
}

// libFuzzer's timeout alarm (SIGALRM, installed without SA_RESTART) can interrupt any of the blocking
// calls below: EINTR is retried, never taken for the server's failure.
bool connect_to(int fd, uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return true;
  if (errno != EINTR) return false;
  // Interrupted: the handshake goes on; wait for it and read its outcome.
  pollfd p{fd, POLLOUT, 0};
  while (::poll(&p, 1, 5000) < 0) {
    if (errno != EINTR) return false;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  return ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 && (p.revents & POLLOUT);
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the server closed first (an error answer): fine
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HttpServer& srv = server();
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (!connect_to(fd, srv.port())) {
    std::fprintf(stderr, "connect to the server failed: %s\n", std::strerror(errno));
    std::abort();
  }
  if (mode % 4 == 0 || bytes.size() < 2) {
    send_all(fd, bytes);
  } else {  // pieces of 1 + (mode / 4) bytes... capped, with a pause after the first
    const size_t piece = 1 + (mode / 4) % 64;
    bool first = true;
    while (!bytes.empty()) {
      const size_t n = std::min(piece, bytes.size());
      if (!send_all(fd, bytes.substr(0, n))) break;
      bytes.remove_prefix(n);
      if (first) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      first = false;
    }
  }
  ::shutdown(fd, SHUT_WR);
  // Every answer starts with a status line; the server closes within its timeouts.
  std::string got;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) std::abort();  // hang: the server neither answered nor closed
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      std::abort();
    }
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!got.empty() && !got.starts_with("HTTP/1.1 ")) std::abort();
  // Let the server drop the connection before the next input (no leak is left behind in flight).
  const auto drop_deadline = Clock::now() + std::chrono::seconds(5);
  while (srv.n_connections() > 0) {
    if (Clock::now() > drop_deadline) std::abort();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return 0;
}
