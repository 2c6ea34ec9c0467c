// A trivial, fast OpenAI-shaped backend for measuring router overhead: every chat/completions POST
// gets the same small JSON at once, so the router, not the backend, is what a load test measures.
// Also answers the probes routers make (/health, /metrics, /v1/models, sglang's /get_model_info and
// /get_server_info). With STREAM_CHUNKS > 0, a request whose body asks for "stream": true gets an SSE
// stream of that many chat.completion.chunk events, one every STREAM_GAP_US (0: all at once), then
// [DONE]: a token stream whose per-event cost a router pays.
// Usage: bench_router_backend PORT [IO_THREADS [STREAM_CHUNKS STREAM_GAP_US]]
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "server/http/server.h"
#include "server/http/sse.h"

using keel::server::http::ExchangePtr;
using keel::server::http::HttpRequest;
using keel::server::http::HttpResponse;

namespace {

constexpr const char* kChunk =
    R"({"id":"b","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":)"
    R"({"content":"ok"},"finish_reason":null}]})";

// One stream: a chunk per tick of its timer (on the io_context of the thread that took the request, so its
// pushes run in place and every io thread carries its own streams), then [DONE].
struct Stream : std::enable_shared_from_this<Stream> {
  Stream(boost::asio::io_context& ioc, ExchangePtr e, int n, int gap) : ex(std::move(e)), timer(ioc), left(n), gap_us(gap) {}
  void tick() {
    if (left-- <= 0) {
      ex->push(std::string(keel::server::http::sse_done()));
      ex->end_stream();
      return;
    }
    ex->push(keel::server::http::sse_event(kChunk));
    timer.expires_after(std::chrono::microseconds(gap_us));
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->tick();
    });
  }
  ExchangePtr ex;
  boost::asio::steady_timer timer;
  int left, gap_us;
};

bool wants_stream(const std::string& body) {
  return body.find("\"stream\": true") != std::string::npos || body.find("\"stream\":true") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc == 4) {
    std::fprintf(stderr, "usage: %s PORT [IO_THREADS [STREAM_CHUNKS STREAM_GAP_US]]\n", argv[0]);
    return 2;
  }
  const int stream_chunks = argc > 4 ? std::atoi(argv[3]) : 0;
  const int stream_gap_us = argc > 4 ? std::atoi(argv[4]) : 0;
  std::vector<boost::asio::io_context*> contexts;  // set before the server starts
  auto own_context = [&contexts]() -> boost::asio::io_context& {
    for (auto* c : contexts) {
      if (c->get_executor().running_in_this_thread()) return *c;
    }
    return *contexts.front();
  };
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  keel::server::http::Router router;
  const std::string completion =
      R"({"id":"b","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"finish_reason":"stop",)"
      R"("message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9}})";
  auto fixed = [](std::string body) {
    return [body](HttpRequest&&, const ExchangePtr& ex) { ex->respond(HttpResponse{.status = 200, .body = body}); };
  };
  auto generate = [&, whole = fixed(completion)](HttpRequest&& req, const ExchangePtr& ex) {
    if (stream_chunks <= 0 || !wants_stream(req.body)) return whole(std::move(req), ex);
    ex->begin_stream(200, "text/event-stream", {});
    if (stream_gap_us <= 0) {
      for (int i = 0; i < stream_chunks; ++i) ex->push(keel::server::http::sse_event(kChunk));
      ex->push(std::string(keel::server::http::sse_done()));
      ex->end_stream();
      return;
    }
    std::make_shared<Stream>(own_context(), ex, stream_chunks, stream_gap_us)->tick();
  };
  router.add("POST", "/v1/chat/completions", generate);
  router.add("POST", "/v1/completions", generate);
  router.add("POST", "/generate", fixed(completion));
  router.add("GET", "/health", fixed(R"({"status":"ok"})"));
  router.add("GET", "/health_generate", fixed(R"({"status":"ok"})"));
  router.add("GET", "/metrics", fixed(""));
  router.add("GET", "/v1/models", fixed(R"({"object":"list","data":[{"id":"m","object":"model"}]})"));
  router.add("GET", "/get_model_info", fixed(R"({"model_path":"m","is_generation":true})"));
  router.add("GET", "/get_server_info", fixed(R"({"model_path":"m"})"));
  keel::server::http::ServerConfig cfg;
  cfg.port = static_cast<uint16_t>(std::atoi(argv[1]));
  cfg.n_io_threads = argc > 2 ? std::atoi(argv[2]) : 1;
  cfg.context_per_thread = true;  // no handler blocks
  keel::server::http::HttpServer server(cfg, std::move(router));
  contexts = server.io_contexts();
  if (auto st = server.start(); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  server.stop();
  return 0;
}
