// The HTTP layer alone (no Api): a real HttpServer on a loopback port, raw HTTP over sockets.
// Keep-alive, limits, timeouts, malformed input, streams from another thread, disconnect
// detection and graceful stop.
#include "server/http/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "server/http/sse.h"
#include "test_http_client.h"

namespace keel::server::http {
namespace {

using test::RawClient;
using namespace std::chrono_literals;

// Routes used by the tests; `streams` lets a test drive a stream from its own thread.
struct Fixture {
  std::atomic<int> n_disconnects{0};
  std::promise<ExchangePtr> stream_exchange;
  std::promise<ExchangePtr> held_exchange;

  Router router() {
    Router r;
    r.add("GET", "/hello", [](HttpRequest&& req, const ExchangePtr& ex) {
      ex->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = "hello " + req.query});
    });
    r.add("POST", "/echo", [](HttpRequest&& req, const ExchangePtr& ex) {
      ex->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = req.body});
    });
    r.add("GET", "/stream", [this](HttpRequest&&, const ExchangePtr& ex) {
      ex->on_disconnect([this] { ++n_disconnects; });
      ex->begin_stream(200, "text/event-stream", {});
      stream_exchange.set_value(ex);
    });
    r.add("GET", "/hold", [this](HttpRequest&&, const ExchangePtr& ex) {
      ex->on_disconnect([this] { ++n_disconnects; });
      held_exchange.set_value(ex);
    });
    return r;
  }
};

// n_io_threads < 0: that many threads with an io_context each (context_per_thread).
ServerConfig base_config(int32_t n_io_threads) {
  return ServerConfig{.host = "127.0.0.1",
                      .port = 0,
                      .n_io_threads = std::abs(n_io_threads),
                      .max_body_bytes = 1024,
                      .header_timeout_ms = 500,
                      .body_timeout_ms = 500,
                      .idle_timeout_ms = 800,
                      .drain_timeout_ms = 3000,
                      .context_per_thread = n_io_threads < 0};
}

// Every test runs with one io thread (connections then run on the io_context's executor, without
// strands), with two sharing one io_context (a strand per connection), and with two that run an
// io_context each (context_per_thread: connections dealt to them in turn, no strand).
class HttpServerTest : public ::testing::TestWithParam<int32_t> {
 protected:
  ServerConfig test_config() const { return base_config(GetParam()); }
};

TEST_P(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send(test::get("/hello?i=" + std::to_string(i))));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello i=" + std::to_string(i));
    EXPECT_EQ(r->headers["connection"], "keep-alive");
  }
  // Two pipelined requests in one write are answered in order.
  ASSERT_TRUE(c.send(test::post_json("/echo", "one") + test::post_json("/echo", "two")));
  auto a = c.read_response();
  auto b = c.read_response();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->body, "one");
  EXPECT_EQ(b->body, "two");
}

// A handler outside a request's dispatch (here posted work; in the router, upstream callbacks and
// timers) that throws must not end the io thread: it is counted and every thread keeps serving.
TEST_P(HttpServerTest, AThrowingHandlerIsCountedAndTheIoThreadsRunOn) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  const int64_t before = handler_exceptions();
  int64_t posted = 0;
  for (auto* ioc : server.io_contexts()) {
    for (int32_t t = 0; t < server.threads_per_context(); ++t, ++posted) {
      boost::asio::post(*ioc, [] { throw std::runtime_error("injected"); });
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (handler_exceptions() < before + posted && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(handler_exceptions(), before + posted);
  for (int i = 0; i < 4; ++i) {  // new connections, dealt to every context in turn, are all served
    RawClient c(server.port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.send(test::get("/hello?n=" + std::to_string(i))));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, "hello n=" + std::to_string(i));
  }
}

TEST_P(HttpServerTest, ConnectionCloseIsHonoured) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(test::get("/hello", "Connection: close\r\n")));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(c.wait_closed(2000));
}

TEST_P(HttpServerTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(test::get("/nope")));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  ASSERT_TRUE(c.send(test::get("/echo")));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->headers["allow"], "POST");
}

