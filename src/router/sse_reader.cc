#include "router/sse_reader.h"

namespace keel::router {

namespace {

// End of the first event in `s` whose blank line starts at `from` or later (just past that blank
// line), or npos.
size_t event_end(std::string_view s, size_t from) {
  for (size_t i = s.find('\n', from); i != std::string_view::npos; i = s.find('\n', i + 1)) {
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
  // The buffered partial event was scanned up to its end last time without a blank line in it; only a
  // terminator that straddles the old end ("\n" | "\n\r" before it) can start before it, so the scan
  // resumes 2 bytes back. Rescanning the whole partial event on every read made an event that arrives
  // in many small reads cost quadratic time (8 MiB in 1 KiB reads: ~32 GB scanned).
  size_t from = buf_.size() >= 2 ? buf_.size() - 2 : 0;
  buf_.append(bytes);
  size_t start = 0;
  while (true) {
    const std::string_view rest = std::string_view(buf_).substr(start);
    size_t end = event_end(rest, from > start ? from - start : 0);
    if (end == std::string_view::npos) break;
    on_event(parse_event(rest.substr(0, end)));
    start += end;
  }
  buf_.erase(0, start);
  return buf_.size() <= max_event_bytes;
}

}  // namespace keel::router
