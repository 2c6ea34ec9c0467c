#include "server/cache_events.h"

#include <chrono>

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

}  // namespace

CacheEventPublisher::CacheEventPublisher(CacheEventSource source, int32_t poll_ms, int32_t heartbeat_ms)
    : source_(std::move(source)), poll_ms_(poll_ms), heartbeat_ms_(heartbeat_ms) {}

CacheEventPublisher::~CacheEventPublisher() { stop(); }

void CacheEventPublisher::add_routes(http::Router& router) {
  router.add("GET", "/v1/cache/events", [this](http::HttpRequest&&, const http::ExchangePtr& ex) {
    auto gone = std::make_shared<std::atomic<bool>>(false);
    ex->on_disconnect([gone] { gone->store(true); });
    std::lock_guard lock(mu_);
    if (stopping_ || !thread_.joinable()) {
      ex->respond(http::HttpResponse{.status = 503, .body = R"({"error":{"message":"the cache feed is not running","type":"service_unavailable","param":null,"code":503}})"});
      return;
    }
    ex->begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    pending_.push_back(Subscriber{.exchange = ex, .gone = std::move(gone)});
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
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [this] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      pending.swap(pending_);
    }
    const bool beat = now_us() - last_beat_us >= int64_t{heartbeat_ms_} * 1000;
    if (beat) last_beat_us = now_us();
    pump(pending, beat);
  }
}

void CacheEventPublisher::pump(std::vector<Subscriber>& pending, bool heartbeat) {
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
  if (heartbeat) {
    for (auto& s : live_) s.exchange->push(":\n\n");
  }
}

}  // namespace keel::server