// Requests pipelined in one write (parsed from the buffer without a read), a request whose bytes come
// in pieces (header and body split: the asynchronous reads take over), and a request that arrives while
// another is in flight (the watch reads it) are all answered, in order, on one connection.
TEST_P(HttpServerTest, PipelinedSplitAndEarlyRequestsAreAnsweredInOrder) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(test::post_json("/echo", "first") + test::get("/hello?x=2") + test::post_json("/echo", "third")));
  for (const char* want : {"first", "hello x=2", "third"}) {
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value()) << want;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, want);
  }
  const std::string split = test::post_json("/echo", "in pieces");
  size_t from = 0;
  for (size_t at : {size_t{5}, split.find("\r\n\r\n") + 2, split.size() - 3, split.size()}) {
    ASSERT_TRUE(c.send(split.substr(from, at - from)));
    from = at;
    std::this_thread::sleep_for(20ms);
  }
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "in pieces");
  // The next request goes out while /hold still owes its answer: the watch buffers it, and it is served
  // once the held exchange answers.
  ASSERT_TRUE(c.send(test::get("/hold")));
  auto held = f.held_exchange.get_future().get();
  ASSERT_TRUE(c.send(test::get("/hello?x=after")));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.n_disconnects.load(), 0);  // pipelined bytes are not a disconnect
  held->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = "held"});
  for (const char* want : {"held", "hello x=after"}) {
    auto a = c.read_response();
    ASSERT_TRUE(a.has_value()) << want;
    EXPECT_EQ(a->body, want);
  }
}

TEST_P(HttpServerTest, BodyOverTheLimitIs413) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.send(test::post_json("/echo", std::string(2000, 'x'))));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 413);
    EXPECT_TRUE(c.wait_closed(2000));
  }
  {  // chunked request bodies count too
    RawClient c(server.port());
    std::string req = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 3; ++i) req += "200\r\n" + std::string(512, 'y') + "\r\n";
    req += "0\r\n\r\n";
    ASSERT_TRUE(c.send(req));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 413);
  }
  {  // exactly at the limit passes
    RawClient c(server.port());
    ASSERT_TRUE(c.send(test::post_json("/echo", std::string(1024, 'z'))));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body.size(), 1024u);
  }
}

TEST_P(HttpServerTest, TruncatedBodyIs400AndStalledBodyTimesOut) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly-a-part"));
    c.shutdown_write();
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 400);
  }
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly-a-part"));
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.wait_closed(3000));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 400ms);
  }
}

TEST_P(HttpServerTest, MalformedRequestIs400AndHeaderAndIdleTimeoutsClose) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.send("THIS IS NOT HTTP\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 400);
  }
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\nHost: x\r\n"));  // headers never end
    EXPECT_TRUE(c.wait_closed(3000));
  }
  {
    RawClient c(server.port());
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.wait_closed(3000));  // says nothing: idle timeout
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 700ms);
  }
  {
    RawClient c(server.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'h') + "\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 431);
  }
}

// The idle timeout counts from each answer (the lazy idle timer re-arms when an exchange moved the deadline):
// requests 500 ms apart outlive several idle timeouts of 800 ms counted from the connection's start, and
// the connection closes about 800 ms after its last answer.
TEST_P(HttpServerTest, IdleTimeoutCountsFromTheLastAnswer) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(500ms);
    ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")) << "request " << i;
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value()) << "request " << i;
    EXPECT_EQ(r->status, 200);
  }
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.wait_closed(3000));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 700ms);
  EXPECT_LE(waited, 2500ms);
}

TEST_P(HttpServerTest, Expect100ContinueGetsAnInterimResponse) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_TRUE(c.read_until([](const std::string& b) { return b.find("100 Continue") != std::string::npos; }));
  ASSERT_TRUE(c.send("hello"));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
}

