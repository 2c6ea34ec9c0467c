// PendingAnnouncingEngine: the Engine the API talks to when a cache feed runs. It forwards every call
// to the real engine and, for each request the engine accepted, announces its prompt on the cache
// feed (CacheEventPublisher::publish_pending) before the prefill starts, so every router instance
// sees where a new prefix is being computed, not only where one is cached.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "sched/engine.h"
#include "server/cache_events.h"

namespace keel::server {

class PendingAnnouncingEngine final : public sched::Engine {
 public:
  PendingAnnouncingEngine(sched::Engine& inner, CacheEventPublisher& feed) : inner_(inner), feed_(feed) {}

  Status submit(sched::GenerateRequest request, sched::EventSink sink) override {
    const auto& prompt = request.prompt;
    std::vector<int32_t> head(
        prompt.begin(),
        prompt.begin() + static_cast<std::ptrdiff_t>(std::min(prompt.size(), CacheEventPublisher::kMaxPendingTokens)));
    Status st = inner_.submit(std::move(request), std::move(sink));
    if (st.ok()) feed_.publish_pending(std::move(head));
    return st;
  }
  void cancel(sched::RequestId id) override { inner_.cancel(id); }
  sched::EngineLoad load() const override { return inner_.load(); }
  void drain() override { inner_.drain(); }

 private:
  sched::Engine& inner_;
  CacheEventPublisher& feed_;
};

}  // namespace keel::server
