#include "router/replica.h"

#include <algorithm>
#include <charconv>

namespace keel::router {

Result<Endpoint> parse_replica_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return make_error(ErrorCode::kInvalidArgument, "replica URL '{}' must start with http://", url);
  }
  std::string_view rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('/'));
  auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return make_error(ErrorCode::kInvalidArgument, "replica URL '{}' needs host:port", url);
  }
  std::string_view port_text = rest.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port == 0 || port > 65535) {
    return make_error(ErrorCode::kInvalidArgument, "replica URL '{}' has a bad port", url);
  }
  return Endpoint{.host = std::string(rest.substr(0, colon)), .port = static_cast<uint16_t>(port)};
}

Replica::Replica(ReplicaId id_, std::string url_, Endpoint endpoint_, ReplicaLabels labels_, BreakerConfig breaker_config)
    : id(id_), url(std::move(url_)), endpoint(std::move(endpoint_)), labels(std::move(labels_)), breaker(breaker_config) {}

int64_t Replica::load(int64_t instances) const {
  const int64_t ours = in_flight.load(std::memory_order_relaxed);
  const int64_t polled = ours + external.load(std::memory_order_relaxed);
  const int64_t push = pushed.load(std::memory_order_relaxed);
  if (push < 0) return polled;
  // Sent since the push are not in it yet; finished since, it still counts (until the next push, ms).
  const int64_t sent_since = std::max<int64_t>(ours - pushed_ours.load(std::memory_order_relaxed), 0);
  return std::max(polled, push + std::max<int64_t>(instances, 1) * sent_since);
}

int64_t Replica::load_synced() const {
  return in_flight.load(std::memory_order_relaxed) + peer_in_flight.load(std::memory_order_relaxed) +
         external_unsent.load(std::memory_order_relaxed);
}

void Replica::set_pushed(int64_t count) {
  pushed_ours.store(in_flight.load(std::memory_order_relaxed), std::memory_order_relaxed);
  pushed.store(std::max<int64_t>(count, 0), std::memory_order_relaxed);
}

void Replica::set_reported(int64_t queued_now, int64_t running_now, int64_t ours, int64_t peers) {
  queued.store(queued_now, std::memory_order_relaxed);
  running.store(running_now, std::memory_order_relaxed);
  const int64_t reported = std::max<int64_t>(queued_now, 0) + std::max<int64_t>(running_now, 0);
  const int64_t excess = queued_now < 0 ? 0 : std::max<int64_t>(reported - ours, 0);
  external.store(std::min(excess, excess_prev.exchange(excess, std::memory_order_relaxed)), std::memory_order_relaxed);
  const int64_t unsent = queued_now < 0 ? 0 : std::max<int64_t>(reported - ours - std::max<int64_t>(peers, 0), 0);
  external_unsent.store(std::min(unsent, unsent_prev.exchange(unsent, std::memory_order_relaxed)),
                        std::memory_order_relaxed);
}

void Replica::set_kv(int64_t used, int64_t total, int64_t done_at_send) {
  kv_used.store(used, std::memory_order_relaxed);
  kv_total.store(total, std::memory_order_relaxed);
  routed_slots_polled.store(done_at_send, std::memory_order_relaxed);
}

int64_t Replica::free_cache(int64_t fallback_entries) const {
  int64_t total = kv_total.load(std::memory_order_relaxed);
  int64_t used = kv_used.load(std::memory_order_relaxed);
  if (total < 0 || used < 0) return -fallback_entries;
  const int64_t unpolled = routed_slots.load(std::memory_order_relaxed) - routed_slots_polled.load(std::memory_order_relaxed);
  return total - used - std::max<int64_t>(unpolled, 0);
}

Result<ReplicaPtr> ReplicaSet::add(std::string_view url_in, ReplicaLabels labels) {
  std::string url(url_in);
  while (!url.empty() && url.back() == '/') url.pop_back();
  KEEL_ASSIGN_OR_RETURN(Endpoint ep, parse_replica_url(url));
  std::lock_guard lock(mu_);
  for (const auto& r : *list_) {
    if (r->url == url) return make_error(ErrorCode::kInvalidArgument, "replica '{}' is already registered", url);
  }
  auto replica = std::make_shared<Replica>(next_id_++, url, std::move(ep), std::move(labels), breaker_);
  auto next = std::make_shared<ReplicaList>(*list_);
  next->push_back(replica);
  list_ = std::move(next);
  return replica;
}

Status ReplicaSet::drain(std::string_view url) {
  auto list = snapshot();
  for (const auto& r : *list) {
    if (r->url == url) {
      r->state.store(ReplicaState::kDraining);
      return {};
    }
  }
  return make_error(ErrorCode::kNotFound, "no replica '{}'", url);
}

Result<ReplicaPtr> ReplicaSet::remove(std::string_view url) {
  std::lock_guard lock(mu_);
  auto next = std::make_shared<ReplicaList>();
  ReplicaPtr removed;
  for (const auto& r : *list_) {
    if (r->url == url) {
      removed = r;
    } else {
      next->push_back(r);
    }
  }
  if (!removed) return make_error(ErrorCode::kNotFound, "no replica '{}'", url);
  removed->removed.store(true);
  list_ = std::move(next);
  return removed;
}

std::shared_ptr<const ReplicaList> ReplicaSet::snapshot() const {
  std::lock_guard lock(mu_);
  return list_;
}

}  // namespace keel::router