TEST_P(HttpServerTest, StreamPushedFromAnotherThreadArrivesInOrderAndKeepsTheConnection) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(test::get("/stream")));
  auto ex = f.stream_exchange.get_future().get();
  std::thread producer([ex] {
    for (int i = 0; i < 50; ++i) ex->push(sse_event(std::to_string(i)));
    ex->push(std::string(sse_done()));
    ex->end_stream();
  });
  auto r = c.read_response();
  producer.join();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->headers["content-type"], "text/event-stream");
  EXPECT_EQ(r->headers["transfer-encoding"], "chunked");
  std::string expected;
  for (int i = 0; i < 50; ++i) expected += "data: " + std::to_string(i) + "\n\n";
  expected += "data: [DONE]\n\n";
  EXPECT_EQ(r->body, expected);
  EXPECT_EQ(f.n_disconnects.load(), 0);
  ASSERT_TRUE(c.send(test::get("/hello")));  // same connection still serves
  auto again = c.read_response();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, 200);
}

// A push made on the stream's own strand, with none of the exchange's earlier calls queued, is written
// before the code that made it returns (the router's peer feed and proxy rely on it). With an earlier call
// still queued (here: a push posted from another thread while the strand is busy), it waits behind that
// call, so the order holds and the handler answers "late" after 1 s. Both ways are checked, so each can fail.
TEST_P(HttpServerTest, PushOnTheStrandLeavesBeforeTheCodeThatMadeItReturnsUnlessAnEarlierCallIsQueued) {
  for (bool queued_before : {false, true}) {
    std::promise<ExchangePtr> feed_exchange;
    std::atomic<bool> seen{false};
    Router r;
    r.add("GET", "/feed", [&](HttpRequest&&, const ExchangePtr& ex) {
      ex->begin_stream(200, "text/event-stream", {});
      feed_exchange.set_value(ex);
    });
    ExchangePtr feed;
    r.add("GET", "/poke", [&](HttpRequest&&, const ExchangePtr& ex) {
      feed->dispatch([&seen, feed, ex, queued_before] {  // on the feed's strand
        if (queued_before) std::thread([feed] { feed->push(sse_event("early")); }).join();  // posted: we hold the strand
        feed->push(sse_event("poke"));
        const auto until = std::chrono::steady_clock::now() + 1s;
        while (!seen.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
        ex->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = seen.load() ? "seen" : "late"});
      });
    });
    HttpServer server(test_config(), std::move(r));
    ASSERT_TRUE(server.start().ok());
    RawClient a(server.port()), b(server.port());
    ASSERT_TRUE(a.send(test::get("/feed")));
    feed = feed_exchange.get_future().get();
    ASSERT_TRUE(a.read_until([](const std::string& buf) { return buf.find("\r\n\r\n") != std::string::npos; }));
    ASSERT_TRUE(b.send(test::get("/poke")));
    const bool got =
        a.read_until([](const std::string& buf) { return buf.find("data: poke") != std::string::npos; }, 500);
    seen.store(got);
    auto answer = b.read_response();
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(got, !queued_before) << "queued before " << queued_before;
    EXPECT_EQ(answer->body, queued_before ? "late" : "seen") << "queued before " << queued_before;
    if (queued_before) {  // both arrive, in call order
      std::string bytes;
      ASSERT_TRUE(a.read_until([&bytes](const std::string& buf) {
        bytes = buf;
        return buf.find("data: poke") != std::string::npos;
      }));
      EXPECT_LT(bytes.find("data: early"), bytes.find("data: poke"));
    }
    feed->end_stream();
    server.stop();
  }
}

// A push that runs at once on the strand and overflows the stream buffer disconnects the client; the
// disconnect callback must not run inside that push, whose caller may hold a lock the callback takes (the
// router's ProxyRequest does): it runs afterwards, once.
TEST_P(HttpServerTest, DisconnectFoundInsideACallRunsItsCallbackAfterTheCall) {
  std::atomic<bool> inside{false};
  std::atomic<int> n_callbacks{0};
  std::atomic<bool> ran_inside{false};
  std::promise<void> handled;
  Router r;
  r.add("GET", "/flood", [&](HttpRequest&&, const ExchangePtr& ex) {
    ex->on_disconnect([&] {
      ran_inside.store(inside.load());
      n_callbacks.fetch_add(1);
    });
    ex->begin_stream(200, "text/event-stream", {});  // its write is in flight: the push below piles up
    inside.store(true);
    ex->push(std::string(4096, 'x'));
    inside.store(false);
    handled.set_value();
  });
  auto config = test_config();
  config.max_stream_buffer_bytes = 1024;
  HttpServer server(config, std::move(r));
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(test::get("/flood")));
  handled.get_future().get();
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (n_callbacks.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(n_callbacks.load(), 1);
  EXPECT_FALSE(ran_inside.load());
}

