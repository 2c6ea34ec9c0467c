// PeerLink: one long-lived `GET /v1/router/peer_feed` per `--peer` (peer_feed.h has the stream), whose
// events go to the service's PeerView and its route events' groups to the burst guard. The link reads
// its socket itself (non-blocking reads into a PeerFeedReader: Beast's response parser, then SSE) instead of
// through the upstream client, so that besides the reads its socket's readiness triggers on the io
// thread, drain() can read what has arrived right before a decision, on the deciding thread: a peer's
// route event that reached the kernel while this instance's io thread ran its own burst handlers is in
// the very next decision, not after them (docs/performance.md, Session 12). A lost connection, a
// non-200 answer, a stream silent past kPeerIdleTimeoutMs (the peer sends a heartbeat each second),
// malformed framing or an oversized event drops the peer's contribution at once (decisions fall back
// to the --instance estimate) and reconnects after kPeerReconnectMs; malformed events are dropped one
// by one. An event about a replica URL this instance does not route to (another spelling of the same
// replica, or a replica set that differs between the instances) is dropped too, and the first few
// such URLs are logged as a warning once each: the instances' views then disagree, which the metric
// alone (keel_router_peer_events_dropped_total) would leave to be noticed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "router/peer_feed_reader.h"

namespace keel::router {

class RouterService;

class PeerLink : public std::enable_shared_from_this<PeerLink> {
 public:
  PeerLink(RouterService& svc, size_t peer);
  ~PeerLink();
  // Connects (and reconnects until stop()) on the upstream client's io_context.
  void start();
  // Reads and applies whatever the peer has sent so far; any thread, not under the decision mutex
  // (applying takes it). One recv() when nothing waits.
  void drain();
  // No reconnect after this; closes the connection on its io_context.
  void stop();

  struct Conn;  // peer_link.cc

 private:
  friend struct Conn;
  // Reads until the socket has nothing more; false when the connection failed (why set).
  bool read_available(std::string* why);
  bool feed(std::string_view bytes, std::string* why);
  // A kUnknownReplica event's data: warns once per replica URL (at most kMaxWarnedUrls). Under mu_.
  void warn_unknown_replica(std::string_view data);
  void connect();
  void fail(uint64_t generation, const std::string& why);
  void arm_read(uint64_t generation);
  void check_idle(uint64_t generation);

  RouterService& svc_;
  const size_t peer_;
  std::shared_ptr<Conn> conn_;  // the io objects (socket, resolver, timer), on one strand
  std::mutex mu_;               // the reads and the parse state below
  int fd_ = -1;                 // guarded by mu_: the open connection's socket, -1 between connections
  uint64_t generation_ = 0;     // guarded by mu_: a new one per connection; stale handlers do nothing
  PeerFeedReader reader_;       // guarded by mu_
  std::unordered_set<std::string> warned_urls_;  // guarded by mu_
  std::atomic<int64_t> last_data_ms_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace keel::router
