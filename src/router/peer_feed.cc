#include "router/peer_feed.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "router/json_string.h"
#include "server/http/sse.h"

namespace keel::router {

namespace {

// `event: <event>` and `data: {"url":...,"in_flight":n,"work":w[,"group":g]}`, appended to out.
void append_event(std::string& out, std::string_view event, const Replica& r, const uint64_t* group) {
  out += "event: ";
  out += event;
  out += "\ndata: {\"url\":";
  append_json_string(out, r.url);
  fmt::format_to(std::back_inserter(out), R"(,"in_flight":{},"work":{})", r.in_flight.load(std::memory_order_relaxed),
                 r.work.load(std::memory_order_relaxed));
  if (group != nullptr) fmt::format_to(std::back_inserter(out), R"(,"group":{})", *group);
  out += "}\n\n";
}

}  // namespace

void PeerFeed::subscribe(const server::http::ExchangePtr& ex, const ReplicaList& replicas) {
  auto gone = std::make_shared<std::atomic<bool>>(false);
  ex->on_disconnect([gone] { gone->store(true); });
  std::lock_guard lock(mu_);
  if (closed_) {
    ex->respond(server::http::HttpResponse{
        .status = 503,
        .body =
            R"({"error":{"message":"the router is shutting down","type":"service_unavailable","param":null,"code":503}})"});
    return;
  }
  std::erase_if(subs_, [](const Subscriber& s) { return s.gone->load(); });  // count the live ones only
  n_subs_.store(static_cast<int64_t>(subs_.size()), std::memory_order_relaxed);
  if (subs_.size() >= kMaxSubscribers) {  // each one costs a push per decision
    ex->respond(server::http::HttpResponse{
        .status = 503,
        .headers = {{"Retry-After", "1"}},
        .body =
            R"({"error":{"message":"too many peer feed subscribers","type":"service_unavailable","param":null,"code":503}})"});
    return;
  }
  n_subs_.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before the snapshot reads (PeerFeed::active)
  // The head and the snapshot below are queued on this connection before any flush can write an event
  // (the exchange keeps call order; it runs them at once when this is its strand, server/http/exchange.h).
  ex->begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  // Events pending for the others come first (the new subscriber's snapshot already holds them).
  if (!pending_.empty()) {
    for (const auto& s : subs_) s.exchange->push(pending_);
    pending_.clear();
  }
  std::string bytes = server::http::sse_event("{}", "reset");
  for (const auto& r : replicas) append_event(bytes, "replica", *r, nullptr);
  ex->push(std::move(bytes));
  subs_.push_back(Subscriber{.exchange = ex, .gone = std::move(gone)});
}

void PeerFeed::emit(const char* event, const Replica& r, const uint64_t* group, bool urgent) {
  server::http::ExchangePtr target;
  {
    std::lock_guard lock(mu_);
    if (subs_.empty()) return;
    append_event(pending_, event, r, group);
    if (flush_posted_ && !urgent) return;  // the flush on its way takes this event too
    target = flush_target();
    if (!target) return;
    flush_posted_ = true;
  }
  // A post to a connection that closes before it runs is dropped; the heartbeat then posts another
  // (within a second). A dispatched flush that runs at once takes what a posted one would have; that
  // one then finds nothing or later events.
  if (urgent) {
    target->dispatch([this] { flush(); });
  } else {
    target->post([this] { flush(); });
  }
}

server::http::ExchangePtr PeerFeed::flush_target() const {
  auto live = std::find_if(subs_.begin(), subs_.end(), [](const Subscriber& s) { return !s.gone->load(); });
  return live == subs_.end() ? nullptr : live->exchange;
}

void PeerFeed::flush() {
  std::lock_guard lock(mu_);
  flush_posted_ = false;
  if (pending_.empty()) return;
  for (const auto& s : subs_) {
    if (!s.gone->load(std::memory_order_relaxed)) s.exchange->push(pending_);
  }
  pending_.clear();
}

void PeerFeed::heartbeat() {
  server::http::ExchangePtr target;
  {
    std::lock_guard lock(mu_);
    std::erase_if(subs_, [](const Subscriber& s) { return s.gone->load(); });
    n_subs_.store(static_cast<int64_t>(subs_.size()), std::memory_order_relaxed);
    for (const auto& s : subs_) s.exchange->push(":\n\n");
    // Events still pending: the flush posted for them went to a connection that closed first. They go
    // out through a flush like any other, so that every subscriber gets its events in the order made.
    if (!pending_.empty()) {
      target = flush_target();
      flush_posted_ = target != nullptr;
    }
  }
  if (target) target->post([this] { flush(); });
}

void PeerFeed::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (const auto& s : subs_) {
    if (!pending_.empty()) s.exchange->push(pending_);
    s.exchange->end_stream();
  }
  pending_.clear();
  subs_.clear();
  n_subs_.store(0, std::memory_order_relaxed);
}

}  // namespace keel::router
