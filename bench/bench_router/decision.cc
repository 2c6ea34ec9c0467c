// The router's per-request decision cost, without sockets: prefix keys of a prompt (chained xxh3 over
// token ids), a longest-match lookup in every replica's index, and the cache_aware pick — what
// ProxyRequest::choose does after tokenization (PrefixIndex::view: every candidate under one lock).
// Prints p50/p99 in microseconds per configuration.
// Usage: bench_router_decision [ITERATIONS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "router/policy.h"
#include "router/prefix_index.h"
#include "router/prefix_key.h"

using namespace keel::router;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::mt19937 rng(1);
  for (int n_replicas : {4, 16, 64}) {
    for (int prompt_len : {256, 2048}) {
      PrefixIndex index(1 << 20);
      // Each replica holds 32 cached prompts: 8 shared system prompts x 4 user turns, prompt_len tokens.
      std::vector<std::vector<int32_t>> systems(8);
      for (auto& s : systems) {
        s.resize(static_cast<size_t>(prompt_len) * 3 / 4);
        for (auto& t : s) t = static_cast<int32_t>(rng() % 49152);
      }
      auto make_prompt = [&](int sys) {
        std::vector<int32_t> p = systems[static_cast<size_t>(sys)];
        while (static_cast<int>(p.size()) < prompt_len) p.push_back(static_cast<int32_t>(rng() % 49152));
        return p;
      };
      for (int r = 0; r < n_replicas; ++r) {
        for (int k = 0; k < 4; ++k) index.record_routed(static_cast<ReplicaId>(r), token_prefix_hashes(make_prompt((r + k) % 8)));
      }
      auto policy = make_cache_aware({});
      std::vector<std::vector<int32_t>> prompts;
      for (int i = 0; i < 64; ++i) prompts.push_back(make_prompt(i % 8));
      std::vector<double> us;
      us.reserve(static_cast<size_t>(iters));
      std::vector<CandidateView> views(static_cast<size_t>(n_replicas));
      std::vector<ReplicaId> ids(static_cast<size_t>(n_replicas));
      for (int r = 0; r < n_replicas; ++r) ids[static_cast<size_t>(r)] = static_cast<ReplicaId>(r);
      std::vector<PrefixIndex::View> held(static_cast<size_t>(n_replicas));
      int64_t sink = 0;
      for (int i = 0; i < iters; ++i) {
        const auto& prompt = prompts[static_cast<size_t>(i) % prompts.size()];
        auto t0 = Clock::now();
        auto keys = token_prefix_hashes(prompt);
        index.view(ids, keys, held);  // as ProxyRequest::choose: every candidate under one lock
        for (int r = 0; r < n_replicas; ++r) {
          views[static_cast<size_t>(r)] = {.load = (i + r) % 5, .match = held[static_cast<size_t>(r)].match,
                                           .free_cache = 1000};
        }
        Pick p = policy->pick({.n_keys = static_cast<int64_t>(keys.size()), .random = rng()}, views);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        sink += p.index;
      }
      std::sort(us.begin(), us.end());
      std::printf("{\"replicas\": %d, \"prompt_tokens\": %d, \"p50_us\": %.2f, \"p99_us\": %.2f, \"sink\": %lld}\n",
                  n_replicas, prompt_len, us[us.size() / 2], us[us.size() * 99 / 100], static_cast<long long>(sink));
    }
  }
  return 0;
}
