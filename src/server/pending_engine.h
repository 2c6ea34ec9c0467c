// PendingAnnouncingEngine: the Engine the API talks to when a cache feed runs. It forwards every call
// to the real engine and, for each request the engine accepted, announces its prompt on the cache
// feed (CacheEventPublisher::publish_pending) before the prefill starts, so every router instance
// sees where a new prefix is being computed, not only where one is cached. It also counts the
// requests accepted and not yet finished (every sample's final event seen) and publishes that count
// on each admit and finish (CacheEventPublisher::publish_load; the sink never calls back into the
// engine: its thread may hold the engine's lock), so each router instance sees the
// requests the others sent within a few ms.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "sched/engine.h"
#include "server/cache_events.h"

namespace keel::server {

class PendingAnnouncingEngine final : public sched::Engine {
 public:
  PendingAnnouncingEngine(sched::Engine& inner, CacheEventPublisher& feed) : inner_(inner), feed_(feed) {}

  Status submit(sched::GenerateRequest request, sched::EventSink sink) override {
    // The prompt's head, copied only while a subscriber asked for pending events (the request moves on).
    std::vector<int32_t> head;
    if (feed_.announcing()) {
      const auto& prompt = request.prompt;
      head.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                       prompt.size(), CacheEventPublisher::kMaxPendingTokens)));
    }
    // Counted before the submit: the engine may finish it on its own thread before submit returns.
    auto req = std::make_shared<Outstanding>(std::max<int32_t>(request.n, 1));
    count_->fetch_add(1);
    sched::EventSink counting = [count = count_, req, feed = &feed_, sink = std::move(sink)](sched::StreamEvent&& ev) {
      const bool last = ev.finish != sched::FinishReason::kNone && req->samples_left.fetch_sub(1) == 1;
      if (sink) sink(std::move(ev));
      if (last && !req->done.exchange(true)) {
        count->fetch_sub(1);
        feed->publish_load({.in_flight = count->load()});
      }
    };
    Status st = inner_.submit(std::move(request), std::move(counting));
    if (st.ok()) {
      feed_.publish_pending(std::move(head));
      feed_.publish_load({.in_flight = count_->load()});
    } else if (!req->done.exchange(true)) {
      count_->fetch_sub(1);
    }
    return st;
  }
  int64_t in_flight() const { return count_->load(); }
  void cancel(sched::RequestId id) override { inner_.cancel(id); }
  sched::EngineLoad load() const override { return inner_.load(); }
  void drain() override { inner_.drain(); }

 private:
  struct Outstanding {
    explicit Outstanding(int32_t n) : samples_left(n) {}
    std::atomic<int32_t> samples_left;
    std::atomic<bool> done{false};
  };

  sched::Engine& inner_;
  std::shared_ptr<std::atomic<int64_t>> count_ = std::make_shared<std::atomic<int64_t>>(0);
  CacheEventPublisher& feed_;
};

}  // namespace keel::server