TEST_P(HttpServerTest, ClientDisconnectMidStreamFiresTheCallbackAtOnce) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  auto c = std::make_unique<RawClient>(server.port());
  ASSERT_TRUE(c->send(test::get("/stream")));
  auto ex = f.stream_exchange.get_future().get();
  ex->push(sse_event("first"));
  ASSERT_TRUE(c->read_until([](const std::string& b) { return b.find("first") != std::string::npos; }));
  c.reset();  // the client goes away while nothing is being written
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (f.n_disconnects.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(f.n_disconnects.load(), 1);
  ex->push(sse_event("after"));  // harmless no-ops now
  ex->end_stream();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.n_disconnects.load(), 1);
  // A callback registered after the disconnect runs at once.
  std::atomic<bool> late{false};
  ex->on_disconnect([&] { late = true; });
  deadline = std::chrono::steady_clock::now() + 2s;
  while (!late.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(late.load());
}

TEST_P(HttpServerTest, DisconnectWhileWaitingForANonStreamedAnswerFiresTheCallback) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  auto c = std::make_unique<RawClient>(server.port());
  ASSERT_TRUE(c->send(test::get("/hold")));
  auto ex = f.held_exchange.get_future().get();
  c.reset();
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (f.n_disconnects.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(f.n_disconnects.load(), 1);
}

TEST_P(HttpServerTest, GracefulStopLetsInFlightFinishAndRefusesNewConnections) {
  Fixture f;
  HttpServer server(test_config(), f.router());
  ASSERT_TRUE(server.start().ok());
  uint16_t port = server.port();
  RawClient idle(port);
  RawClient busy(port);
  ASSERT_TRUE(busy.send(test::get("/hold")));
  auto ex = f.held_exchange.get_future().get();
  auto stopped = std::async(std::launch::async, [&] { server.stop(); });
  EXPECT_TRUE(idle.wait_closed(2000));                              // idle keep-alive connections close at once
  EXPECT_EQ(stopped.wait_for(200ms), std::future_status::timeout);  // waits for the held exchange
  RawClient late(port);
  EXPECT_TRUE(!late.connected() || late.wait_closed(2000));
  ex->respond(HttpResponse{.status = 200, .content_type = "text/plain", .body = "finished"});
  auto r = busy.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "finished");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_EQ(stopped.wait_for(3s), std::future_status::ready);
  EXPECT_EQ(f.n_disconnects.load(), 0);
}

