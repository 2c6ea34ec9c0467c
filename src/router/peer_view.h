// PeerView: what the other router instances (`keel router --peer URL`, repeatable) told this one about
// their own requests, from their GET /v1/router/peer_feed streams (peer_feed.h has the format): per
// peer, whether its feed is live and its in-flight count and work per replica URL. Each applied event
// sets the replicas' peer_in_flight / peer_work to the sum over the live peers (absolute values, so a
// lost event is healed by the next). Called from the peer links (peer_link.h: on the upstream client's
// threads, and on a deciding thread right before its decision) and read by decisions on any io
// thread: every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "router/replica.h"
#include "router/sse_reader.h"

namespace keel::router {

enum class PeerApply {
  kApplied,         // a reset, or a replica's new figures (route: `group` set when it names one)
  kIgnored,         // a heartbeat, or an event before the feed's reset
  kMalformed,       // dropped: not JSON, a missing/negative/oversized field, an unknown event name
  kUnknownReplica,  // dropped: a replica URL this instance does not route to
};

class PeerView {
 public:
  explicit PeerView(std::vector<std::string> peer_urls);

  size_t size() const { return peers_.size(); }
  const std::string& url(size_t peer) const { return peers_[peer].url; }
  // Every configured peer's feed is live (false without peers): decisions then take the exact view.
  bool all_live() const {
    return !peers_.empty() && n_live_.load(std::memory_order_acquire) == static_cast<int64_t>(peers_.size());
  }
  bool live(size_t peer) const;
  // Applies one event of peer `peer`'s feed to `replicas`. `group`: a route event's prompt group
  // (0 = none), for the burst guard.
  PeerApply apply(size_t peer, const SseEvent& ev, const ReplicaList& replicas, uint64_t* group);
  // The peer's feed is lost: its contributions are taken off at once and it is down until its next reset.
  void drop(size_t peer, const ReplicaList& replicas);
  // The peer's in-flight count on the replica at `replica_url` (0 if none or down), for tests and /metrics.
  int64_t in_flight(size_t peer, const std::string& replica_url) const;

 private:
  struct Figures {
    int64_t in_flight = 0;
    int64_t work = 0;
  };
  struct Peer {
    std::string url;
    bool live = false;
    std::unordered_map<std::string, Figures> at;  // replica URL -> its figures (only URLs this instance routes to)
  };
  // Sets the replica's peer sums from every live peer (under mu_).
  void resum(Replica& r) const;

  mutable std::mutex mu_;
  std::vector<Peer> peers_;
  std::atomic<int64_t> n_live_{0};
};

}  // namespace keel::router
