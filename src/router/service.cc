#include "router/service.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "router/prom_gauge.h"
#include "router/state_file.h"
#include "server/http/server.h"

namespace keel::router {

using nlohmann::json;
using server::http::ExchangePtr;
using server::http::HttpResponse;

Status RouterConfig::validate() const {
  KEEL_RETURN_IF_ERROR(cache_aware.validate());
  KEEL_RETURN_IF_ERROR(upstream.validate());
  if (max_response_bytes < 1) return make_error(ErrorCode::kInvalidArgument, "max-response-bytes must be >= 1");
  if (max_retries < 0 || max_retries > 16)
    return make_error(ErrorCode::kInvalidArgument, "max-retries must be in [0, 16]");
  if (retry_backoff_ms < 0) return make_error(ErrorCode::kInvalidArgument, "retry-backoff-ms must be >= 0");
  if (retry_budget_ratio < 0 || retry_budget_min < 0) {
    return make_error(ErrorCode::kInvalidArgument, "the retry budget must be >= 0");
  }
  if (health_interval_ms < 10 || health_timeout_ms < 1) {
    return make_error(ErrorCode::kInvalidArgument, "health-interval-ms must be >= 10 and health-timeout-ms >= 1");
  }
  if (breaker.failure_threshold < 1 || breaker.open_ms < 1) {
    return make_error(ErrorCode::kInvalidArgument, "breaker threshold and open time must be >= 1");
  }
  if (char_block_bytes < 1) return make_error(ErrorCode::kInvalidArgument, "char-block-bytes must be >= 1");
  if (max_prefix_tokens < 1 || max_prefix_tokens > (int64_t{1} << 24)) {
    return make_error(ErrorCode::kInvalidArgument, "max-prefix-tokens must be in [1, 2^24]");
  }
  if (body_threads < 1 || body_threads > 64) return make_error(ErrorCode::kInvalidArgument, "body-threads must be in [1, 64]");
  if (body_queue < 0 || body_queue > 1'000'000) {
    return make_error(ErrorCode::kInvalidArgument, "body-queue must be in [0, 1000000]");
  }
  if (kv_pull_min_tokens < 0) return make_error(ErrorCode::kInvalidArgument, "kv-pull-min-tokens must be >= 0");
  if (max_approx_entries < 1 || max_approx_entries > (int64_t{1} << 30)) {
    return make_error(ErrorCode::kInvalidArgument, "max-approx-entries must be in [1, 2^30]");
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    if (auto ep = parse_replica_url(peers[i]); !ep.ok()) {
      return make_error(ErrorCode::kInvalidArgument, "--peer '{}': {}", peers[i], ep.status().message());
    }
    for (size_t k = 0; k < i; ++k) {
      if (peers[k] == peers[i]) return make_error(ErrorCode::kInvalidArgument, "--peer '{}' is given twice", peers[i]);
    }
  }
  return {};
}

namespace {

// The --peer URLs that parse (validate() refuses the others before a service is built).
std::vector<std::string> parsed_peers(const RouterConfig& config) {
  std::vector<std::string> out;
  for (const auto& u : config.peers) {
    if (parse_replica_url(u).ok()) out.push_back(u);
  }
  return out;
}

}  // namespace

void RetryBudget::on_request() {
  std::lock_guard lock(mu_);
  tokens_ = std::min(cap_ + 1000 * ratio_, tokens_ + ratio_);
}

bool RetryBudget::try_spend() {
  std::lock_guard lock(mu_);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

RouterService::RouterService(RouterConfig config, std::unique_ptr<Policy> policy, std::unique_ptr<TenantTable> tenants,
                             PromptTokenizer tokenizer)
    : config_(std::move(config)),
      policy_(std::move(policy)),
      tenants_(std::move(tenants)),
      tokenizer_(std::move(tokenizer)),
      replicas_(config_.breaker),
      index_(config_.max_approx_entries),
      upstream_(config_.upstream),
      retry_budget_(config_.retry_budget_ratio, config_.retry_budget_min),
      peers_(parsed_peers(config_)) {
  for (size_t p = 0; p < peers_.size(); ++p) peer_endpoints_.push_back(*parse_replica_url(peers_.url(p)));
  if (config_.access_log) access_log_ = std::make_unique<AccessLog>(stderr);
  decision_s_ = &metrics_.histogram("keel_router_decision_seconds", "Time to choose a replica.",
                                    {1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 1e-2});
  body_work_ = std::make_unique<WorkQueue>("router-body", config_.body_threads, static_cast<size_t>(config_.body_queue));
}

RouterService::~RouterService() { stop(); }

server::Histogram& RouterService::latency_seconds(Replica& r) {
  // The registry lookup formats the label and takes the registry's lock: once per replica, not per request.
  if (server::Histogram* h = r.latency_histogram.load(std::memory_order_acquire)) return *h;
  server::Histogram& h =
      metrics_.histogram("keel_router_upstream_seconds", "Upstream call time per replica (to the last byte).",
                         server::latency_buckets_s(), fmt::format("replica=\"{}\"", r.url));
  r.latency_histogram.store(&h, std::memory_order_release);
  return h;
}

Status RouterService::add_replica(std::string_view url, ReplicaLabels labels) {
  KEEL_ASSIGN_OR_RETURN(ReplicaPtr r, replicas_.add(url, std::move(labels)));
  if (started_.load()) start_feed(r);
  return {};
}

Status RouterService::load_replicas(const std::vector<std::pair<std::string, ReplicaLabels>>& workers) {
  std::optional<std::vector<SavedReplica>> saved;
  if (!config_.state_file.empty()) {
    KEEL_ASSIGN_OR_RETURN(saved, load_state_file(config_.state_file));
  }
  if (saved) {
    for (const SavedReplica& r : *saved) {
      KEEL_RETURN_IF_ERROR(add_replica(r.url, r.labels));
      if (r.draining) KEEL_RETURN_IF_ERROR(replicas_.drain(r.url));
    }
    KEEL_LOG_INFO("{} replicas from the state file {} (--workers not used)", saved->size(), config_.state_file);
  } else {
    for (const auto& [url, labels] : workers) KEEL_RETURN_IF_ERROR(add_replica(url, labels));
  }
  return persist();
}

Status RouterService::persist() {
  if (config_.state_file.empty()) return {};
  std::lock_guard lock(persist_mu_);
  return save_state_file(config_.state_file, *replicas_.snapshot());
}

void RouterService::start_feed(const ReplicaPtr& r) {
  if (config_.cache_events && tokenizer_) run_cache_feed(*this, r);
}

void RouterService::start(std::vector<boost::asio::io_context*> front, int32_t front_threads_each) {
  upstream_.start(std::move(front), front_threads_each);
  started_.store(true);
  for (const auto& r : *replicas_.snapshot()) start_feed(r);
  upstream_.run_after(0, [this] { health_round(); });
  for (size_t p = 0; p < peers_.size(); ++p) {
    peer_links_.push_back(std::make_shared<PeerLink>(*this, p));
    peer_links_.back()->start();
  }
  upstream_.run_after(kPeerHeartbeatMs, [this] { peer_heartbeat(); });
}

void RouterService::peer_heartbeat() {
  if (stopping()) return;
  peer_feed_.heartbeat();
  upstream_.run_after(kPeerHeartbeatMs, [this] { peer_heartbeat(); });
}

void RouterService::stop() {
  stopping_.store(true);
  body_work_->stop();  // the waiting bodies are prepared; their requests then see stopping()
  peer_feed_.close();
  upstream_.stop();
  for (const auto& l : peer_links_) l->stop();  // no thread runs their io_context now
}

void RouterService::schedule_health_round() {
  if (!stopping()) upstream_.run_after(config_.health_interval_ms, [this] { health_round(); });
}

void RouterService::health_round() {
  if (stopping()) return;
  upstream_.trim_idle();
  auto list = replicas_.snapshot();
  for (const auto& r : *list) {
    UpstreamRequest req{.method = "GET",
                        .target = "/health",
                        .first_byte_timeout_ms = config_.health_timeout_ms,
                        .idle_timeout_ms = config_.health_timeout_ms};
    auto status = std::make_shared<int>(0);
    upstream_.send(r->endpoint, std::move(req),
                   {.on_head = [status](int s, const HeaderList&) { *status = s; },
                    .on_data = nullptr,
                    .on_done =
                        [this, r, status](UpstreamFailure f, const std::string& msg) {
                          const int64_t now_ms = now_us() / 1000;
                          if (f != UpstreamFailure::kNone || *status != 200) {
                            if (r->healthy.exchange(false)) {
                              KEEL_LOG_WARN(
                                  "replica {} is unhealthy: {}", r->url,
                                  f != UpstreamFailure::kNone ? msg : fmt::format("/health answered {}", *status));
                            }
                            r->breaker.record_failure(now_ms);
                            return;
                          }
                          if (!r->healthy.exchange(true)) KEEL_LOG_INFO("replica {} is healthy again", r->url);
                          // Only a half-open breaker takes the health check as its probe: while closed, a
                          // passing /health must not wipe the passive failure count of a replica that
                          // answers its requests with errors.
                          if (r->breaker.state(now_ms) == BreakerState::kHalfOpen && r->breaker.allow(now_ms)) {
                            r->breaker.record_success();
                          }
                          poll_load(r);
                        }});
  }
  schedule_health_round();
}

void RouterService::poll_load(const ReplicaPtr& r) {
  auto body = std::make_shared<std::string>();
  UpstreamRequest req{.method = "GET",
                      .target = "/metrics",
                      .first_byte_timeout_ms = config_.health_timeout_ms,
                      .idle_timeout_ms = config_.health_timeout_ms};
  upstream_.send(r->endpoint, std::move(req),
                 {.on_head = nullptr,
                  .on_data =
                      [body](std::string_view b) {
                        if (body->size() < (4 << 20)) body->append(b);
                      },
                  .on_done =
                      [r, body, ours_at_send = r->in_flight.load(), peers_at_send = r->peer_in_flight.load(),
                       done_at_send = r->routed_slots_done.load()](UpstreamFailure f, const std::string&) {
                        if (f != UpstreamFailure::kNone) return;
                        // The replica counted at some moment while the poll was out: compare with the
                        // larger of our counts at both ends, so our own requests are never counted twice.
                        r->set_reported(prom_gauge(*body, "keel_num_requests_waiting"),
                                        prom_gauge(*body, "keel_num_requests_running"),
                                        std::max(ours_at_send, r->in_flight.load()),
                                        std::max(peers_at_send, r->peer_in_flight.load()));
                        r->set_kv(prom_gauge(*body, "keel_kv_slots_used"), prom_gauge(*body, "keel_kv_slots_total"),
                                  done_at_send);
                      }});
}

void RouterService::add_routes(server::http::Router& router) {
  register_proxy_routes(*this, router);
  register_admin_routes(*this, router);
  router.add("GET", "/health", [this](server::http::HttpRequest&&, const ExchangePtr& ex) { handle_health(ex); });
  router.add("GET", "/metrics", [this](server::http::HttpRequest&&, const ExchangePtr& ex) { handle_metrics(ex); });
  // The peer feed shows every replica's load and each decision's group, and each subscriber costs a push
  // per decision: the admin API's rule (server/http/admin_access.h) decides who may subscribe. Peer links send the
  // instance's own --admin-key (the same on every instance of a deployment).
  router.add("GET", "/v1/router/peer_feed", [this](server::http::HttpRequest&& req, const ExchangePtr& ex) {
    if (admit_admin(*this, req, ex, "peer feed subscriptions")) peer_feed_.subscribe(ex, *replicas_.snapshot());
  });
}

void RouterService::handle_health(const ExchangePtr& ex) {
  int64_t n_healthy = 0, n_total = 0;
  const int64_t now_ms = now_us() / 1000;
  for (const auto& r : *replicas_.snapshot()) {
    ++n_total;
    if (r->healthy.load() && r->state.load() == ReplicaState::kActive && r->breaker.available(now_ms)) ++n_healthy;
  }
  int status = n_healthy > 0 && !stopping() ? 200 : 503;
  ex->respond(HttpResponse{
      .status = status,
      .body =
          json{{"status", status == 200 ? "ok" : "unavailable"}, {"replicas_healthy", n_healthy}, {"replicas", n_total}}
              .dump()});
}

void RouterService::handle_metrics(const ExchangePtr& ex) {
  ex->respond(HttpResponse{.status = 200,
                           .content_type = "text/plain; version=0.0.4; charset=utf-8",
                           .body = metrics_.render() + render_replica_metrics()});
}

std::string RouterService::render_replica_metrics() {
  std::string out;
  const int64_t now_ms = now_us() / 1000;
  auto family = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  family("keel_router_decisions_total", "counter", "Routing decisions by reason.");
  for (int d = 0; d < kNumDecisions; ++d) {
    out += fmt::format("keel_router_decisions_total{{policy=\"{}\",decision=\"{}\"}} {}\n", policy_->name(),
                       decision_name(static_cast<Decision>(d)), decisions_[d].load());
  }
  family("keel_router_group_requests_in_flight", "gauge",
         "Requests in flight counted per prompt group (group affinity; the sum over groups).");
  out += fmt::format("keel_router_group_requests_in_flight {}\n", group_requests());
  family("keel_router_groups_tracked", "gauge",
         "Prompt groups with an entry in the burst guard's table (in flight, or arrived recently).");
  out += fmt::format("keel_router_groups_tracked {}\n", n_groups());
  family("keel_router_upstream_connects_total", "counter",
         "Connections opened to replicas (near the request rate: raise --upstream-pool).");
  out += fmt::format("keel_router_upstream_connects_total {}\n", upstream_.n_connects());
  family("keel_router_handler_exceptions_total", "counter",
         "Handlers that threw out of an io thread's loop (each a bug; the thread ran on, one exchange lost).");
  out += fmt::format("keel_router_handler_exceptions_total {}\n", server::http::handler_exceptions());
  family("keel_router_large_bodies_total", "counter",
         "Requests whose body was prepared off the io thread (over 64 KiB), and those refused with 429 "
         "because --body-queue of them already waited.");
  out += fmt::format("keel_router_large_bodies_total{{outcome=\"prepared\"}} {}\n", n_large_bodies_.load());
  out += fmt::format("keel_router_large_bodies_total{{outcome=\"refused\"}} {}\n", n_large_bodies_refused_.load());
  family("keel_router_large_bodies_waiting", "gauge", "Large request bodies waiting for a body thread.");
  out += fmt::format("keel_router_large_bodies_waiting {}\n", body_work_->waiting());
  family("keel_router_upstream_pooled", "gauge", "Idle kept-alive connections to replicas in the pool.");
  out += fmt::format("keel_router_upstream_pooled {}\n", upstream_.n_idle());
  auto list = replicas_.snapshot();
  struct Series {
    const char* name;
    const char* type;
    const char* help;
    std::function<double(const Replica&)> read;
  };
  const Series series[] = {
      {"keel_router_replica_requests_total", "counter", "Upstream attempts sent to the replica.",
       [](const Replica& r) { return static_cast<double>(r.n_requests.load()); }},
      {"keel_router_replica_errors_total", "counter", "Failed upstream attempts (connect, timeout, reset, 5xx).",
       [](const Replica& r) { return static_cast<double>(r.n_errors.load()); }},
      {"keel_router_replica_retries_total", "counter", "Retries after a failed attempt on the replica.",
       [](const Replica& r) { return static_cast<double>(r.n_retries.load()); }},
      {"keel_router_replica_resumed_streams_total", "counter", "Streams continued on the replica after another died.",
       [](const Replica& r) { return static_cast<double>(r.n_resumed.load()); }},
      {"keel_router_replica_in_flight", "gauge", "Requests the router has in flight on the replica.",
       [](const Replica& r) { return static_cast<double>(r.in_flight.load()); }},
      {"keel_router_replica_work", "gauge",
       "Work the router has in flight on the replica: summed request costs (uncached prompt tokens + a per-request "
       "constant).",
       [](const Replica& r) { return static_cast<double>(r.work.load()); }},
      {"keel_router_replica_cache_hit_keys_total", "counter", "Estimated cached prefix keys of routed prompts.",
       [](const Replica& r) { return static_cast<double>(r.cache_hit_keys.load()); }},
      {"keel_router_replica_prompt_keys_total", "counter", "Prefix keys of routed prompts.",
       [](const Replica& r) { return static_cast<double>(r.prompt_keys.load()); }},
      {"keel_router_replica_healthy", "gauge", "1 when the last health check passed.",
       [](const Replica& r) { return r.healthy.load() ? 1.0 : 0.0; }},
      {"keel_router_replica_breaker_open", "gauge", "Circuit breaker: 0 closed, 1 open, 2 half-open.",
       [now_ms](const Replica& r) { return static_cast<double>(static_cast<int>(r.breaker.state(now_ms))); }},
      {"keel_router_replica_queued", "gauge", "Queued requests the replica reported (-1 unknown).",
       [](const Replica& r) { return static_cast<double>(r.queued.load()); }},
  };
  for (const auto& s : series) {
    family(s.name, s.type, s.help);
    for (const auto& r : *list) out += fmt::format("{}{{replica=\"{}\"}} {}\n", s.name, r->url, s.read(*r));
  }
  family("keel_router_replica_cache_entries", "gauge", "Prefix keys the router's index holds for the replica.");
  for (const auto& r : *list) {
    out += fmt::format("keel_router_replica_cache_entries{{replica=\"{}\",source=\"exact\"}} {}\n", r->url,
                       index_.n_exact(r->id));
    out += fmt::format("keel_router_replica_cache_entries{{replica=\"{}\",source=\"approx\"}} {}\n", r->url,
                       index_.n_approx(r->id));
  }
  render_peer_metrics(out);
  return out;
}

void RouterService::render_peer_metrics(std::string& out) {
  auto family = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto list = replicas_.snapshot();
  family("keel_router_peer_live", "gauge", "1 while the peer instance's feed (--peer) is live, else 0.");
  for (size_t p = 0; p < peers_.size(); ++p) {
    out += fmt::format("keel_router_peer_live{{peer=\"{}\"}} {}\n", peers_.url(p), peers_.live(p) ? 1 : 0);
  }
  family("keel_router_peer_in_flight", "gauge",
         "The peer instance's own requests in flight on the replica (0 while its feed is down).");
  for (size_t p = 0; p < peers_.size(); ++p) {
    for (const auto& r : *list) {
      out += fmt::format("keel_router_peer_in_flight{{peer=\"{}\",replica=\"{}\"}} {}\n", peers_.url(p), r->url,
                         peers_.in_flight(p, r->url));
    }
  }
  family("keel_router_replica_peer_in_flight", "gauge", "The live peers' requests in flight on the replica, summed.");
  for (const auto& r : *list) {
    out += fmt::format("keel_router_replica_peer_in_flight{{replica=\"{}\"}} {}\n", r->url, r->peer_in_flight.load());
  }
  family("keel_router_peer_synced", "gauge", "1 while every --peer feed is live (decisions use the exact view).");
  out += fmt::format("keel_router_peer_synced {}\n", peers_.all_live() ? 1 : 0);
  family("keel_router_peer_events_dropped_total", "counter", "Peer feed events dropped (malformed, unknown replica).");
  out += fmt::format("keel_router_peer_events_dropped_total {}\n", peer_dropped_.load());
  family("keel_router_peer_feed_subscribers", "gauge", "Peer instances subscribed to this instance's feed.");
  out += fmt::format("keel_router_peer_feed_subscribers {}\n", peer_feed_.n_subscribers());
}

int64_t RouterService::group_in_flight_locked(uint64_t group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? 0 : it->second.in_flight;
}

int64_t RouterService::group_recent_locked(uint64_t group, int64_t since_ms, bool peers) const {
  auto it = groups_.find(group);
  if (it == groups_.end()) return 0;
  return it->second.routed.since(since_ms) + (peers ? it->second.peers_routed.since(since_ms) : 0);
}

int64_t RouterService::group_gap_ms_locked(uint64_t group, int64_t now_ms) const {
  auto it = groups_.find(group);
  if (it == groups_.end() || it->second.rate.last_ms() == 0) return 0;
  return std::max<int64_t>(0, now_ms - it->second.rate.last_ms());
}

void RouterService::add_peer_arrival(uint64_t group) {
  const int64_t now_ms = now_us() / 1000;
  std::lock_guard lock(decision_mu_);
  GroupState& g = groups_[group];
  g.peers_routed.add(now_ms);
  g.rate.add(now_ms);
  // An entry with none of this instance's requests in flight lives until add_group_locked's sweep.
  if (++group_adds_ % kGroupSweepEvery == 0) sweep_groups_locked(now_ms);
}

double RouterService::group_expected_locked(uint64_t group, int64_t now_ms, int64_t window_ms, int64_t recent) const {
  auto it = groups_.find(group);
  if (it == groups_.end()) return 0;
  return it->second.rate.per_ms_before(now_ms, window_ms, recent) * static_cast<double>(window_ms);
}

// How long a group's entry outlives its last arrival when none of its requests is in flight (with
// peers, or with a rate-judged burst bar). Its rate needs 3 x kGroupRateMemoryMs of history; without it
// the entry serves only the burst window's arrivals and the gap to the previous arrival, so it goes after
// 1 s (or those windows, if longer). With 30 s for every group, a peered instance that saw many distinct
// prompt groups (no shared system prompt) kept ~1 KB per group seen in 30 s and swept them all every
// 1,024 additions: at 10k req/s, 300k entries and a sweep of them every 0.1 s under the decision mutex.
int64_t RouterService::group_idle_ms() const {
  const auto& c = config_.cache_aware;
  if (c.burst_rate_factor > 0) return static_cast<int64_t>(3 * kGroupRateMemoryMs);
  return std::max<int64_t>({1000, 2 * c.burst_window_ms, c.near_burst_window_ms});
}

int64_t RouterService::n_groups() const {
  std::lock_guard lock(decision_mu_);
  return static_cast<int64_t>(groups_.size());
}

void RouterService::sweep_groups_locked(int64_t now_ms) {
  const int64_t idle_ms = group_idle_ms();
  std::erase_if(
      groups_, [&](const auto& kv) { return kv.second.in_flight == 0 && now_ms - kv.second.rate.last_ms() > idle_ms; });
}

void RouterService::add_group_locked(uint64_t group, int64_t now_ms) {
  if (++group_adds_ % kGroupSweepEvery == 0) sweep_groups_locked(now_ms);
  GroupState& g = groups_[group];
  ++g.in_flight;
  g.routed.add(now_ms);
  g.rate.add(now_ms);
  group_requests_.fetch_add(1, std::memory_order_relaxed);
}

void RouterService::remove_group(uint64_t group) {
  std::lock_guard lock(decision_mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  // With peers the entry also holds their recent arrivals: the sweep ends it.
  if (--it->second.in_flight == 0 && config_.cache_aware.burst_rate_factor <= 0 && peers_.size() == 0)
    groups_.erase(it);
  group_requests_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace keel::router
