#include "router/peer_view.h"

#include "router/peer_event.h"

namespace keel::router {

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
  PeerFigures f;
  const PeerParse parsed = parse_peer_figures(ev.data, &f);  // outside the lock
  if (parsed == PeerParse::kNotObject) return PeerApply::kMalformed;
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
  if (parsed != PeerParse::kOk || (f.has_group && ev.event != "route")) return PeerApply::kMalformed;
  for (const auto& r : replicas) {
    if (r->url != f.url) continue;
    p.at[r->url] = Figures{.in_flight = f.in_flight, .work = f.work};
    resum(*r);
    *group = f.group;
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
