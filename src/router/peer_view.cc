#include "router/peer_view.h"

#include <nlohmann/json.hpp>

namespace keel::router {

using nlohmann::json;

namespace {

constexpr int64_t kMaxInFlight = int64_t{1} << 40;
constexpr int64_t kMaxWork = int64_t{1} << 56;

bool read_count(const json& j, const char* key, int64_t limit, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  const auto v = it->get<int64_t>();
  if (v < 0 || v > limit) return false;
  *out = v;
  return true;
}

}  // namespace

PeerView::PeerView(std::vector<std::string> peer_urls) {
  for (auto& u : peer_urls) peers_.push_back(Peer{.url = std::move(u)});
}

bool PeerView::live(size_t peer) const {
  std::lock_guard lock(mu_);
  return peers_[peer].live;
}

int64_t PeerView::in_flight(size_t peer, const std::string& replica_url) const {
  std::lock_guard lock(mu_);
  const Peer& p = peers_[peer];
  auto it = p.at.find(replica_url);
  return p.live && it != p.at.end() ? it->second.in_flight : 0;
}

void PeerView::resum(Replica& r) const {
  int64_t n = 0, work = 0;
  for (const Peer& p : peers_) {
    if (!p.live) continue;
    auto it = p.at.find(r.url);
    if (it == p.at.end()) continue;
    n += it->second.in_flight;
    work += it->second.work;
  }
  r.peer_in_flight.store(n, std::memory_order_relaxed);
  r.peer_work.store(work, std::memory_order_relaxed);
}

PeerApply PeerView::apply(size_t peer, const SseEvent& ev, const ReplicaList& replicas, uint64_t* group) {
  *group = 0;
  if (ev.comment_only) return PeerApply::kIgnored;
  const json j = json::parse(ev.data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return PeerApply::kMalformed;
  std::lock_guard lock(mu_);
  Peer& p = peers_[peer];
  if (ev.event == "reset") {
    p.at.clear();
    if (!p.live) n_live_.fetch_add(1, std::memory_order_acq_rel);
    p.live = true;
    for (const auto& r : replicas) resum(*r);
    return PeerApply::kApplied;
  }
  if (ev.event != "replica" && ev.event != "route" && ev.event != "done") return PeerApply::kMalformed;
  if (!p.live) return PeerApply::kIgnored;
  auto url = j.find("url");
  Figures f;
  if (url == j.end() || !url->is_string() || !read_count(j, "in_flight", kMaxInFlight, &f.in_flight) ||
      !read_count(j, "work", kMaxWork, &f.work)) {
    return PeerApply::kMalformed;
  }
  uint64_t g = 0;
  if (auto it = j.find("group"); it != j.end()) {
    if (ev.event != "route" || !it->is_number_unsigned()) return PeerApply::kMalformed;
    g = it->get<uint64_t>();
  }
  const auto& u = url->get_ref<const std::string&>();
  for (const auto& r : replicas) {
    if (r->url != u) continue;
    p.at[u] = f;
    resum(*r);
    *group = g;
    return PeerApply::kApplied;
  }
  return PeerApply::kUnknownReplica;
}

void PeerView::drop(size_t peer, const ReplicaList& replicas) {
  std::lock_guard lock(mu_);
  Peer& p = peers_[peer];
  if (p.live) n_live_.fetch_sub(1, std::memory_order_acq_rel);
  p.live = false;
  p.at.clear();
  for (const auto& r : replicas) resum(*r);
}

}  // namespace keel::router
