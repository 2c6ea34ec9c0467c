// One long-lived GET /v1/router/peer_feed per `--peer` (peer_feed.h has the stream): its events go to
// the service's PeerView (the peers' in-flight count and work per replica) and its route events' groups
// to the burst guard (RouterService::add_peer_arrival). A lost connection, a non-200 answer, a stream
// silent past kPeerIdleTimeoutMs (the peer sends a heartbeat each second) or an oversized event drops
// the peer's contribution at once (decisions fall back to the --instance estimate) and reconnects after
// kReconnectMs; malformed events are dropped one by one. Runs on the upstream client's threads.
#include "base/log.h"
#include "router/service.h"
#include "router/sse_reader.h"

namespace keel::router {

namespace {

constexpr int64_t kReconnectMs = 100;
constexpr int32_t kPeerIdleTimeoutMs = 3000;
constexpr size_t kMaxPeerEventBytes = 64 << 10;

struct LinkState {
  RouterService* svc;
  size_t peer;
  SseReader reader;
  int status = 0;
  bool ended = false;
  std::shared_ptr<UpstreamCall> call;
};

void end_link(LinkState& st, const std::string& why) {
  if (st.ended) return;
  st.ended = true;
  if (st.call) st.call->cancel();
  RouterService& svc = *st.svc;
  const bool was_live = svc.peers().live(st.peer);
  svc.peers().drop(st.peer, *svc.replicas().snapshot());
  if (was_live) KEEL_LOG_WARN("peer {} lost: {}", svc.peers().url(st.peer), why);
  if (svc.stopping()) return;
  svc.upstream().run_after(kReconnectMs, [s = st.svc, p = st.peer] { run_peer_link(*s, p); });
}

void apply_link_event(LinkState& st, const ReplicaList& list, const SseEvent& ev) {
  RouterService& s = *st.svc;
  uint64_t group = 0;
  const PeerApply a = s.peers().apply(st.peer, ev, list, &group);
  if (a == PeerApply::kApplied && group != 0) s.add_peer_arrival(group);
  if (a == PeerApply::kApplied && ev.event == "reset") KEEL_LOG_INFO("peer {} live", s.peers().url(st.peer));
  if (a == PeerApply::kMalformed || a == PeerApply::kUnknownReplica) s.count_peer_dropped();
}

void on_link_data(LinkState& st, std::string_view bytes) {
  if (st.ended) return;
  if (st.status != 200) return end_link(st, "answered " + std::to_string(st.status));
  auto list = st.svc->replicas().snapshot();
  if (!st.reader.feed(
          bytes, [&](const SseEvent& ev) { apply_link_event(st, *list, ev); }, kMaxPeerEventBytes)) {
    end_link(st, "oversized event");
  }
}

}  // namespace

void run_peer_link(RouterService& svc, size_t peer) {
  if (svc.stopping()) return;
  auto st = std::make_shared<LinkState>(LinkState{.svc = &svc, .peer = peer});
  UpstreamRequest req{.method = "GET",
                      .target = "/v1/router/peer_feed",
                      .first_byte_timeout_ms = kPeerIdleTimeoutMs,
                      .idle_timeout_ms = kPeerIdleTimeoutMs};
  st->call = svc.upstream().send(
      svc.peer_endpoint(peer), std::move(req),
      {.on_head = [st](int status, const HeaderList&) { st->status = status; },
       .on_data = [st](std::string_view bytes) { on_link_data(*st, bytes); },
       .on_done = [st](UpstreamFailure,
                       const std::string& message) { end_link(*st, message.empty() ? "closed" : message); }});
}

}  // namespace keel::router
