#include "router/peer_event.h"

#include <nlohmann/json.hpp>

namespace keel::router {

namespace {

// Reads `literal` at data[*pos].
bool take(std::string_view data, size_t* pos, std::string_view literal) {
  if (data.substr(*pos, literal.size()) != literal) return false;
  *pos += literal.size();
  return true;
}

// A JSON integer without sign or leading zero and of at most `max_digits` digits (so it fits, and
// the JSON parser reads it as the same unsigned integer).
bool take_digits(std::string_view data, size_t* pos, size_t max_digits, uint64_t* out) {
  const size_t start = *pos;
  uint64_t v = 0;
  while (*pos < data.size() && data[*pos] >= '0' && data[*pos] <= '9' && *pos - start < max_digits) {
    v = v * 10 + static_cast<uint64_t>(data[*pos] - '0');
    ++*pos;
  }
  const size_t n = *pos - start;
  if (n == 0 || (n > 1 && data[start] == '0')) return false;
  if (*pos < data.size() && data[*pos] >= '0' && data[*pos] <= '9') return false;  // more digits than allowed
  *out = v;
  return true;
}

bool read_count(const nlohmann::json& j, const char* key, int64_t limit, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return false;
  const auto v = it->get<int64_t>();
  if (v < 0 || v > limit) return false;
  *out = v;
  return true;
}

}  // namespace

bool scan_peer_figures(std::string_view data, PeerFigures* out) {
  size_t pos = 0;
  if (!take(data, &pos, R"({"url":")")) return false;
  const size_t url_start = pos;
  while (pos < data.size() && data[pos] != '"') {
    const auto c = static_cast<unsigned char>(data[pos]);
    if (c < 0x20 || c > 0x7e || c == '\\') return false;  // escapes, control or non-ASCII bytes: the JSON parse
    ++pos;
  }
  if (pos == data.size()) return false;
  const std::string_view url = data.substr(url_start, pos - url_start);
  ++pos;
  uint64_t in_flight = 0, work = 0, group = 0;
  if (!take(data, &pos, R"(,"in_flight":)") || !take_digits(data, &pos, 18, &in_flight) ||
      !take(data, &pos, R"(,"work":)") || !take_digits(data, &pos, 18, &work)) {
    return false;
  }
  const bool has_group = take(data, &pos, R"(,"group":)");
  if (has_group && !take_digits(data, &pos, 19, &group)) return false;
  if (!take(data, &pos, "}") || pos != data.size()) return false;
  if (in_flight > static_cast<uint64_t>(kMaxPeerInFlight) || work > static_cast<uint64_t>(kMaxPeerWork)) return false;
  out->url = url;
  out->url_storage.clear();
  out->in_flight = static_cast<int64_t>(in_flight);
  out->work = static_cast<int64_t>(work);
  out->has_group = has_group;
  out->group = group;
  return true;
}

PeerParse parse_peer_figures_json(std::string_view data, PeerFigures* out) {
  const auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return PeerParse::kNotObject;
  auto url = j.find("url");
  if (url == j.end() || !url->is_string() || !read_count(j, "in_flight", kMaxPeerInFlight, &out->in_flight) ||
      !read_count(j, "work", kMaxPeerWork, &out->work)) {
    return PeerParse::kBadFields;
  }
  out->has_group = false;
  out->group = 0;
  if (auto it = j.find("group"); it != j.end()) {
    if (!it->is_number_unsigned()) return PeerParse::kBadFields;
    out->has_group = true;
    out->group = it->get<uint64_t>();
  }
  out->url_storage = url->get<std::string>();
  out->url = out->url_storage;
  return PeerParse::kOk;
}

PeerParse parse_peer_figures(std::string_view data, PeerFigures* out) {
  return scan_peer_figures(data, out) ? PeerParse::kOk : parse_peer_figures_json(data, out);
}

}  // namespace keel::router
