// UpstreamClient against a real HttpServer (server/http) on loopback: whole responses, chunked
// streams delivered piece by piece, keep-alive reuse, and each failure kind (refused connection,
// first-byte timeout, idle timeout inside a stream). Each test runs three times: with one io thread
// of the client's own, with two (calls then run on strands), and with the client on the server's
// io_context (one thread serves both ends of each call, as in `keel router` --upstream-threads 0).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "router/upstream.h"
#include "server/http/server.h"

namespace keel::router {
namespace {

using server::http::ExchangePtr;
using server::http::HttpRequest;
using server::http::HttpResponse;

struct Result {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int status = 0;
  std::string body;
  std::vector<std::string> pieces;
  UpstreamFailure failure = UpstreamFailure::kNone;

  UpstreamCallbacks callbacks() {
    return {.on_head = [this](int s, const HeaderList&) { std::lock_guard l(mu); status = s; },
            .on_data = [this](std::string_view b) {
              std::lock_guard l(mu);
              body += b;
              pieces.emplace_back(b);
            },
            .on_done = [this](UpstreamFailure f, const std::string&) {
              std::lock_guard l(mu);
              failure = f;
              done = true;
              cv.notify_all();
            }};
  }
  bool wait() {
    std::unique_lock l(mu);
    return cv.wait_for(l, std::chrono::seconds(20), [this] { return done; });
  }
};

enum class Threads { kOwn, kOwnTwo, kShared };  // kOwnTwo: two own threads, so calls run on strands

class UpstreamTest : public ::testing::TestWithParam<Threads> {
 protected:
  void SetUp() override {
    server::http::Router r;
    r.add("GET", "/hello", [this](HttpRequest&&, const ExchangePtr& ex) {
      {
        std::lock_guard l(mu_);
        server_thread_ = std::this_thread::get_id();
      }
      ex->respond(HttpResponse{.body = "hello"});
    });
    r.add("POST", "/echo", [](HttpRequest&& req, const ExchangePtr& ex) { ex->respond(HttpResponse{.body = req.body}); });
    r.add("GET", "/stall", [this](HttpRequest&&, const ExchangePtr& ex) {
      std::lock_guard l(mu_);
      held_.push_back(ex);  // never answered until the test ends
    });
    r.add("GET", "/stream", [this](HttpRequest&&, const ExchangePtr& ex) {
      ex->begin_stream(200, "text/event-stream", {});
      ex->push("data: 1\n\n");
      std::thread([this, ex] {  // the second event only once the client has seen the first
        for (int i = 0; i < 20000 && !first_seen_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ex->push("data: 2\n\n");
        ex->end_stream();
      }).detach();
    });
    r.add("GET", "/stream_stall", [this](HttpRequest&&, const ExchangePtr& ex) {
      ex->begin_stream(200, "text/event-stream", {});
      ex->push("data: 1\n\n");
      std::lock_guard l(mu_);
      held_.push_back(ex);
    });
    server_ = std::make_unique<server::http::HttpServer>(server::http::ServerConfig{.port = 0, .n_io_threads = 1,
                                                                                   .drain_timeout_ms = 100},
                                                         std::move(r));
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<UpstreamClient>(UpstreamConfig{.connect_timeout_ms = 1000,
                                                              .first_byte_timeout_ms = 300,
                                                              .idle_timeout_ms = 300,
                                                              .n_threads = GetParam() == Threads::kShared ? 0
                                                                           : GetParam() == Threads::kOwn  ? 1
                                                                                                          : 2});
    client_->start(GetParam() == Threads::kShared ? &server_->io_context() : nullptr);
    ep_ = Endpoint{.host = "127.0.0.1", .port = server_->port()};
  }
  void TearDown() override {
    client_->stop();
    {
      std::lock_guard l(mu_);
      for (auto& ex : held_) ex->respond(HttpResponse{.status = 503});
      held_.clear();
    }
    server_->stop();
  }

  std::thread::id server_thread() {
    std::lock_guard l(mu_);
    return server_thread_;
  }

  std::mutex mu_;
  std::atomic<bool> first_seen_{false};
  bool alone_ = false;  // written on the call's strand, read after it finished
  std::thread::id server_thread_;  // guarded by mu_: the thread that ran the last /hello
  std::vector<ExchangePtr> held_;
  std::unique_ptr<server::http::HttpServer> server_;
  std::unique_ptr<UpstreamClient> client_;
  Endpoint ep_;
};

TEST_P(UpstreamTest, WholeResponsesReuseTheKeptAliveConnection) {
  for (int i = 0; i < 3; ++i) {
    Result r;
    client_->send(ep_, {.method = "POST", .target = "/echo", .body = "body " + std::to_string(i)}, r.callbacks());
    ASSERT_TRUE(r.wait());
    EXPECT_EQ(r.failure, UpstreamFailure::kNone);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "body " + std::to_string(i));
    EXPECT_EQ(client_->n_idle(), 1);  // the one connection went back to the pool each time
  }
  EXPECT_EQ(server_->n_connections(), 1);
}

// A request and an answer larger than a loopback socket takes at once: the call's first send and the
// server's first send of the answer are partial, and the rest goes out asynchronously from where they
// stopped; the answer's first bytes come with its head and are parsed from the buffer before the rest is
// read. Every byte arrives once, in order, on a connection that goes back to the pool.
TEST_P(UpstreamTest, BodiesLargerThanTheSocketBufferArriveWholeBothWays) {
  std::string body(8 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  for (int i = 0; i < 2; ++i) {
    Result r;
    client_->send(ep_, {.method = "POST", .target = "/echo", .body = body}, r.callbacks());
    ASSERT_TRUE(r.wait());
    EXPECT_EQ(r.failure, UpstreamFailure::kNone);
    EXPECT_EQ(r.status, 200);
    ASSERT_EQ(r.body.size(), body.size());
    EXPECT_TRUE(r.body == body);
    EXPECT_GT(r.pieces.size(), 1u);
    EXPECT_EQ(client_->n_idle(), 1);
  }
}

// The pool keeps at most max_idle_per_replica connections (calls beyond it close theirs), and drops a
// pooled connection once it sat unused for pool_idle_ms: trim_idle() closes it, and a call that finds only
// stale ones connects afresh.
TEST_P(UpstreamTest, ThePoolKeepsItsBoundAndDropsConnectionsUnusedPastItsIdleLimit) {
  UpstreamClient client(UpstreamConfig{.max_idle_per_replica = 2, .pool_idle_ms = 300,
                                       .n_threads = GetParam() == Threads::kShared ? 0 : 1});
  client.start(GetParam() == Threads::kShared ? &server_->io_context() : nullptr);
  {
    std::vector<std::unique_ptr<Result>> stalled;
    for (int i = 0; i < 3; ++i) {  // three calls in flight at once: three connections
      stalled.push_back(std::make_unique<Result>());
      client.send(ep_, {.method = "GET", .target = "/stall"}, stalled.back()->callbacks());
    }
    for (int i = 0; i < 200 && server_->n_connections() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(server_->n_connections(), 3);
    {
      std::lock_guard l(mu_);
      for (auto& ex : held_) ex->respond(HttpResponse{.body = "late"});
      held_.clear();
    }
    for (auto& r : stalled) {
      ASSERT_TRUE(r->wait());
      EXPECT_EQ(r->failure, UpstreamFailure::kNone);
    }
  }
  EXPECT_EQ(client.n_idle(), 2);  // the third connection was closed
  client.trim_idle();
  EXPECT_EQ(client.n_idle(), 2);  // not stale yet
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  client.trim_idle();
  EXPECT_EQ(client.n_idle(), 0);
  for (int i = 0; i < 200 && server_->n_connections() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(server_->n_connections(), 0);  // the router closed them, so the replica did
  Result r;
  client.send(ep_, {.method = "GET", .target = "/hello"}, r.callbacks());
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.failure, UpstreamFailure::kNone);
  EXPECT_EQ(client.n_idle(), 1);
  EXPECT_EQ(client.n_connects(), 4);
  Result r1;  // a fresh pooled connection is reused
  client.send(ep_, {.method = "GET", .target = "/hello"}, r1.callbacks());
  ASSERT_TRUE(r1.wait());
  EXPECT_EQ(client.n_connects(), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // stale, and no trim: the next call skips it
  Result r2;
  client.send(ep_, {.method = "GET", .target = "/hello"}, r2.callbacks());
  ASSERT_TRUE(r2.wait());
  EXPECT_EQ(r2.failure, UpstreamFailure::kNone);
  EXPECT_EQ(client.n_connects(), 5);
  EXPECT_EQ(client.n_idle(), 1);  // the fresh connection; the stale one was closed
  for (int i = 0; i < 200 && server_->n_connections() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(server_->n_connections(), 1);
  client.stop();
}

TEST_P(UpstreamTest, ChunkedStreamArrivesPieceByPiece) {
  Result r;
  UpstreamCallbacks cb = r.callbacks();
  cb.on_data = [&r, this, inner = cb.on_data](std::string_view b) {
    inner(b);
    if (b.find("data: 1") != std::string_view::npos) {
      alone_ = b.find("data: 2") == std::string_view::npos;
      first_seen_.store(true);
    }
  };
  client_->send(ep_, {.method = "GET", .target = "/stream"}, std::move(cb));
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.failure, UpstreamFailure::kNone);
  EXPECT_EQ(r.body, "data: 1\n\ndata: 2\n\n");
  EXPECT_TRUE(alone_);  // the first event was handed over before the second existed: no buffering
}

TEST_P(UpstreamTest, RefusedConnectionIsAConnectFailure) {
  Endpoint dead = ep_;
  {  // a port that was just listened on and is closed now
    server::http::HttpServer gone(server::http::ServerConfig{.port = 0}, server::http::Router{});
    ASSERT_TRUE(gone.start().ok());
    dead.port = gone.port();
  }
  Result r;
  client_->send(dead, {.method = "GET", .target = "/hello"}, r.callbacks());
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.failure, UpstreamFailure::kConnect);
}

TEST_P(UpstreamTest, NoHeadInTimeIsAFirstByteFailure) {
  Result r;
  client_->send(ep_, {.method = "GET", .target = "/stall"}, r.callbacks());
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.failure, UpstreamFailure::kFirstByte);
  EXPECT_EQ(r.status, 0);
}

TEST_P(UpstreamTest, SilenceInsideAStreamIsABodyFailureAfterTheHead) {
  Result r;
  client_->send(ep_, {.method = "GET", .target = "/stream_stall"}, r.callbacks());
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.failure, UpstreamFailure::kBody);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "data: 1\n\n");
}

TEST_P(UpstreamTest, CallbacksRunOnTheSharedContextsThreadOnly) {
  Result r;
  std::thread::id callback_thread;
  UpstreamCallbacks cb = r.callbacks();
  cb.on_head = [&callback_thread, inner = cb.on_head](int s, const HeaderList& h) {
    callback_thread = std::this_thread::get_id();
    inner(s, h);
  };
  client_->send(ep_, {.method = "GET", .target = "/hello"}, std::move(cb));
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.failure, UpstreamFailure::kNone);
  EXPECT_EQ(r.body, "hello");
  // Shared: the server's one io thread ran both the server's handler and the client's callbacks.
  EXPECT_EQ(callback_thread == server_thread(), GetParam() == Threads::kShared);
  EXPECT_NE(callback_thread, std::this_thread::get_id());
}

