// The exact source of the prefix index: one long-lived GET /v1/cache/events per replica (an SSE
// stream: `event: reset` with the snapshot's seq, the snapshot's stored spans, then deltas, and `:`
// heartbeats). It asks for `?pending=1`: the replica then also sends `event: pending` ({"tokens"}: a
// prompt it admitted, outside the seq order) and the index counts that prefix as held there until its
// stored span arrives (PrefixIndex::add_pending), and `event: load` ({"in_flight"}: its requests from
// every router instance, pushed on admit and finish) becomes the replica's pushed load
// (Replica::set_pushed, dropped when the feed is lost); a replica without them ignores the query.
// A seq gap, a malformed event or a lost connection drops the replica back to the approximate index and resubscribes (a
// fresh snapshot) after a short pause; a replica that has no such endpoint (404) is retried rarely. Runs on the
// upstream client's threads, no thread of its own.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "router/prefix_key.h"
#include "router/service.h"
#include "router/sse_reader.h"

namespace keel::router {

using nlohmann::json;

namespace {

constexpr int64_t kResubscribeMs = 200;
constexpr int64_t kNoFeedRetryMs = 10'000;
// Replicas send a heartbeat every second, but a CPU replica on a loaded machine was seen silent for
// over 5 s (the feed then dropped and resubscribed several times in one benchmark); health checks
// catch a dead replica sooner anyway.
constexpr int32_t kFeedIdleTimeoutMs = 15'000;
constexpr size_t kMaxPendingTokens = 1 << 16;  // a replica sends at most its first 4,096

struct FeedState {
  RouterService* svc;
  ReplicaPtr replica;
  SseReader reader;
  int status = 0;
  bool live = false;
  uint64_t last_seq = 0;
  bool broken = false;
  std::shared_ptr<UpstreamCall> call;
};

// A malformed pending event is dropped, not a resync: it carries no cache state.
void apply_pending(FeedState& st, const json& j) {
  if (!st.live || !j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) return;
  const json& arr = j["tokens"];
  if (arr.empty() || arr.size() > kMaxPendingTokens) return;
  std::vector<int32_t> tokens;
  tokens.reserve(arr.size());
  for (const json& t : arr) {
    if (!t.is_number_integer()) return;
    tokens.push_back(t.get<int32_t>());
  }
  st.svc->index().add_pending(st.replica->id,
                              std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(tokens)));
}

// A malformed load event is dropped too; the polled load still stands.
void apply_load(FeedState& st, const json& j) {
  if (!st.live || !j.is_object() || !j.contains("in_flight") || !j["in_flight"].is_number_integer()) return;
  const auto n = j["in_flight"].get<int64_t>();
  if (n < 0 || n > (int64_t{1} << 40)) return;
  st.replica->set_pushed(n);
}

void apply_event(FeedState& st, const SseEvent& ev) {
  if (st.broken || ev.comment_only) return;
  PrefixIndex& index = st.svc->index();
  const ReplicaId id = st.replica->id;
  json j = json::parse(ev.data, nullptr, false);
  if (ev.event == "pending") {
    apply_pending(st, j);
    return;
  }
  if (ev.event == "load") {
    apply_load(st, j);
    return;
  }
  if (j.is_discarded() || !j.is_object() || !j.contains("seq") || !j["seq"].is_number_unsigned()) {
    st.broken = true;
    return;
  }
  const auto seq = j["seq"].get<uint64_t>();
  if (ev.event == "reset") {
    index.begin_exact(id);
    st.live = true;
    st.last_seq = seq;
    return;
  }
  if (!st.live || seq < st.last_seq || seq > st.last_seq + 1) {
    st.broken = true;  // a gap: resync from a fresh snapshot
    return;
  }
  st.last_seq = seq;
  if (!j.contains("tokens") || !j["tokens"].is_array() || !j.contains("parent_hash") ||
      !j["parent_hash"].is_number_unsigned()) {
    st.broken = true;
    return;
  }
  // Typed reads only: nlohmann's get<> throws on a wrong type, and a throw here would leave the
  // upstream client's handler and end the router.
  const auto kind = j.find("kind");
  if (kind != j.end() && (!kind->is_string() || (*kind != "stored" && *kind != "removed"))) {
    st.broken = true;
    return;
  }
  std::vector<int32_t> tokens;
  tokens.reserve(j["tokens"].size());
  for (const json& t : j["tokens"]) {
    if (!t.is_number_integer()) {
      st.broken = true;
      return;
    }
    tokens.push_back(t.get<int32_t>());
  }
  const auto parent = j["parent_hash"].get<uint64_t>();
  if (kind != j.end() && *kind == "removed") {
    index.remove_exact(id, parent, tokens);
  } else {
    index.add_exact(id, parent, tokens);
  }
}

}  // namespace

void run_cache_feed(RouterService& svc, const ReplicaPtr& replica) {
  if (svc.stopping() || replica->removed.load()) return;
  auto st = std::make_shared<FeedState>(FeedState{.svc = &svc, .replica = replica});
  UpstreamRequest req{.method = "GET",
                      .target = "/v1/cache/events?pending=1",
                      .first_byte_timeout_ms = kFeedIdleTimeoutMs,
                      .idle_timeout_ms = kFeedIdleTimeoutMs};
  st->call = svc.upstream().send(
      replica->endpoint, std::move(req),
      {.on_head = [st](int status, const HeaderList&) { st->status = status; },
       .on_data = [st](std::string_view bytes) {
         if (st->status != 200 || st->broken) return;
         if (st->replica->removed.load()) {  // stop feeding the index of a replica that is gone
           st->broken = true;
           if (st->call) st->call->cancel();
           st->replica->clear_pushed();
           st->svc->index().forget(st->replica->id);
           return;
         }
         const bool within_limit = st->reader.feed(bytes, [&](const SseEvent& ev) {
           try {
             apply_event(*st, ev);
           } catch (const std::exception& e) {  // a last guard: a replica's bytes must not end the router
             KEEL_LOG_WARN("cache feed of {}: dropped after a malformed event ({})", st->replica->url, e.what());
             st->broken = true;
           }
         });
         if (!within_limit && !st->broken) {  // an event past 8 MiB: not a feed this router can hold
           KEEL_LOG_WARN("cache feed of {}: dropped, an event over {} bytes", st->replica->url, st->reader.n_buffered());
           st->broken = true;
         }
         if (st->broken && st->call) st->call->cancel();
         if (st->broken && !st->replica->removed.load()) {
           st->replica->clear_pushed();
           st->svc->index().end_exact(st->replica->id);
           st->svc->upstream().run_after(kResubscribeMs, [svc = st->svc, r = st->replica] { run_cache_feed(*svc, r); });
         }
       },
       .on_done = [st](UpstreamFailure, const std::string& message) {
         if (st->broken) return;  // resubscription already scheduled
         st->replica->clear_pushed();
         st->svc->index().end_exact(st->replica->id);
         if (st->live) KEEL_LOG_WARN("cache feed of {} ended: {}", st->replica->url, message.empty() ? "closed" : message);
         int64_t delay = st->status == 404 ? kNoFeedRetryMs : kResubscribeMs;
         st->svc->upstream().run_after(delay, [svc = st->svc, r = st->replica] { run_cache_feed(*svc, r); });
       }});
}

}  // namespace keel::router
