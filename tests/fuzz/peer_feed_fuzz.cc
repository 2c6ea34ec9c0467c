// libFuzzer target for the receive side of a router's peer link (peer_link.h): the bytes of a peer's
// answer to GET /v1/router/peer_feed go through PeerFeedReader (Beast's response parser, then SseReader)
// and PeerView::apply. The first byte picks where the stream is cut into two reads. Any bytes must end
// in a state (never a crash, an out-of-bounds read or a leak), and the figures PeerView keeps stay in
// their bounds. Each event's data also goes through both figure readers (peer_event.h): the in-place
// scan must accept only what the JSON parse reads to the same figures. Runs: scripts/fuzz.sh
// peer_feed_fuzz <seconds>.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "router/peer_event.h"
#include "router/peer_feed_reader.h"
#include "router/peer_view.h"
#include "router/replica.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keel::router;
  if (size == 0) return 0;
  const std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t cut = all.empty() ? 0 : data[0] % (all.size() + 1);
  ReplicaList replicas;
  for (uint16_t port : {8001, 8002}) {
    replicas.push_back(std::make_shared<Replica>(port, "http://127.0.0.1:" + std::to_string(port),
                                                 Endpoint{.host = "127.0.0.1", .port = port}, ReplicaLabels{},
                                                 BreakerConfig{}));
  }
  PeerView view({"http://127.0.0.1:9000"});
  PeerFeedReader reader;
  auto on_event = [&](const SseEvent& ev) {
    PeerFigures scanned, json;
    const PeerParse parsed = parse_peer_figures_json(ev.data, &json);
    if (scan_peer_figures(ev.data, &scanned) &&
        (parsed != PeerParse::kOk || scanned.url != json.url || scanned.in_flight != json.in_flight ||
         scanned.work != json.work || scanned.has_group != json.has_group || scanned.group != json.group)) {
      std::abort();
    }
    uint64_t group = 0;
    (void)view.apply(0, ev, replicas, &group);
  };
  std::string why;
  for (std::string_view part : {all.substr(0, cut), all.substr(cut)}) {
    if (!reader.feed(part, on_event, &why)) break;
  }
  for (const auto& r : replicas) {
    const int64_t n = r->peer_in_flight.load();
    const int64_t w = r->peer_work.load();
    if (n < 0 || n > (int64_t{1} << 40) || w < 0 || w > (int64_t{1} << 56)) std::abort();
    if (!view.live(0) && (n != 0 || w != 0)) std::abort();
  }
  return 0;
}
