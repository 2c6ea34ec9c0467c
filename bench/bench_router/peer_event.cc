// What applying one peer feed event costs on the receiving instance (PeerView::apply, which runs on
// every peer link's drain right before a routing decision): events in the shape peer_feed.cc writes,
// which parse_peer_figures scans in place, against the same events with one space after the opening
// brace, which only the JSON parse (nlohmann) reads, as every event was read before Session 13.
// Prints one JSON line per path with ns per event (best of 5 rounds).
// Usage: bench_router_peer_event [EVENTS_PER_ROUND]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "router/peer_view.h"
#include "router/replica.h"
#include "router/sse_reader.h"

using namespace keel::router;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(1000, std::atoi(argv[1])) : 200000;
  ReplicaList replicas;
  for (uint16_t i = 0; i < 4; ++i) {
    const uint16_t port = static_cast<uint16_t>(45000 + i);
    replicas.push_back(std::make_shared<Replica>(i + 1, fmt::format("http://127.0.0.1:{}", port),
                                                 Endpoint{.host = "127.0.0.1", .port = port}, ReplicaLabels{},
                                                 BreakerConfig{}));
  }
  std::vector<SseEvent> shaped, spaced;
  for (int i = 0; i < 1000; ++i) {
    SseEvent e;
    e.event = i % 2 ? "done" : "route";
    e.data = fmt::format(R"({{"url":"http://127.0.0.1:{}","in_flight":{},"work":{}{}}})", 45000 + i % 4, i % 9,
                         100 + i, i % 2 ? "" : R"(,"group":6208440830440890227)");
    shaped.push_back(e);
    e.data = "{ " + e.data.substr(1);
    spaced.push_back(e);
  }
  for (const auto* set : {&shaped, &spaced}) {
    PeerView view({"http://127.0.0.1:9001"});
    uint64_t group = 0;
    view.apply(0, SseEvent{.event = "reset", .data = "{}"}, replicas, &group);
    double best = 1e18;
    uint64_t sink = 0;
    for (int round = 0; round < 5; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        if (view.apply(0, (*set)[static_cast<size_t>(i) % set->size()], replicas, &group) != PeerApply::kApplied) {
          std::fprintf(stderr, "an event was not applied\n");
          return 1;
        }
        sink += group;
      }
      best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n);
    }
    std::printf("{\"path\": \"%s\", \"events\": %d, \"ns_per_event\": %.1f, \"sink\": %llu}\n",
                set == &shaped ? "scan (the writer's shape)" : "JSON parse (one space added)", n, best,
                static_cast<unsigned long long>(sink % 1000));
  }
  return 0;
}
