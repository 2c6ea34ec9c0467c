// RouterService: `keel router`'s request front. Owns the replica set, prefix index, policy, tenant
// table, upstream client, health checker and cache-event subscribers, and registers the routes on a
// server/http Router: the proxied OpenAI endpoints, /health, /metrics and the admin API
// (docs/router.md). Handlers run on the HTTP io threads; upstream callbacks on the upstream client's
// own threads, or on the same io threads when start() is given the front end's io_contexts (then one
// thread carries a request end to end). Lifecycle from the controlling thread: construct, add_routes,
// start(); ...; stop() (before the front end whose io_context was shared is destroyed).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/work_queue.h"
#include "router/access_log.h"
#include "router/decision_log.h"
#include "router/peer_feed.h"
#include "router/peer_link.h"
#include "router/peer_view.h"
#include "router/policy.h"
#include "router/prefix_index.h"
#include "router/replica.h"
#include "router/tenants.h"
#include "router/upstream.h"
#include "server/http/router.h"
#include "server/metrics.h"

namespace keel::router {

// The prompt's token ids exactly as a replica would build them (chat template applied), or nullopt
// when the body cannot be tokenized (the replica will answer it with its own 4xx). Set by the CLI
// from the model's tokenizer; absent = character keys.
using PromptTokenizer =
    std::function<std::optional<std::vector<int32_t>>(std::string_view path, std::string_view body)>;

struct RouterConfig {
  std::string policy = "cache_aware";
  CacheAwareConfig cache_aware;
  BreakerConfig breaker;
  UpstreamConfig upstream;
  int64_t max_response_bytes = 64 << 20;  // non-streamed replica responses larger than this -> 502
  int32_t max_retries = 2;                // further replicas tried while nothing reached the client
  int32_t retry_backoff_ms = 10;          // doubled per retry
  double retry_budget_ratio = 0.2;        // retries earned per request ...
  double retry_budget_min = 10;           // ... on top of this reserve (and the cap of the bucket)
  int32_t health_interval_ms = 1000;
  int32_t health_timeout_ms = 1000;
  bool resume_streams = true;            // continue a stream on another replica when its replica dies
  bool cache_events = true;              // subscribe to replicas' /v1/cache/events (needs a tokenizer)
  int32_t char_block_bytes = 64;         // prefix key granularity without a tokenizer
  int64_t max_approx_entries = 1 << 20;  // per replica
  // Prefix keys come from a prompt's first this many tokens (or this many x 4 bytes without a
  // tokenizer): routing needs its head only, and a long prompt's whole encoding took the io thread
  // 196 ms at 7.5 MB (docs/router.md, "Long prompts").
  int64_t max_prefix_tokens = 32768;
  // A request body over kIoThreadBodyMaxBytes (proxy.h) is scanned, parsed and tokenized on one of
  // body_threads threads, not on the io thread that received it (whose other connections would wait);
  // past body_queue waiting there, such a request gets 429 with Retry-After.
  int32_t body_threads = 2;
  int64_t body_queue = 64;
  // KV pulls (docs/router.md "KV pulls"): a request routed to a replica that holds at least this many
  // tokens of its prompt fewer than another candidate publishing its cache (a keel serve replica)
  // names that holder in X-Keel-Kv-Source, and the replica copies the prefix's KV from it instead of
  // prefilling it. 0 = off.
  int64_t kv_pull_min_tokens = 64;
  std::string admin_key;                 // required as Bearer on /admin/* when set
  std::string state_file;                // replica set saved here on every admin change (state_file.h)
  std::string region_header = "X-Keel-Region";
  bool access_log = true;
  // Other router instances on the same replicas (`--peer http://host:port`, repeatable): this one
  // subscribes to their /v1/router/peer_feed and, while every feed is live, counts their requests
  // exactly instead of the --instance estimate (docs/router.md, load signal).
  std::vector<std::string> peers;
  // With the peers synced, whether a replica's work in flight (the work rule, cost spills, equal holders)
  // includes the peers' work (`--peer-work`). Off by default: the loads stay exact either way, but with
  // the peers' work the cost test spilled tail groups as eagerly as a single router and lost hit rate and
  // TTFT on the device (docs/performance.md, Session 11); each instance's own work keeps Session 10's copies.
  bool peer_work = false;
  // One JSON line per routing decision appended here (`--decision-log PATH`, decision_log.h); empty = none.
  std::string decision_log;

