// The replica set: every `keel serve` (or other OpenAI-compatible server) the router sends to, with
// its labels, lifecycle state, circuit breaker, load as last polled, and per-replica counters.
// Replicas are shared_ptr: a request keeps its replica alive after an admin removal. The set is
// copy-on-write (readers take a snapshot without blocking writers); all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/sharded.h"
#include "base/status.h"
#include "router/breaker.h"
#include "router/prefix_index.h"

namespace keel::server {
class Histogram;
}  // namespace keel::server

namespace keel::router {

struct ReplicaLabels {
  std::string region;
  std::string cloud;
  std::string pool;
};

enum class ReplicaState { kActive, kDraining };

struct Endpoint {
  std::string host;
  uint16_t port = 0;
};

// "http://host:port" (path ignored; https is refused: TLS terminates in front of the router).
Result<Endpoint> parse_replica_url(std::string_view url);

class Replica {
 public:
  Replica(ReplicaId id, std::string url, Endpoint endpoint, ReplicaLabels labels, BreakerConfig breaker);

  const ReplicaId id;
  const std::string url;
  const Endpoint endpoint;
  const ReplicaLabels labels;
  CircuitBreaker breaker;

  std::atomic<ReplicaState> state{ReplicaState::kActive};
  std::atomic<bool> healthy{true};  // last active health check (true until one fails)
  std::atomic<bool> removed{false};  // taken out of the set (its cache feed stops)
  // Load: the router's own count (changed under RouterService::decision_mutex() when routing, so each
  // decision sees every earlier one) plus what the replica reported (-1 = unknown). `external` is the
  // reported queued + running minus the router's own count when that report came (>= 0), the smaller
  // of the last two polls: traffic from other routers or clients persists across polls, while a
  // request the replica still counts for a moment after the router has its answer does not. A poll lags a burst by up to one interval, so it only ever adds to the
  // router's fresh count and never stands in for it.
  std::atomic<int64_t> in_flight{0};
  // Work in flight: the summed cost (tokens: uncached prompt tokens + a per-request constant,
  // CacheAwareConfig::cost) of the router's requests there, added with in_flight and taken off with it.
  std::atomic<int64_t> work{0};
  std::atomic<int64_t> external{0};
  std::atomic<int64_t> excess_prev{0};  // the previous poll's reported - ours
  // Peer sync (`keel router --peer`, peer_view.h): the peer instances' own in-flight count and work here,
  // summed over the live peer feeds (0 without peers), and `external` less them: the traffic neither
  // this instance nor a peer sent (from the same polls, the smaller of the last two).
  std::atomic<int64_t> peer_in_flight{0};
  std::atomic<int64_t> peer_work{0};
  std::atomic<int64_t> external_unsent{0};
  std::atomic<int64_t> unsent_prev{0};
  // Pushed load: the replica's in-flight count from its cache feed (`event: load`, sent within a few
  // ms of each admit and finish; -1 = none, or the feed is down) and the router's own in_flight when
  // it arrived. It counts every router instance's requests there, so load() takes
  // max(in_flight + external, pushed + what this router sent since): another instance's burst is
  // seen at once, not a poll later, and never lowers the router's own fresh count.
  std::atomic<int64_t> pushed{-1};
  std::atomic<int64_t> pushed_ours{0};
  std::atomic<int64_t> queued{-1};
  std::atomic<int64_t> running{-1};
  std::atomic<int64_t> kv_used{-1};
  std::atomic<int64_t> kv_total{-1};
  // KV slots the router's requests may have added here (estimated from their uncached prefix keys):
  // counted up at routing (routed_slots) and again when the request finished here, answered or failed
  // (routed_slots_done); routed_slots_polled is routed_slots_done when the last completed poll was
  // sent. free_cache() takes off what was routed but not finished before that poll went out: only a
  // finished request is surely in the replica's report (keel serve's gauge can lag a running one, and
  // counting a poll sent mid-request as covering it made the next decision forget the request's
  // prefill: sequential new prefixes all went to one replica, Session 18).
  std::atomic<int64_t> routed_slots{0};
  std::atomic<int64_t> routed_slots_done{0};
  std::atomic<int64_t> routed_slots_polled{0};

  // Counters for /metrics.
  // Those added on every request are sharded by thread (base/sharded.h): with several io threads one
  // replica's shared counters were a cache line passed between the cores on every request.
  base::ShardedCounter n_requests;
  std::atomic<int64_t> n_errors{0};
  std::atomic<int64_t> n_retries{0};
  std::atomic<int64_t> n_resumed{0};
  base::ShardedCounter cache_hit_keys;  // matched prefix keys of requests routed here
  base::ShardedCounter prompt_keys;     // prefix keys of requests routed here
  // Its keel_router_upstream_seconds series, looked up once (RouterService::latency_seconds).
  std::atomic<server::Histogram*> latency_histogram{nullptr};

  // max(in_flight + external, pushed + instances x (in_flight - pushed_ours)) (see pushed). `instances`:
  // the router instances sending here (CacheAwareConfig::instances); each request sent since the push
  // stands for one from every instance, as they were sent within the same milliseconds.
  int64_t load(int64_t instances = 1) const;
  // With every peer feed live: own in_flight + peer_in_flight + external_unsent (no guess: the peers
  // report their decisions as they make them).
  int64_t load_synced() const;
  // Records a pushed in-flight count (>= 0); clear_pushed() when the feed is lost.
  void set_pushed(int64_t count);
  void clear_pushed() { pushed.store(-1, std::memory_order_relaxed); }
  // Records a polled report; `ours` = the router's in-flight count there while the poll was out,
  // `peers` = the peers' (peer_in_flight) alike.
  void set_reported(int64_t queued_now, int64_t running_now, int64_t ours, int64_t peers = 0);
  // Records a polled KV report; `done_at_send` = routed_slots_done when that poll was sent.
  void set_kv(int64_t used, int64_t total, int64_t done_at_send);
  // Free KV slots if reported (less what the router sent here since that report), else minus
  // `fallback_entries`.
  int64_t free_cache(int64_t fallback_entries) const;
};

using ReplicaPtr = std::shared_ptr<Replica>;
using ReplicaList = std::vector<ReplicaPtr>;

class ReplicaSet {
 public:
  explicit ReplicaSet(BreakerConfig breaker) : breaker_(breaker) {}

  Result<ReplicaPtr> add(std::string_view url, ReplicaLabels labels);
  // kNotFound if no replica has that URL.
  Status drain(std::string_view url);
  Result<ReplicaPtr> remove(std::string_view url);
  std::shared_ptr<const ReplicaList> snapshot() const;

 private:
  BreakerConfig breaker_;
  mutable std::mutex mu_;
  std::shared_ptr<const ReplicaList> list_ = std::make_shared<ReplicaList>();
  ReplicaId next_id_ = 1;
};

}  // namespace keel::router
