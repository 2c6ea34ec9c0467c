// The router's read of one request body, without sockets: the JSON DOM parse the router did before
// (json::parse, then the fields it reads) against scan_body's single pass, on the ~1 KB chat body
// bench_router.py sends and on a ~16 KB one. Prints the mean microseconds per body for each.
// Usage: bench_router_body [ITERATIONS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "router/body_scan.h"

using keel::router::BodyKind;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string chat_body(int system_repeats) {
  std::string system;
  for (int i = 0; i < system_repeats; ++i) system += "You are a helpful assistant that answers briefly. ";
  return json{{"model", "m"},
              {"messages", json::array({{{"role", "system"}, {"content", system}},
                                        {{"role", "user"}, {"content", "What is the capital of France?"}}})},
              {"max_tokens", 1}}
      .dump();
}

template <typename F>
double mean_us(int iters, F&& f) {
  size_t sink = 0;
  for (int i = 0; i < iters / 10; ++i) sink += f();  // warm-up
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) sink += f();
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
  if (sink == 42) std::printf(" ");
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 100000;
  for (int repeats : {8, 300}) {
    const std::string body = chat_body(repeats);
    // The DOM path: parse, then read what the router needs (stream, n, seed, each message's role and content).
    double dom = mean_us(iters, [&] {
      json j = json::parse(body, nullptr, false);
      size_t n = j.contains("stream") + j.contains("n") + j.contains("seed");
      for (const json& m : j["messages"]) n += m["role"].get_ref<const std::string&>().size() +
                                               m["content"].get_ref<const std::string&>().size();
      return n;
    });
    double sax = mean_us(iters, [&] {
      auto f = keel::router::scan_body(body, BodyKind::kChat);
      return f ? f->prompt_text.size() : 0;
    });
    std::printf("{\"body_bytes\": %zu, \"dom_us\": %.2f, \"scan_us\": %.2f}\n", body.size(), dom, sax);
  }
  return 0;
}
