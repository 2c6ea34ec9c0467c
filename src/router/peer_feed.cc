#include "router/peer_feed.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/http/sse.h"

namespace keel::router {

namespace {

// {"url":...,"in_flight":n,"work":w[,"group":g]} (the URL JSON-escaped; the rest are numbers).
std::string figures_json(const Replica& r, const uint64_t* group) {
  std::string out = fmt::format(R"({{"url":{},"in_flight":{},"work":{})", nlohmann::json(r.url).dump(),
                                r.in_flight.load(std::memory_order_relaxed), r.work.load(std::memory_order_relaxed));
  if (group != nullptr) out += fmt::format(R"(,"group":{})", *group);
  out += '}';
  return out;
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
  n_subs_.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before the snapshot reads (PeerFeed::active)
  ex->begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  std::string bytes = server::http::sse_event("{}", "reset");
  for (const auto& r : replicas) bytes += server::http::sse_event(figures_json(*r, nullptr), "replica");
  ex->push(std::move(bytes));
  subs_.push_back(Subscriber{.exchange = ex, .gone = std::move(gone)});
}

void PeerFeed::emit(const char* event, const Replica& r, const uint64_t* group) {
  std::lock_guard lock(mu_);
  if (subs_.empty()) return;
  const std::string ev = server::http::sse_event(figures_json(r, group), event);
  for (const auto& s : subs_) {
    if (!s.gone->load(std::memory_order_relaxed)) s.exchange->push(ev);
  }
}

void PeerFeed::heartbeat() {
  std::lock_guard lock(mu_);
  std::erase_if(subs_, [](const Subscriber& s) { return s.gone->load(); });
  n_subs_.store(static_cast<int64_t>(subs_.size()), std::memory_order_relaxed);
  for (const auto& s : subs_) s.exchange->push(":\n\n");
}

void PeerFeed::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (const auto& s : subs_) s.exchange->end_stream();
  subs_.clear();
  n_subs_.store(0, std::memory_order_relaxed);
}

}  // namespace keel::router
