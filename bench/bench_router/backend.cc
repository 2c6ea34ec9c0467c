// A trivial, fast OpenAI-shaped backend for measuring router overhead: every chat/completions POST
// gets the same small JSON at once, so the router, not the backend, is what a load test measures.
// Also answers the probes routers make (/health, /metrics, /v1/models, sglang's /get_model_info and
// /get_server_info). Usage: bench_router_backend PORT [IO_THREADS]
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/http/server.h"

using keel::server::http::ExchangePtr;
using keel::server::http::HttpRequest;
using keel::server::http::HttpResponse;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [IO_THREADS]\n", argv[0]);
    return 2;
  }
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
  router.add("POST", "/v1/chat/completions", fixed(completion));
  router.add("POST", "/v1/completions", fixed(completion));
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
  keel::server::http::HttpServer server(cfg, std::move(router));
  if (auto st = server.start(); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  server.stop();
  return 0;
}