TEST_P(UpstreamTest, TimersRunOnTheChosenContext) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<std::thread::id> ran_on;
  client_->run_after(1, [&] {
    std::lock_guard l(mu);
    ran_on = std::this_thread::get_id();
    cv.notify_all();
  });
  Result r;  // learns the server's io thread
  client_->send(ep_, {.method = "GET", .target = "/hello"}, r.callbacks());
  ASSERT_TRUE(r.wait());
  std::unique_lock l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(20), [&] { return ran_on.has_value(); }));
  EXPECT_EQ(*ran_on == server_thread(), GetParam() == Threads::kShared);
}

INSTANTIATE_TEST_SUITE_P(Threads, UpstreamTest, ::testing::Values(Threads::kOwn, Threads::kOwnTwo, Threads::kShared),
                         [](const ::testing::TestParamInfo<Threads>& p) {
                           return p.param == Threads::kOwn      ? std::string("OwnThread")
                                  : p.param == Threads::kOwnTwo ? std::string("TwoOwnThreads")
                                                                : std::string("SharedContext");
                         });


// The router's layout: a front end with two io threads (one io_context each) whose handlers send upstream
// calls on a client started with the front end's contexts. Each call runs on the thread of the connection
// that sent it (the callback that answers the client runs there), both threads carry calls, and each
// context keeps pooled connections of its own, reused: connections opened stay at the concurrency, not
// the request count.
TEST(UpstreamSharedContexts, CallsRunOnTheSendersThreadAndEachContextPoolsItsOwn) {
  server::http::Router replica_routes;
  replica_routes.add("GET", "/hello", [](HttpRequest&&, const ExchangePtr& ex) { ex->respond(HttpResponse{.body = "hello"}); });
  server::http::HttpServer replica(server::http::ServerConfig{.port = 0, .n_io_threads = 1}, std::move(replica_routes));
  ASSERT_TRUE(replica.start().ok());
  const Endpoint replica_ep{.host = "127.0.0.1", .port = replica.port()};

  UpstreamClient relay(UpstreamConfig{.n_threads = 0});
  std::mutex mu;
  std::set<std::thread::id> handler_threads;
  std::atomic<int> off_thread{0};
  server::http::Router front_routes;
  front_routes.add("GET", "/relay", [&](HttpRequest&&, const ExchangePtr& ex) {
    const auto tid = std::this_thread::get_id();
    {
      std::lock_guard l(mu);
      handler_threads.insert(tid);
    }
    relay.send(replica_ep, {.method = "GET", .target = "/hello"},
               {.on_head = nullptr, .on_data = nullptr, .on_done = [ex, tid, &off_thread](UpstreamFailure f, const std::string&) {
                  if (std::this_thread::get_id() != tid) off_thread.fetch_add(1);
                  ex->respond(HttpResponse{.status = f == UpstreamFailure::kNone ? 200 : 502});
                }});
  });
  server::http::HttpServer front(
      server::http::ServerConfig{.port = 0, .n_io_threads = 2, .drain_timeout_ms = 100, .context_per_thread = true},
      std::move(front_routes));
  ASSERT_EQ(front.io_contexts().size(), 2u);
  ASSERT_EQ(front.threads_per_context(), 1);
  relay.start(front.io_contexts(), front.threads_per_context());
  ASSERT_TRUE(front.start().ok());

  UpstreamClient client(UpstreamConfig{.n_threads = 1});  // the test's own client of the front end
  client.start();
  constexpr int kConcurrent = 6, kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::unique_ptr<Result>> results;
    for (int i = 0; i < kConcurrent; ++i) {
      results.push_back(std::make_unique<Result>());
      client.send(Endpoint{.host = "127.0.0.1", .port = front.port()}, {.method = "GET", .target = "/relay"},
                  results.back()->callbacks());
    }
    for (auto& r : results) {
      ASSERT_TRUE(r->wait());
      EXPECT_EQ(r->failure, UpstreamFailure::kNone);
      EXPECT_EQ(r->status, 200);
    }
  }
  EXPECT_EQ(off_thread.load(), 0);
  {
    std::lock_guard l(mu);
    EXPECT_EQ(handler_threads.size(), 2u);  // the front end's connections were dealt to both contexts
  }
  EXPECT_GE(relay.n_connects(), 2);  // a pooled connection per context at least
  EXPECT_LE(relay.n_connects(), kConcurrent);
  EXPECT_EQ(relay.n_idle(), relay.n_connects());
  client.stop();
  relay.stop();
  front.stop();
  replica.stop();
}

}  // namespace
}  // namespace keel::router
