// The figures a peer feed's replica/route/done event carries (peer_feed.h has the format):
// {"url": string, "in_flight": integer in [0, 2^40], "work": integer in [0, 2^56], "group": unsigned
// integer, route events only}. parse_peer_figures reads them on every peer link's drain, which runs
// right before each routing decision: the shape peer_feed.cc writes is scanned in place
// (scan_peer_figures: no allocation, no JSON tree), and anything else (whitespace, other key orders,
// escapes, extra keys: another writer's valid JSON) is parsed as JSON (parse_peer_figures_json,
// nlohmann). The scan accepts only strings the JSON parse reads to the same figures, so both give the
// same answer for every input (tests/unit/router/peer_event_test.cc, tests/fuzz/peer_feed_fuzz.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keel::router {

inline constexpr int64_t kMaxPeerInFlight = int64_t{1} << 40;
inline constexpr int64_t kMaxPeerWork = int64_t{1} << 56;

struct PeerFigures {
  PeerFigures() = default;
  PeerFigures(const PeerFigures&) = delete;  // url may point into url_storage: a copy would dangle
  PeerFigures& operator=(const PeerFigures&) = delete;

  std::string_view url;  // into the parsed data (scan) or into url_storage (JSON)
  std::string url_storage;
  int64_t in_flight = 0;
  int64_t work = 0;
  bool has_group = false;
  uint64_t group = 0;
};

enum class PeerParse {
  kOk,         // the figures are in `out`
  kNotObject,  // not JSON, or JSON that is not an object
  kBadFields,  // an object without a string url, in-range counts, or with a group that is not unsigned
};

// The exact bytes peer_feed.cc writes for a URL of printable ASCII without quotes or backslashes:
// true with the figures, false for anything else (which may still be valid: parse_peer_figures).
bool scan_peer_figures(std::string_view data, PeerFigures* out);
// Any JSON text.
PeerParse parse_peer_figures_json(std::string_view data, PeerFigures* out);
// The scan, else the JSON parse.
PeerParse parse_peer_figures(std::string_view data, PeerFigures* out);

}  // namespace keel::router
