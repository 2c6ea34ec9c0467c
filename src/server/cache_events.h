// GET /v1/cache/events: the radix cache's change feed (cache/cache_event.h) as server-sent events,
// for routers. Each subscriber first gets `event: reset` ({"seq": S}) and the tree's content as of
// change S (stored spans, parents first), then every later change in seq order, one `data:` event
// each ({"seq", "kind": "stored"|"removed", "parent_hash", "hash", "prefix_len", "tokens"}), and a
// `:` heartbeat each second. If the engine's bounded feed dropped events, every subscriber's stream
// is ended so it resubscribes and gets a fresh snapshot. One pump thread drains the engine and fans
// out; handlers only enqueue. start()/stop() from the controlling thread; stop() before the engine
// drains (it ends the streams, so the HTTP server's stop does not wait on them).
// Pending (opt-in, `GET /v1/cache/events?pending=1`): publish_pending(prompt) announces a request the
// engine admitted; subscribers that asked get `event: pending` ({"tokens": the prompt's first
// kMaxPendingTokens}) on the next poll, after their snapshot. It has no seq (not a change of the
// tree); subscribers that did not ask never see it, so an older router's stream is unchanged. At
// most kMaxQueuedPending wait between polls (the oldest go).
// Load (same opt-in): publish_load({in_flight}) records the replica's request count
// (PendingAnnouncingEngine calls it on each admit and finish); subscribers that asked get `event: load`
// ({"in_flight"}: queued + running as the API counts them, no seq) with the latest value, coalesced: at most one per
// kLoadGapMs, the last value always sent. A new subscriber that asked gets the current one after its
// snapshot. So router instances see each other's requests within a few ms, not a poll later.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/cache_event.h"
#include "cache/radix_tree.h"
#include "server/http/exchange.h"
#include "server/http/router.h"

namespace keel::server {

struct CacheEventSource {
  std::function<int64_t(std::vector<cache::CacheEvent>&)> drain;  // ThreadedEngine::drain_cache_events
  std::function<cache::FeedSnapshot()> snapshot;                  // ThreadedEngine::cache_snapshot
};

class CacheEventPublisher {
 public:
  CacheEventPublisher(CacheEventSource source, int32_t poll_ms = 20, int32_t heartbeat_ms = 1000);
  ~CacheEventPublisher();

  static constexpr size_t kMaxPendingTokens = 4096;
  static constexpr size_t kMaxQueuedPending = 256;
  static constexpr int32_t kLoadGapMs = 5;

  struct LoadNote {
    int64_t in_flight = 0;  // requests accepted and not finished (what a router counts)
  };

  void add_routes(http::Router& router);
  // Any thread; cheap when no subscriber asked for pending events.
  void publish_pending(std::vector<int32_t> prompt);
  // Whether some subscriber asked for pending events (a caller may skip building a prompt's copy).
  bool announcing() const { return any_wants_pending_.load(std::memory_order_relaxed); }
  // Any thread; wakes the pump only when a subscriber asked.
  void publish_load(LoadNote load);
  void start();
  void stop();

 private:
  struct Subscriber {
    http::ExchangePtr exchange;
    uint64_t since = 0;  // changes up to this seq are in its snapshot
    std::shared_ptr<std::atomic<bool>> gone;
    bool wants_pending = false;
  };
  void run();
  void pump(std::vector<Subscriber>& pending, std::vector<std::vector<int32_t>>& announced, bool heartbeat,
            const LoadNote* load);

  CacheEventSource source_;
  int32_t poll_ms_, heartbeat_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Subscriber> pending_;  // guarded by mu_
  std::vector<std::vector<int32_t>> announced_;  // guarded by mu_
  std::atomic<bool> any_wants_pending_{false};   // set by the handler, cleared by the pump
  LoadNote load_;                                // guarded by mu_: the latest
  bool load_dirty_ = false;                      // guarded by mu_: not yet sent
  std::vector<Subscriber> live_;     // pump thread only
  uint64_t last_seq_ = 0;            // pump thread only
  std::vector<cache::CacheEvent> drained_;
  std::thread thread_;
};

}  // namespace keel::server
