// PeerFeedReader: the answer to GET /v1/router/peer_feed as its bytes arrive, in any split: the HTTP
// head (Beast's response parser, which also undoes the chunked framing) and then the body cut into
// server-sent events (SseReader). Used by the peer links (peer_link.h), which read their socket
// themselves. Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "router/sse_reader.h"

namespace keel::router {

class PeerFeedReader {
 public:
  PeerFeedReader();
  ~PeerFeedReader();
  PeerFeedReader(PeerFeedReader&&) noexcept;
  PeerFeedReader& operator=(PeerFeedReader&&) noexcept;

  // Calls on_event for every whole event in the body so far. False, with `why`, once the answer is not
  // a 200, its head passes 16 KiB, an event passes 64 KiB, the framing is malformed or the stream ended.
  bool feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event, std::string* why);

 private:
  struct Impl;  // peer_feed_reader.cc: the Beast parser and the bytes it has not taken yet
  std::unique_ptr<Impl> impl_;
  SseReader events_;
};

}  // namespace keel::router