  Status validate() const;
};

class RetryBudget {
 public:
  RetryBudget(double ratio, double reserve) : ratio_(ratio), cap_(reserve), tokens_(reserve) {}
  void on_request();
  bool try_spend();

 private:
  double ratio_, cap_;
  std::mutex mu_;
  double tokens_;
};

class RouterService {
 public:
  RouterService(RouterConfig config, std::unique_ptr<Policy> policy, std::unique_ptr<TenantTable> tenants,
                PromptTokenizer tokenizer);
  ~RouterService();

  Status add_replica(std::string_view url, ReplicaLabels labels);
  // The replica set at start-up: from the state file when it exists (then `workers` are not used:
  // admin removals and labels survive a restart), else `workers`; then the state file is written.
  Status load_replicas(const std::vector<std::pair<std::string, ReplicaLabels>>& workers);
  // Rewrites the state file (if configured) from the current replica set.
  Status persist();
  void add_routes(server::http::Router& router);
  // `front`: the HTTP server's io_contexts (run by `front_threads_each` threads each), used for the
  // upstream side when config().upstream.n_threads is 0 (UpstreamClient::start: each request's upstream
  // call on its client connection's context); empty: the upstream client's own threads.
  void start(std::vector<boost::asio::io_context*> front = {}, int32_t front_threads_each = 1);
  void stop();

  // --- used by the request flow (proxy.cc), health checks and feeds ---
  const RouterConfig& config() const { return config_; }
  ReplicaSet& replicas() { return replicas_; }
  PrefixIndex& index() { return index_; }
  Policy& policy() { return *policy_; }
  UpstreamClient& upstream() { return upstream_; }
  TenantTable* tenants() { return tenants_.get(); }
  const PromptTokenizer& tokenizer() const { return tokenizer_; }
  RetryBudget& retry_budget() { return retry_budget_; }
  server::MetricsRegistry& metrics() { return metrics_; }
  void count_decision(Decision d) { decisions_[static_cast<int>(d)].add(1); }
  // --decision-log (under the decision mutex); open_decision_log() at start-up reports a bad path.
  DecisionLog& decision_log() { return decision_log_; }
  // The access log (stderr, written by a thread of its own); null with --no-access-log.
  AccessLog* access_log() { return access_log_.get(); }
  Status open_decision_log() { return decision_log_.open(config_.decision_log); }
  bool stopping() const { return stopping_.load(); }
  // Where large request bodies are prepared (RouterConfig::body_threads), and how many went there or
  // were refused (queue full).
  WorkQueue& body_work() { return *body_work_; }
  std::atomic<int64_t>& n_large_bodies() { return n_large_bodies_; }
  std::atomic<int64_t>& n_large_bodies_refused() { return n_large_bodies_refused_; }
  uint64_t next_request_number() { return next_request_.fetch_add(1, std::memory_order_relaxed); }
  server::Histogram& decision_seconds() { return *decision_s_; }
  // Peer sync (peer_view.h, peer_feed.h): the peers' figures and this instance's own feed.
  PeerView& peers() { return peers_; }
  PeerFeed& peer_feed() { return peer_feed_; }
  const Endpoint& peer_endpoint(size_t peer) const { return peer_endpoints_[peer]; }
  // A peer routed a request of `group` (its route event): counted in the group's arrivals for the
  // burst guard (group_recent_locked with peers; GroupRate), not in its requests in flight.
  void add_peer_arrival(uint64_t group);
  void count_peer_dropped() { peer_dropped_.fetch_add(1, std::memory_order_relaxed); }
  // Reads and applies what the peers' feeds have delivered so far (PeerLink::drain): before a decision,
  // outside the decision mutex.
  void drain_peers() {
    for (const auto& l : peer_links_) l->drain();
  }
  // Ends the peer feed's streams (before the HTTP front end stops).
  void close_peer_feed() { peer_feed_.close(); }
  // Held from reading the candidates' loads to counting the chosen replica's new request.
  std::mutex& decision_mutex() { return decision_mu_; }
  // Requests in flight per prompt group (policy.h, kGroupTokens): read and added under
  // decision_mutex() with the decision, taken off by remove_group (which takes it). group_recent_locked:
  // the group's requests routed at or after since_ms (of the newest kMaxBurstArrivals; with `peers`, the
  // peers' route events received since then added; a group's history
  // ends when its last request in flight does with burst_rate_factor = 0 and no peers, else when it has
  // been idle for group_idle_ms()).
  int64_t group_in_flight_locked(uint64_t group) const;
  int64_t group_recent_locked(uint64_t group, int64_t since_ms, bool peers = false) const;
  // ms since the group's previous arrival (own or a peer's route event), 0 when it has none.
  int64_t group_gap_ms_locked(uint64_t group, int64_t now_ms) const;
  // Arrivals the group's own rate (GroupRate, before the window) predicts in the window_ms up to now_ms.
  double group_expected_locked(uint64_t group, int64_t now_ms, int64_t window_ms, int64_t recent) const;
  void add_group_locked(uint64_t group, int64_t now_ms);
  static constexpr int64_t kGroupSweepEvery = 1024;
  static constexpr int64_t kPeerHeartbeatMs = 1000;
  void remove_group(uint64_t group);
  int64_t group_requests() const { return group_requests_.load(std::memory_order_relaxed); }
  // Entries in the group table (takes the decision mutex); an idle entry goes group_idle_ms() after its
  // last arrival, at the next sweep.
  int64_t n_groups() const;
  int64_t group_idle_ms() const;
  server::Histogram& latency_seconds(Replica& r);

