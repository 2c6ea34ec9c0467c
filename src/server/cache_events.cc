#include "server/cache_events.h"

#include <algorithm>
#include <chrono>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "server/http/sse.h"

namespace keel::server {

using nlohmann::json;

namespace {

std::string event_json(const cache::CacheEvent& e) {
  return json{{"seq", e.seq},
              {"kind", e.kind == cache::CacheEventKind::kStored ? "stored" : "removed"},  // no link to keel_cache
              {"parent_hash", e.parent_hash},
              {"hash", e.hash},
              {"prefix_len", e.prefix_len},
              {"tokens", e.tokens}}
      .dump();
}

// "pending=1" among the query's &-separated parameters.
bool wants_pending(std::string_view query) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    if (query.substr(0, amp) == "pending=1") return true;
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return false;
}

}  // namespace

void CacheEventPublisher::publish_pending(std::vector<int32_t> prompt) {
  if (prompt.empty() || !any_wants_pending_.load(std::memory_order_relaxed)) return;
  if (prompt.size() > kMaxPendingTokens) prompt.resize(kMaxPendingTokens);
  std::lock_guard lock(mu_);
  if (stopping_) return;
  if (announced_.size() >= kMaxQueuedPending) announced_.erase(announced_.begin());
  announced_.push_back(std::move(prompt));
}

void CacheEventPublisher::publish_load(LoadNote load) {
  std::lock_guard lock(mu_);
  load_ = load;
  if (stopping_ || !any_wants_pending_.load(std::memory_order_relaxed)) return;
  load_dirty_ = true;
  cv_.notify_one();
}

CacheEventPublisher::CacheEventPublisher(CacheEventSource source, int32_t poll_ms, int32_t heartbeat_ms)
    : source_(std::move(source)), poll_ms_(poll_ms), heartbeat_ms_(heartbeat_ms) {}

CacheEventPublisher::~CacheEventPublisher() { stop(); }

void CacheEventPublisher::add_routes(http::Router& router) {
  router.add("GET", "/v1/cache/events", [this](http::HttpRequest&& req, const http::ExchangePtr& ex) {
    auto gone = std::make_shared<std::atomic<bool>>(false);
    ex->on_disconnect([gone] { gone->store(true); });
    std::lock_guard lock(mu_);
    if (stopping_ || !thread_.joinable()) {
      ex->respond(http::HttpResponse{.status = 503, .body = R"({"error":{"message":"the cache feed is not running","type":"service_unavailable","param":null,"code":503}})"});
      return;
    }
    ex->begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    const bool wants = wants_pending(req.query);
    if (wants) any_wants_pending_.store(true);
    pending_.push_back(Subscriber{.exchange = ex, .gone = std::move(gone), .wants_pending = wants});
    cv_.notify_one();
  });
}

void CacheEventPublisher::start() {
  thread_ = std::thread([this] { run(); });
}

void CacheEventPublisher::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  for (auto& s : live_) s.exchange->end_stream();
  for (auto& s : pending_) s.exchange->end_stream();
  live_.clear();
  pending_.clear();
}

void CacheEventPublisher::run() {
  int64_t last_beat_us = now_us();
  while (true) {
    std::vector<Subscriber> pending;
    std::vector<std::vector<int32_t>> announced;
    LoadNote load;
    bool send_load = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_),
                   [this] { return stopping_ || !pending_.empty() || load_dirty_; });
      if (stopping_) return;
      pending.swap(pending_);
      announced.swap(announced_);
      load = load_;
      // A new subscriber that asked gets the current load too.
      send_load = load_dirty_ ||
                  std::any_of(pending.begin(), pending.end(), [](const Subscriber& s) { return s.wants_pending; });
      load_dirty_ = false;
    }
    const bool beat = now_us() - last_beat_us >= int64_t{heartbeat_ms_} * 1000;
    if (beat) last_beat_us = now_us();
    pump(pending, announced, beat, send_load ? &load : nullptr);
    if (send_load) {  // coalescing: changes in the next kLoadGapMs go out together, as the latest value
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(kLoadGapMs), [this] { return stopping_; });
      if (stopping_) return;
    }
  }
}

void CacheEventPublisher::pump(std::vector<Subscriber>& pending, std::vector<std::vector<int32_t>>& announced,
                               bool heartbeat, const LoadNote* load) {
  drained_.clear();
  source_.drain(drained_);
  bool gap = false;
  for (const auto& e : drained_) {
    if (last_seq_ != 0 && e.seq != last_seq_ + 1) gap = true;
    last_seq_ = e.seq;
  }
  if (gap) {  // the engine dropped changes: everyone resyncs
    for (auto& s : live_) s.exchange->end_stream();
    live_.clear();
  }
  std::erase_if(live_, [](const Subscriber& s) { return s.gone->load(); });
  for (const auto& e : drained_) {
    std::string ev;
    for (auto& s : live_) {
      if (e.seq <= s.since) continue;
      if (ev.empty()) ev = http::sse_event(event_json(e));
      s.exchange->push(ev);
    }
  }
  if (!pending.empty()) {
    cache::FeedSnapshot snap = source_.snapshot();
    std::string bytes = http::sse_event(json{{"seq", snap.seq}}.dump(), "reset");
    for (const auto& e : snap.stored) {
      cache::CacheEvent copy = e;
      copy.seq = snap.seq;
      bytes += http::sse_event(event_json(copy));
    }
    for (auto& s : pending) {
      s.since = snap.seq;
      s.exchange->push(bytes);
      live_.push_back(std::move(s));
    }
  }
  bool any_wants = false;
  for (const auto& s : live_) any_wants = any_wants || s.wants_pending;
  if (!any_wants) {
    std::lock_guard lock(mu_);  // a subscriber that asks meanwhile sits in pending_ and sets it again
    if (pending_.empty()) any_wants_pending_.store(false);
  }
  for (const auto& prompt : announced) {
    if (!any_wants) break;
    const std::string ev = http::sse_event(json{{"tokens", prompt}}.dump(), "pending");
    for (auto& s : live_) {
      if (s.wants_pending) s.exchange->push(ev);
    }
  }
  if (load != nullptr && any_wants) {
    const std::string ev = http::sse_event(json{{"in_flight", load->in_flight}}.dump(), "load");
    for (auto& s : live_) {
      if (s.wants_pending) s.exchange->push(ev);
    }
  }
  if (heartbeat) {
    for (auto& s : live_) s.exchange->push(":\n\n");
  }
}

}  // namespace keel::server
