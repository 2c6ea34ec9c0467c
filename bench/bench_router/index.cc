// The approximate prefix index under churn: PrefixIndex::record_routed (what the router does after
// each decision for a replica whose exact feed is not live) with prompts that share one of 64 system
// prefixes of 32 keys and add 96 keys of their own, once the replica's set is full (the first
// FILL calls are not timed), so that every call also evicts. Prints p50/p99/p99.9/max per call in
// microseconds and how many calls took over 1 ms: the router's io thread holds the index's
// exclusive lock for that long, and every decision waits behind it (docs/performance.md, Session 14).
// The fill is reported apart (fill_max_us, fill_over_1ms): it is where the sets grow. So is an exact
// feed's warm-up (exact_*): add_exact spans of 128 tokens until the replica's exact set holds
// MAX_ENTRIES keys, as when a replica fills its cache or a restarted router replays a snapshot.
// Usage: bench_router_index [MAX_ENTRIES [CALLS [FILL]]]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "router/prefix_index.h"
#include "router/prefix_key.h"

using keel::router::PrefixIndex;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const long long max_entries = argc > 1 ? std::atoll(argv[1]) : (1LL << 20);
  const int calls = argc > 2 ? std::atoi(argv[2]) : 40000;
  const int fill = argc > 3 ? std::atoi(argv[3]) : 20000;
  if (max_entries < 1 || calls < 1 || fill < 0) {
    std::fprintf(stderr, "usage: bench_router_index [MAX_ENTRIES [CALLS [FILL]]]\n");
    return 2;
  }
  PrefixIndex index(max_entries);
  std::mt19937_64 rng(1);
  std::vector<uint64_t> keys(128);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(calls));
  double fill_max = 0;
  long fill_over_1ms = 0;
  for (int i = 0; i < fill + calls; ++i) {
    const uint64_t system = rng() % 64;
    for (size_t k = 0; k < keys.size(); ++k) keys[k] = k < 32 ? (system * 1000003 + k + 1) * 0x9E3779B97F4A7C15ULL : rng();
    const auto t0 = Clock::now();
    index.record_routed(1, keys);
    const double t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (i >= fill) {
      us.push_back(t);
    } else {
      fill_max = std::max(fill_max, t);
      fill_over_1ms += t > 1000;
    }
  }
  // Exact warm-up: spans of 128 tokens, each chained to the previous span's last key, in chains of 8
  // spans (1,024-token prompts).
  double exact_max = 0, exact_total = 0;
  long exact_over_1ms = 0, spans = 0;
  std::vector<int32_t> tokens(128);
  uint64_t parent = 0;
  while (index.n_exact(2) < max_entries) {
    if (spans % 8 == 0) parent = 0;
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % 49152);
    const auto t0 = Clock::now();
    index.add_exact(2, parent, tokens);
    const double t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    for (int32_t tok : tokens) parent = keel::router::extend_token_hash(parent, tok);
    exact_max = std::max(exact_max, t);
    exact_total += t;
    exact_over_1ms += t > 1000;
    ++spans;
  }
  const auto over_1ms = std::count_if(us.begin(), us.end(), [](double x) { return x > 1000; });
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))]; };
  std::printf(
      "{\"max_entries\": %lld, \"calls\": %d, \"entries\": %lld, \"p50_us\": %.2f, \"p99_us\": %.2f, \"p999_us\": %.2f, "
      "\"max_us\": %.1f, \"calls_over_1ms\": %ld, \"fill_max_us\": %.1f, \"fill_over_1ms\": %ld, "
      "\"exact_spans\": %ld, \"exact_mean_us\": %.2f, \"exact_max_us\": %.1f, \"exact_over_1ms\": %ld}\n",
      max_entries, calls, static_cast<long long>(index.n_approx(1)), at(0.5), at(0.99), at(0.999), us.back(),
      static_cast<long>(over_1ms), fill_max, fill_over_1ms, spans, exact_total / static_cast<double>(spans),
      exact_max, exact_over_1ms);
  return 0;
}
