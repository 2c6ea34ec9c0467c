#include "router/sse_reader.h"

namespace keel::router {

namespace {

// End of the first event in `s` (just past its blank line), or npos.
size_t event_end(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n') continue;
    if (i + 1 < s.size() && s[i + 1] == '\n') return i + 2;
    if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

SseEvent parse_event(std::string_view raw) {
  SseEvent ev{.raw = raw};
  bool any_field = false;
  size_t at = 0;
  while (at < raw.size()) {
    size_t nl = raw.find('\n', at);
    if (nl == std::string_view::npos) nl = raw.size();
    std::string_view line = raw.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    at = nl + 1;
    if (line.empty() || line.front() == ':') continue;
    any_field = true;
    auto colon = line.find(':');
    std::string_view name = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name == "data") {
      if (!ev.data.empty()) ev.data += '\n';
      ev.data += value;
    } else if (name == "event") {
      ev.event = std::string(value);
    }
  }
  ev.comment_only = !any_field;
  return ev;
}

}  // namespace

bool SseReader::feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event,
                     size_t max_event_bytes) {
  buf_.append(bytes);
  size_t start = 0;
  while (true) {
    size_t end = event_end(std::string_view(buf_).substr(start));
    if (end == std::string_view::npos) break;
    on_event(parse_event(std::string_view(buf_).substr(start, end)));
    start += end;
  }
  buf_.erase(0, start);
  return buf_.size() <= max_event_bytes;
}

}  // namespace keel::router
