// SseReader: cuts a text/event-stream byte stream into whole events as bytes arrive, keeping each
// event's raw bytes (forwarded as they are) and its parsed `event:` name and `data:` payload. Not
// thread-safe: one per upstream response, used on that call's strand.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace keel::router {

struct SseEvent {
  std::string_view raw;    // the event's bytes including its terminating blank line
  std::string event;       // "" when the event has no `event:` line
  std::string data;        // `data:` lines joined by \n
  bool comment_only = false;  // only `:` comment lines (heartbeats)
};

class SseReader {
 public:
  // Appends bytes and calls on_event for every complete event; returns false (and stops) if the
  // buffered partial event grows past max_event_bytes.
  bool feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event,
            size_t max_event_bytes = 8 << 20);
  size_t n_buffered() const { return buf_.size(); }

 private:
  std::string buf_;
};

}  // namespace keel::router
