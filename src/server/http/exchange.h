// One request/response exchange on a connection, as a route handler sees it. The handler answers
// once with respond(), or opens a chunked stream (begin_stream, push..., end_stream). Every method is
// thread-safe and keeps call order per calling thread. respond, begin_stream, push, end_stream and
// on_disconnect run at once when the caller already runs on the connection's strand and none of the
// exchange's earlier calls is still queued; otherwise they are posted there. Running at once saves a
// handler round per call (a proxied answer: the upstream read's handler writes it). They become no-ops
// once the exchange has ended or the connection is gone.
// Implemented in http/connection.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "server/http/message.h"

namespace keel::server::http {

class Exchange {
 public:
  virtual ~Exchange() = default;

  // Sends a complete response and ends the exchange.
  virtual void respond(HttpResponse response) = 0;

  // Sends the status line and headers of a chunked response (Transfer-Encoding: chunked).
  virtual void begin_stream(int status, std::string content_type, Headers headers) = 0;
  // Appends body bytes. Pending bytes are coalesced into one write; a client that lets more than
  // ServerConfig::max_stream_buffer_bytes pile up is disconnected (which fires the disconnect callback).
  virtual void push(std::string bytes) = 0;
  // Writes the last chunk and ends the exchange.
  virtual void end_stream() = 0;

  // Runs `fn` on the connection's strand (serialised with the writes above); dropped if the
  // connection is gone. Lets a producer on another thread do its formatting off its own thread.
  virtual void post(std::function<void()> fn) = 0;
  // Runs `fn` now when the caller already runs on the connection's strand (with one io thread: on that
  // thread), else posts it as post() does.
  virtual void dispatch(std::function<void()> fn) { post(std::move(fn)); }

  // Registers the callback run (once, on the strand) when the client disconnects before the exchange
  // ends: read EOF/reset while the request is in flight, a failed write, or a stream buffer overflow.
  // If the client is already gone, it runs at once (posted). It never runs inside one of the calls
  // above (a caller may hold a lock the callback takes): a disconnect those find is reported posted.
  virtual void on_disconnect(std::function<void()> fn) = 0;
};

using ExchangePtr = std::shared_ptr<Exchange>;

}  // namespace keel::server::http
