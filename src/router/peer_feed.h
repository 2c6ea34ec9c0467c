// PeerFeed: `GET /v1/router/peer_feed`, this router instance's own decisions as server-sent events for
// the other instances on the same replicas (their `--peer`, peer_link.cc). On connect `event: reset`
// ({}), then one `event: replica` per replica with this instance's in-flight count and work there
// ({"url", "in_flight", "work"}); then `event: route` ({"url", "in_flight", "work", "group"}: the
// prompt group's key, policy.h kGroupTokens; 0 = none) after each routing decision and `event: done`
// ({"url", "in_flight", "work"}) after each completion or failure of its own requests, and a `:`
// heartbeat each second. Values are absolute: a lost or reordered event is healed by the next.
// Events are formatted under one mutex that also reads the figures, so a subscriber's last event per
// replica always carries the current value; they are appended to one pending buffer that a single
// flush hands to every subscriber (one write for all the events a busy io thread made before the
// flush ran, not one per event). The flush runs on a subscriber's connection strand. A route event's
// runs at once when the deciding thread already runs there (one io thread, the default layout: the
// event leaves within its decision's handler), else posted; a completion's is posted. Posted, a
// decision's event waited behind every handler queued before it, the rest of a burst's decisions:
// 0.1-0.9 ms on the device (docs/performance.md Session 12), longer than the gaps between two
// instances' decisions. Every flush takes the whole pending buffer under the mutex and writes it on
// the target's strand (the other subscribers' writes queued from there in that order), so every
// subscriber gets the events in the order made. Any thread; the no-subscriber path is a fence and
// one atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "router/replica.h"
#include "server/http/exchange.h"

namespace keel::router {

class PeerFeed {
 public:
  // Subscribers at most (each costs a push per decision); more are answered 503. A deployment's peers
  // are a handful of instances.
  static constexpr size_t kMaxSubscribers = 64;
  // Starts a subscriber's stream with the reset and the snapshot of `replicas`.
  void subscribe(const server::http::ExchangePtr& ex, const ReplicaList& replicas);
  // After a decision (under the decision mutex, the request already counted) and after a completion.
  void on_route(const Replica& r, uint64_t group) {
    if (active()) emit("route", r, &group, true);
  }
  void on_done(const Replica& r) {
    if (active()) emit("done", r, nullptr, false);
  }
  void heartbeat();
  // Ends every stream (before the HTTP server stops: it would wait for them).
  void close();
  int64_t n_subscribers() const { return n_subs_.load(std::memory_order_relaxed); }

 private:
  // The caller changed r's figures just before: the fence orders that change before this read of the
  // subscriber count, against subscribe()'s count bump before its snapshot reads them (so a new
  // subscriber gets the change in its snapshot or as an event).
  bool active() const {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return n_subs_.load(std::memory_order_relaxed) > 0;
  }
  // `urgent` (a route event): flushed at once when this thread is on the flush target's strand, even
  // with a posted flush on its way; else (a completion) the events wait for a posted flush, so that
  // under load one write carries many.
  void emit(const char* event, const Replica& r, const uint64_t* group, bool urgent);
  void flush();
  // The first live subscriber (its strand runs the flush); null when none. Under mu_.
  server::http::ExchangePtr flush_target() const;

  struct Subscriber {
    server::http::ExchangePtr exchange;
    std::shared_ptr<std::atomic<bool>> gone;
  };
  std::mutex mu_;
  std::vector<Subscriber> subs_;  // guarded by mu_
  bool closed_ = false;           // guarded by mu_
  std::string pending_;           // guarded by mu_: events not yet pushed
  bool flush_posted_ = false;     // guarded by mu_
  std::atomic<int64_t> n_subs_{0};
};

}  // namespace keel::router