TEST_P(HttpServerTest, StopClosesExchangesStillBusyAfterTheDrainTimeout) {
  Fixture f;
  auto cfg = test_config();
  cfg.drain_timeout_ms = 200;
  HttpServer server(cfg, f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient busy(server.port());
  ASSERT_TRUE(busy.send(test::get("/hold")));
  auto ex = f.held_exchange.get_future().get();
  server.stop();
  EXPECT_EQ(f.n_disconnects.load(), 1);
  EXPECT_TRUE(busy.wait_closed(1000));
  ex->respond(HttpResponse{});  // no-op after stop
}

// stop() posts the acceptor's close to the io threads and then stops them: with nothing to drain
// the close could be dropped, leaving the port listening (connections queued, never served) until
// the object was destroyed. After stop() the port must be free to bind again, every time.
TEST_P(HttpServerTest, StopReleasesTheListeningPort) {
  for (int i = 0; i < 20; ++i) {
    HttpServer a(test_config(), Router{});
    ASSERT_TRUE(a.start().ok());
    a.stop();
    ServerConfig same = test_config();
    same.port = a.port();
    HttpServer b(same, Router{});
    ASSERT_TRUE(b.start().ok()) << "port " << same.port << " still held after stop(), round " << i;
  }
}

TEST_P(HttpServerTest, ConfigIsValidatedAndPortClashIsAnError) {
  ServerConfig bad = test_config();
  bad.n_io_threads = 0;
  HttpServer s1(bad, Router{});
  EXPECT_EQ(s1.start().code(), ErrorCode::kInvalidArgument);
  HttpServer a(test_config(), Router{});
  ASSERT_TRUE(a.start().ok());
  ServerConfig same = test_config();
  same.port = a.port();
  HttpServer b(same, Router{});
  Status s = b.start();
  EXPECT_EQ(s.code(), ErrorCode::kIo);
}

// --busy-poll-us: io threads that poll before they sleep serve, stream and stop like sleeping ones. The
// waits past the poll window make them sleep and be woken by the next request or push.
TEST_P(HttpServerTest, BusyPollingThreadsServeStreamAndStop) {
  Fixture f;
  auto config = test_config();
  config.busy_poll_us = 300;
  HttpServer server(config, f.router());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send(test::get("/hello?i=" + std::to_string(i))));
    auto r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    std::this_thread::sleep_for(5ms);  // past the poll window: the threads sleep until the next request
  }
  ASSERT_TRUE(c.send(test::get("/stream")));
  auto ex = f.stream_exchange.get_future().get();
  std::thread producer([ex] {
    ex->push(sse_event("one"));
    std::this_thread::sleep_for(5ms);
    ex->push(sse_event("two"));
    ex->end_stream();
  });
  auto r = c.read_response();
  producer.join();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "data: one\n\ndata: two\n\n");
  server.stop();  // returns (a loop that missed the stop would hang here, and ctest's timeout fails it)
}

TEST_P(HttpServerTest, BusyPollOutsideItsRangeIsRefused) {
  for (int32_t us : {-1, 1'000'001}) {
    ServerConfig bad = test_config();
    bad.busy_poll_us = us;
    HttpServer s(bad, Router{});
    EXPECT_EQ(s.start().code(), ErrorCode::kInvalidArgument) << us;
  }
}

INSTANTIATE_TEST_SUITE_P(IoThreads, HttpServerTest, ::testing::Values(1, 2, -2));

// keel serve's layout (one io_context shared by the io threads): while a handler blocks its thread (as
// a long grammar compile does), the other thread serves every other connection. With a context per
// thread the connections dealt to the blocked thread would wait, which is why keel serve keeps this one.
TEST(HttpServerSharedContext, ABlockedHandlerLeavesEveryOtherConnectionServed) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> blocking{false};
  Router r;
  r.add("GET", "/block", [&](HttpRequest&&, const ExchangePtr& ex) {
    blocking.store(true);
    released.wait();  // holds this io thread
    ex->respond(HttpResponse{.body = "unblocked"});
  });
  r.add("GET", "/hello", [](HttpRequest&&, const ExchangePtr& ex) { ex->respond(HttpResponse{.body = "hi"}); });
  HttpServer server(base_config(2), std::move(r));
  ASSERT_TRUE(server.start().ok());
  struct Release {  // on a failed assertion too, before the server stops (it would wait for the handler)
    std::promise<void>& p;
    bool done = false;
    ~Release() {
      if (!done) p.set_value();
    }
  } guard{release};
  RawClient blocked(server.port());
  ASSERT_TRUE(blocked.send(test::get("/block")));
  for (int i = 0; i < 500 && !blocking.load(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(blocking.load());
  for (int i = 0; i < 4; ++i) {  // connections accepted after the blocked one, whichever thread takes them
    RawClient c(server.port());
    ASSERT_TRUE(c.send(test::get("/hello")));
    auto resp = c.read_response();
    ASSERT_TRUE(resp.has_value()) << "connection " << i;
    EXPECT_EQ(resp->body, "hi");
  }
  guard.done = true;
  release.set_value();
  auto resp = blocked.read_response();
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->body, "unblocked");
}

}  // namespace
}  // namespace keel::server::http