 private:
  void handle_health(const server::http::ExchangePtr& ex);
  void handle_metrics(const server::http::ExchangePtr& ex);
  std::string render_replica_metrics();
  void schedule_health_round();
  void health_round();
  void poll_load(const ReplicaPtr& r);
  void start_feed(const ReplicaPtr& r);
  void peer_heartbeat();
  void sweep_groups_locked(int64_t now_ms);
  void render_peer_metrics(std::string& out);

  RouterConfig config_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<TenantTable> tenants_;
  PromptTokenizer tokenizer_;
  ReplicaSet replicas_;
  PrefixIndex index_;
  UpstreamClient upstream_;
  RetryBudget retry_budget_;
  server::MetricsRegistry metrics_;
  server::Histogram* decision_s_ = nullptr;
  base::ShardedCounter decisions_[kNumDecisions];
  mutable std::mutex decision_mu_;
  struct GroupState {
    int64_t in_flight = 0;
    RecentArrivals routed;
    RecentArrivals peers_routed;  // the peers' route events (receive times)
    GroupRate rate;               // own and peers' arrivals
  };
  // Guarded by decision_mu_. With burst_rate_factor = 0 no entries with 0 in flight; otherwise a group's
  // arrival history outlives its requests in flight (its rate is what judges its bursts) and an idle
  // entry is swept group_idle_ms() after its last arrival (every kGroupSweepEvery additions).
  std::unordered_map<uint64_t, GroupState> groups_;
  int64_t group_adds_ = 0;
  std::atomic<int64_t> group_requests_{0};  // their sum, for /metrics
  PeerView peers_;
  PeerFeed peer_feed_;
  DecisionLog decision_log_;
  std::unique_ptr<AccessLog> access_log_;
  std::vector<Endpoint> peer_endpoints_;
  std::vector<std::shared_ptr<PeerLink>> peer_links_;  // one per --peer, from start() on
  std::atomic<int64_t> peer_dropped_{0};
  std::mutex persist_mu_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
  std::atomic<uint64_t> next_request_{1};
  std::atomic<int64_t> n_large_bodies_{0};
  std::atomic<int64_t> n_large_bodies_refused_{0};
  // Last: destroyed (its jobs run and its threads joined) before the members its jobs use.
  std::unique_ptr<WorkQueue> body_work_;
  friend class AdminApi;
  friend void register_admin_routes(RouterService& svc, server::http::Router& router);
};

// Admin API (admin.cc): /admin/replicas (GET list, POST add/drain/remove).
void register_admin_routes(RouterService& svc, server::http::Router& router);
// The admin API's access rule (server/http/admin_access.h) for `req`: true when it may proceed, else the 401 or 403
// is already sent, its message naming `what` ("admin calls", "the peer feed").
bool admit_admin(const RouterService& svc, const server::http::HttpRequest& req, const server::http::ExchangePtr& ex,
                 std::string_view what);
// The proxied endpoints (proxy.cc).
void register_proxy_routes(RouterService& svc, server::http::Router& router);
// Subscribes to one replica's cache-event stream until it is removed or the router stops (cache_feed.cc).
void run_cache_feed(RouterService& svc, const ReplicaPtr& replica);

}  // namespace keel::router
