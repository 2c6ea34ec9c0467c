// The router-facing extensions of keel serve: the cache-event stream (snapshot, then deltas in seq
// order, resync on a gap) and the stream-resumption request field.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/cache_events.h"
#include "server/pending_engine.h"
#include "server/stream_resume.h"

namespace keel::server {
namespace {

class RecordingExchange final : public http::Exchange {
 public:
  void respond(http::HttpResponse r) override { std::lock_guard l(mu); status = r.status; }
  void begin_stream(int s, std::string, http::Headers) override { std::lock_guard l(mu); status = s; }
  void push(std::string bytes) override { std::lock_guard l(mu); body += bytes; }
  void end_stream() override { std::lock_guard l(mu); ended = true; }
  void post(std::function<void()> fn) override { fn(); }
  void on_disconnect(std::function<void()>) override {}
  std::string text() { std::lock_guard l(mu); return body; }
  bool is_ended() { std::lock_guard l(mu); return ended; }
  std::mutex mu;
  int status = 0;
  std::string body;
  bool ended = false;
};

cache::CacheEvent ev(uint64_t seq, cache::CacheEventKind kind, std::vector<int32_t> tokens) {
  return cache::CacheEvent{.seq = seq, .kind = kind, .parent_hash = 0, .hash = seq * 7, .prefix_len = 1,
                           .tokens = std::move(tokens)};
}

// A subscriber of the cache feed: GET /v1/cache/events with the given query, its stream recorded.
std::shared_ptr<RecordingExchange> subscribe(const http::Router& router, std::string query = "") {
  auto ex = std::make_shared<RecordingExchange>();
  (*router.find("GET", "/v1/cache/events").handler)(
      http::HttpRequest{.method = "GET", .path = "/v1/cache/events", .query = std::move(query)}, ex);
  return ex;
}

template <typename Pred>
bool eventually(Pred p) {
  for (int i = 0; i < 2000 && !p(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return p();
}

TEST(CacheEventPublisher, SnapshotThenLaterDeltasThenResyncOnGap) {
  std::mutex mu;
  std::vector<cache::CacheEvent> queue;
  CacheEventSource source{
      .drain = [&](std::vector<cache::CacheEvent>& out) {
        std::lock_guard l(mu);
        for (auto& e : queue) out.push_back(std::move(e));
        auto n = static_cast<int64_t>(queue.size());
        queue.clear();
        return n;
      },
      .snapshot = [&] { return cache::FeedSnapshot{.seq = 2, .stored = {ev(1, cache::CacheEventKind::kStored, {5, 6})}}; }};
  CacheEventPublisher pub(source, 1, 1000);
  http::Router router;
  pub.add_routes(router);
  pub.start();
  auto ex = std::make_shared<RecordingExchange>();
  auto found = router.find("GET", "/v1/cache/events");
  ASSERT_EQ(found.match, http::Router::Match::kFound);
  (*found.handler)(http::HttpRequest{.method = "GET", .path = "/v1/cache/events"}, ex);
  ASSERT_TRUE(eventually([&] { return ex->text().find("event: reset") != std::string::npos; }));
  {
    std::lock_guard l(mu);
    queue.push_back(ev(2, cache::CacheEventKind::kStored, {9}));  // already in the snapshot: skipped
    queue.push_back(ev(3, cache::CacheEventKind::kRemoved, {6}));
  }
  ASSERT_TRUE(eventually([&] { return ex->text().find("\"seq\":3") != std::string::npos; }));
  std::string text = ex->text();
  EXPECT_EQ(ex->status, 200);
  EXPECT_NE(text.find("data: {\"seq\":2}"), std::string::npos);  // the reset names the snapshot's seq
  EXPECT_NE(text.find("\"tokens\":[5,6]"), std::string::npos);
  EXPECT_EQ(text.find("\"tokens\":[9]"), std::string::npos);
  EXPECT_NE(text.find("\"kind\":\"removed\""), std::string::npos);
  {
    std::lock_guard l(mu);
    queue.push_back(ev(7, cache::CacheEventKind::kStored, {1}));  // 4..6 were dropped by the engine
  }
  EXPECT_TRUE(eventually([&] { return ex->is_ended(); }));  // the subscriber must resubscribe
  pub.stop();
}

// Several routers (high availability) subscribe to one replica: each gets its own snapshot and every
// later change once, including a subscriber that joins after changes the first one already got.
TEST(CacheEventPublisher, EverySubscriberGetsTheSnapshotAndEachChange) {
  std::mutex mu;
  std::vector<cache::CacheEvent> queue;
  uint64_t seq = 2;
  CacheEventSource source{
      .drain =
          [&](std::vector<cache::CacheEvent>& out) {
            std::lock_guard l(mu);
            for (auto& e : queue) out.push_back(std::move(e));
            auto n = static_cast<int64_t>(queue.size());
            queue.clear();
            return n;
          },
      .snapshot =
          [&] {
            std::lock_guard l(mu);
            return cache::FeedSnapshot{.seq = seq, .stored = {ev(1, cache::CacheEventKind::kStored, {5, 6})}};
          }};
  CacheEventPublisher pub(source, 1, 1000);
  http::Router router;
  pub.add_routes(router);
  pub.start();
  auto a = subscribe(router);
  auto b = subscribe(router);
  ASSERT_TRUE(eventually([&] { return a->text().find("event: reset") != std::string::npos; }));
  ASSERT_TRUE(eventually([&] { return b->text().find("event: reset") != std::string::npos; }));
  {
    std::lock_guard l(mu);
    queue.push_back(ev(3, cache::CacheEventKind::kStored, {8}));
    seq = 3;
  }
  ASSERT_TRUE(eventually([&] { return b->text().find("\"seq\":3") != std::string::npos; }));
  ASSERT_TRUE(eventually([&] { return a->text().find("\"seq\":3") != std::string::npos; }));
  auto c = subscribe(router);  // joins late: its snapshot is as of seq 3
  ASSERT_TRUE(eventually([&] { return c->text().find("data: {\"seq\":3}") != std::string::npos; }));
  {
    std::lock_guard l(mu);
    queue.push_back(ev(4, cache::CacheEventKind::kRemoved, {6}));
    seq = 4;
  }
  for (auto* ex : {a.get(), b.get(), c.get()}) {
    ASSERT_TRUE(eventually([&] { return ex->text().find("\"seq\":4") != std::string::npos; }));
    std::string text = ex->text();
    EXPECT_EQ(text.find("event: reset"), text.rfind("event: reset"));  // one snapshot each, no resync
    EXPECT_EQ(text.find("\"seq\":4"), text.rfind("\"seq\":4"));        // the change once
    EXPECT_NE(text.find("\"tokens\":[5,6]"), std::string::npos);
    EXPECT_FALSE(ex->is_ended());
  }
  EXPECT_EQ(a->text().find("\"tokens\":[8]"), a->text().rfind("\"tokens\":[8]"));  // seq 3 once for a
  pub.stop();
}

// "Prefill started": a subscriber that asked (?pending=1) gets `event: pending` with the admitted
// prompt after its snapshot, outside the seq order (no seq: not a change of the tree); one
// that did not ask gets the same stream as before. The announcing engine announces only what its
// engine accepted. (The engine below is a stand-in: a ThreadedEngine needs a model.)
TEST(CacheEventPublisher, PendingGoesOnlyToSubscribersThatAskAndOnlyForAcceptedRequests) {
  CacheEventSource source{.drain = [](std::vector<cache::CacheEvent>&) { return int64_t{0}; },
                          .snapshot = [] { return cache::FeedSnapshot{.seq = 5, .stored = {}}; }};
  CacheEventPublisher pub(source, 1, 1000);
  http::Router router;
  pub.add_routes(router);
  pub.start();
  pub.publish_pending({1, 2, 3});  // nobody asked yet: dropped
  auto old_router = subscribe(router);
  auto new_router = subscribe(router, "x=2&pending=1");
  ASSERT_TRUE(eventually([&] { return new_router->text().find("event: reset") != std::string::npos; }));
  ASSERT_TRUE(eventually([&] { return old_router->text().find("event: reset") != std::string::npos; }));

  struct StandInEngine final : sched::Engine {
    bool accept = true;
    Status submit(sched::GenerateRequest, sched::EventSink) override {
      return accept ? Status{} : make_error(ErrorCode::kResourceExhausted, "full");
    }
    void cancel(sched::RequestId) override {}
    sched::EngineLoad load() const override { return {}; }
    void drain() override {}
  } inner;
  PendingAnnouncingEngine engine(inner, pub);
  sched::GenerateRequest rejected;
  rejected.prompt = {7, 7, 7};
  inner.accept = false;
  EXPECT_FALSE(engine.submit(std::move(rejected), {}).ok());
  inner.accept = true;
  sched::GenerateRequest accepted;
  accepted.prompt = {4, 5, 6, 8};
  ASSERT_TRUE(engine.submit(std::move(accepted), {}).ok());
  sched::GenerateRequest longer;
  longer.prompt.assign(CacheEventPublisher::kMaxPendingTokens + 10, 9);
  ASSERT_TRUE(engine.submit(std::move(longer), {}).ok());

  ASSERT_TRUE(eventually([&] { return new_router->text().find("[4,5,6,8]") != std::string::npos; }));
  ASSERT_TRUE(eventually([&] { return new_router->text().find(",9]") != std::string::npos; }));
  std::string text = new_router->text();
  EXPECT_LT(text.find("event: reset"), text.find("event: pending"));
  EXPECT_NE(text.find("event: pending\ndata: {\"tokens\":[4,5,6,8]}"), std::string::npos) << text;
  EXPECT_EQ(text.find("[1,2,3]"), std::string::npos);  // published before anyone asked
  EXPECT_EQ(text.find("7,7"), std::string::npos);      // the engine refused it
  // The long prompt is cut to its first kMaxPendingTokens.
  size_t at = text.rfind("\"tokens\":[");
  std::string tail = text.substr(at);
  EXPECT_EQ(
      static_cast<size_t>(std::count(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(tail.find(']')), '9')),
      CacheEventPublisher::kMaxPendingTokens);
  EXPECT_EQ(old_router->text().find("pending"), std::string::npos);
  EXPECT_EQ(old_router->text().find("[4,5,6,8]"), std::string::npos);
  pub.stop();
}

// Load: the announcing engine counts what it accepted until every sample's final event and publishes
// the count; only subscribers that asked get `event: load`, a new one gets the current count after its
// snapshot, and a run of changes is coalesced (far fewer events than changes, the last value sent).
TEST(CacheEventPublisher, LoadGoesOnlyToSubscribersThatAskCoalescedToTheLatestCount) {
  CacheEventSource source{.drain = [](std::vector<cache::CacheEvent>&) { return int64_t{0}; },
                          .snapshot = [] { return cache::FeedSnapshot{.seq = 1, .stored = {}}; }};
  CacheEventPublisher pub(source, 1000, 100'000);  // no periodic wake-ups: only load wakes the pump
  http::Router router;
  pub.add_routes(router);
  pub.start();
  auto old_router = subscribe(router);
  auto new_router = subscribe(router, "pending=1");
  ASSERT_TRUE(
      eventually([&] { return new_router->text().find("event: load\ndata: {\"in_flight\":0}") != std::string::npos; }));

  struct StandInEngine final : sched::Engine {
    std::vector<sched::EventSink> sinks;
    bool accept = true;
    Status submit(sched::GenerateRequest, sched::EventSink sink) override {
      if (!accept) return make_error(ErrorCode::kResourceExhausted, "full");
      sinks.push_back(std::move(sink));
      return {};
    }
    void cancel(sched::RequestId) override {}
    sched::EngineLoad load() const override { return {}; }
    void drain() override {}
  } inner;
  PendingAnnouncingEngine engine(inner, pub);
  int delivered = 0;
  sched::GenerateRequest two;
  two.prompt = {1, 2};
  two.n = 2;
  ASSERT_TRUE(engine.submit(std::move(two), [&](sched::StreamEvent&&) { ++delivered; }).ok());
  inner.accept = false;
  EXPECT_FALSE(engine.submit(sched::GenerateRequest{.prompt = {3}}, {}).ok());
  inner.accept = true;
  EXPECT_EQ(engine.in_flight(), 1);
  ASSERT_TRUE(eventually([&] { return new_router->text().find("{\"in_flight\":1}") != std::string::npos; }));
  inner.sinks[0](sched::StreamEvent{.index = 0, .tokens = {5}});
  inner.sinks[0](sched::StreamEvent{.index = 0, .finish = sched::FinishReason::kLength});
  EXPECT_EQ(engine.in_flight(), 1);  // one sample still running
  inner.sinks[0](sched::StreamEvent{.index = 1, .finish = sched::FinishReason::kStop});
  EXPECT_EQ(engine.in_flight(), 0);
  EXPECT_EQ(delivered, 3);  // the caller's sink still gets every event
  ASSERT_TRUE(eventually([&] {
    const std::string t = new_router->text();
    return t.rfind("{\"in_flight\":0}") > t.find("{\"in_flight\":1}");
  }));

  // 200 changes in a row (100 admits, then 100 finishes): coalesced, ending at 0.
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(engine.submit(sched::GenerateRequest{.prompt = {4}}, {}).ok());
  for (size_t i = 1; i < inner.sinks.size(); ++i)
    inner.sinks[i](sched::StreamEvent{.finish = sched::FinishReason::kStop});
  EXPECT_EQ(engine.in_flight(), 0);
  auto count_loads = [&] {
    const std::string t = new_router->text();
    int n = 0;
    for (size_t at = t.find("event: load"); at != std::string::npos; at = t.find("event: load", at + 1)) ++n;
    return n;
  };
  ASSERT_TRUE(eventually([&] {
    const std::string t = new_router->text();
    return t.size() > 16 && t.substr(t.rfind("event: load")).starts_with("event: load\ndata: {\"in_flight\":0}");
  }));
  EXPECT_LT(count_loads(), 3 + 100) << new_router->text();
  EXPECT_EQ(old_router->text().find("load"), std::string::npos);
  EXPECT_EQ(old_router->text().find("in_flight"), std::string::npos);
  pub.stop();
}

TEST(StreamResume, TakesTheFieldOnlyWithTheHeaderAndValidatesIds) {
  http::HttpRequest plain;
  std::string body = R"({"model":"m","keel_resume_token_ids":[1,2]})";
  auto none = take_resume_tokens(plain, body, 100);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().has_value());
  EXPECT_NE(body.find("keel_resume_token_ids"), std::string::npos);  // left for the parser to reject

  http::HttpRequest resume{.headers = {{"X-Keel-Resume", "1"}}};
  auto ids = take_resume_tokens(resume, body, 100);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids.value(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(nlohmann::json::parse(body), nlohmann::json::parse(R"({"model":"m"})"));

  std::string bad = R"({"keel_resume_token_ids":[1,200]})";
  EXPECT_FALSE(take_resume_tokens(resume, bad, 100).ok());
  std::string missing = R"({"model":"m"})";
  EXPECT_FALSE(take_resume_tokens(resume, missing, 100).ok());
  EXPECT_NE(token_ids_event(0, std::vector<int32_t>{3, 4}).find("event: keel_tokens"), std::string::npos);
}

}  // namespace
}  // namespace keel::server