namespace keel::server::http {
namespace {

namespace net = boost::asio;

// A handler that re-posts itself: kept in a queue of such, they are a loop busy with ready handlers
// (as a router carrying hundreds of streams is). Counts its runs and notes at which run the server
// first had 1 and then `want` connections.
struct Spinner {
  net::io_context* ioc;
  HttpServer* server;
  std::atomic<bool>* stop;
  std::atomic<int64_t>* runs;
  std::atomic<int64_t>* first_at;
  std::atomic<int64_t>* all_at;
  int64_t want;
  void operator()() const {
    const int64_t r = runs->fetch_add(1) + 1;
    const int64_t n = server->n_connections();
    int64_t unset = -1;
    if (n >= 1) first_at->compare_exchange_strong(unset, r);
    unset = -1;
    if (n >= want) all_at->compare_exchange_strong(unset, r);
    if (!stop->load()) net::post(*ioc, *this);
  }
};

// Connections waiting in the backlog are all taken by one accept completion. An accept completion
// queues behind every ready handler, so taking one connection per completion made a burst of new
// connections wait one pass of the busy loop each (in the device's saturated stream runs: ~1 s for
// 512). Here: 40 connections queued while the io thread was held, behind 300 busy handlers, must all
// start within about one pass (300 runs), not 40 passes (~12,000).
TEST(HttpServerAccept, ABacklogIsTakenInOnePassOfABusyLoop) {
  Fixture f;
  HttpServer server(base_config(1), f.router());
  ASSERT_TRUE(server.start().ok());
  constexpr int kBusy = 300, kConns = 40;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> runs{0}, first_at{-1}, all_at{-1};
  struct Stop {  // on a failed assertion too: the spinners must end before the server stops
    std::atomic<bool>& s;
    ~Stop() { s.store(true); }
  } stop_guard{stop};
  net::io_context& ioc = server.io_context();
  for (int i = 0; i < kBusy; ++i) net::post(ioc, Spinner{&ioc, &server, &stop, &runs, &first_at, &all_at, kConns});
  std::promise<void> release;
  std::atomic<bool> held{false};
  net::post(ioc, [&] {
    held.store(true);
    release.get_future().wait();  // the io thread is held while the connections arrive
  });
  for (int i = 0; i < 500 && !held.load(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(held.load());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kConns; ++i) {
    clients.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  release.set_value();
  for (int i = 0; i < 1000 && all_at.load() < 0; ++i) std::this_thread::sleep_for(10ms);
  stop.store(true);
  ASSERT_GE(all_at.load(), 0) << "not every connection was accepted";
  EXPECT_LT(all_at.load() - first_at.load(), 2 * kBusy) << "first at run " << first_at << ", all at run " << all_at;
}

// With a context per thread, connections that arrive one at a time are dealt to every context in turn:
// the accept batch's last, empty try (would_block) must not use up a context's turn (it did, and with
// two contexts every such connection went to the first).
TEST(HttpServerAccept, ConnectionsArrivingOneByOneAreDealtToEveryContext) {
  Router r;
  r.add("GET", "/thread", [](HttpRequest&&, const ExchangePtr& ex) {
    ex->respond(HttpResponse{.body = std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()))});
  });
  HttpServer server(base_config(-2), std::move(r));
  ASSERT_TRUE(server.start().ok());
  std::vector<std::unique_ptr<RawClient>> clients;
  std::vector<std::string> threads;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_TRUE(clients.back()->send(test::get("/thread")));
    auto resp = clients.back()->read_response();  // answered: accepted before the next one connects
    ASSERT_TRUE(resp.has_value());
    threads.push_back(resp->body);
  }
  EXPECT_NE(threads[0], threads[1]);
  EXPECT_EQ(threads[0], threads[2]);
  EXPECT_EQ(threads[1], threads[3]);
}

}  // namespace
}  // namespace keel::server::http
