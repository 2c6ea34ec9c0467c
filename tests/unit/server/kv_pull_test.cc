// The Api's side of KV pulls over real HTTP: a hinted request fetches the source's export, imports it
// and only then reaches the engine; a request of the same prefix that arrives while that pull runs
// waits for it (it reaches the engine after the import, not before); a second hinted request of the
// prefix waits too instead of fetching it again. The source is a real HttpServer whose export the test
// holds until it releases it; the engine is the ReplayEngine double, the import a recording hook.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "replay_engine.h"
#include "server/api.h"
#include "server/kv_wire.h"
#include "test_http_client.h"

namespace keel::server {
namespace {

using namespace std::chrono_literals;

constexpr const char* kTemplate =
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";

KvIdentity identity() {
  return {.model = "feedfacefeedface", .backend = "cpu", .kv_dtype = "f32",
          .n_layers = 1, .n_kv_heads = 1, .head_dim = 2, .n_vocab = 258};
}

// The holder: answers /v1/kv/export with the requested tokens' "KV" once released.
struct Source {
  std::promise<void> asked_promise, release_promise;
  std::shared_future<void> release = release_promise.get_future().share();
  std::future<void> asked = asked_promise.get_future();
  std::atomic<int> n_exports{0};
  std::unique_ptr<http::HttpServer> server;

  Source() {
    http::Router r;
    r.add("POST", "/v1/kv/export", [this](http::HttpRequest&& req, const http::ExchangePtr& ex) {
      auto parsed = parse_kv_export_request(req.body, 258, 4096);
      std::thread([this, ex, tokens = parsed.ok() ? parsed.value().tokens : std::vector<int32_t>()] {
        if (n_exports.fetch_add(1) == 0) asked_promise.set_value();
        release.wait();
        sched::KvPrefix p;
        p.tokens = tokens;
        p.data.assign(tokens.size() * static_cast<size_t>(identity().floats_per_token()), 0.5f);
        ex->dispatch([ex, body = encode_kv(identity(), p)] {
          ex->respond(http::HttpResponse{.status = 200, .content_type = std::string(kKvWireContentType), .body = body});
        });
      }).detach();
    });
    server = std::make_unique<http::HttpServer>(http::ServerConfig{.host = "127.0.0.1", .port = 0, .n_io_threads = 1},
                                                std::move(r), http::ServerHooks{});
    EXPECT_TRUE(server->start().ok());
  }
  ~Source() { server->stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }
};

class KvPullApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto compiled = tokenizer::ChatTemplate::compile(kTemplate);
    ASSERT_TRUE(compiled.ok());
    template_ = std::make_unique<tokenizer::ChatTemplate>(std::move(compiled).value());
    ApiConfig config;
    config.model_names = {"test-model"};
    config.max_context_tokens = 4096;
    api_ = std::make_unique<Api>(config, engine_, tok_, template_.get());
    api_->set_kv_transfer({.identity = identity(),
                           .export_prefix = [](std::span<const int32_t>, int64_t) { return sched::KvPrefix{}; },
                           .import_prefix = [this](const sched::KvPrefix& p) -> Result<int64_t> {
                             std::lock_guard lock(mu_);
                             imports_.push_back(p.n_tokens());
                             submitted_at_import_ = engine_.submitted().size();
                             return p.n_tokens();
                           }});
    http::Router router;
    api_->add_routes(router);
    server_ = std::make_unique<http::HttpServer>(http::ServerConfig{.host = "127.0.0.1", .port = 0, .n_io_threads = 2},
                                                 std::move(router), api_->hooks());
    ASSERT_TRUE(server_->start().ok());
    api_->set_ready();
  }
  void TearDown() override { server_->stop(); }

  // A chat whose system prompt (60 byte-tokens) is the shared prefix.
  std::future<test::RawResponse> chat(const std::string& user, const std::string& source = "") {
    const std::string body = R"({"model":"test-model","messages":[{"role":"system","content":")" +
                             std::string(60, 'S') + R"("},{"role":"user","content":")" + user + R"("}]})";
    const std::string headers = source.empty() ? "" : "X-Keel-Kv-Source: " + source + "\r\n";
    const uint16_t port = server_->port();
    return std::async(std::launch::async, [port, body, headers] {
      test::RawClient c(port);
      EXPECT_TRUE(c.send(test::post_json("/v1/chat/completions", body, headers)));
      return c.read_response().value_or(test::RawResponse{});
    });
  }
  double metric(const std::string& line_start) {
    test::RawClient c(server_->port());
    EXPECT_TRUE(c.send(test::get("/metrics")));
    const std::string text = c.read_response().value_or(test::RawResponse{}).body;
    const size_t at = text.find(line_start + " ");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + line_start.size() + 1));
  }

  test::ByteTokenizer tok_;
  test::ReplayEngine engine_{"ok"};
  std::unique_ptr<tokenizer::ChatTemplate> template_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<http::HttpServer> server_;
  std::mutex mu_;
  std::vector<int64_t> imports_;
  size_t submitted_at_import_ = 0;
};

TEST_F(KvPullApiTest, RequestsOfAPrefixBeingPulledWaitForTheImport) {
  Source source;
  auto hinted = chat("first", source.url());
  ASSERT_EQ(source.asked.wait_for(10s), std::future_status::ready) << "the pull never reached the source";
  auto plain = chat("second");                  // no hint: the router took this replica for a holder
  auto hinted_again = chat("third", source.url());  // a hint for a prefix already on its way
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(engine_.submitted().size(), 0u) << "a request reached the engine before the prefix arrived";
  source.release_promise.set_value();
  for (auto* f : {&hinted, &plain, &hinted_again}) {
    auto r = f->get();
    EXPECT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(source.n_exports.load(), 1) << "the prefix was fetched more than once";
  {
    std::lock_guard lock(mu_);
    ASSERT_EQ(imports_.size(), 1u);
    EXPECT_GE(imports_[0], 60);
    EXPECT_EQ(submitted_at_import_, 0u);
  }
  EXPECT_EQ(engine_.submitted().size(), 3u);
  EXPECT_EQ(metric(R"(keel_kv_pulls_total{outcome="imported"})"), 1);
  EXPECT_EQ(metric(R"(keel_kv_pulls_total{outcome="waited"})"), 2);
}

TEST_F(KvPullApiTest, AnUnrelatedPromptDoesNotWait) {
  Source source;
  auto hinted = chat("first", source.url());
  ASSERT_EQ(source.asked.wait_for(10s), std::future_status::ready);
  test::RawClient c(server_->port());
  ASSERT_TRUE(c.send(test::post_json("/v1/chat/completions",
                                     R"({"model":"test-model","messages":[{"role":"user","content":"other"}]})")));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;  // answered while the pull is still held
  source.release_promise.set_value();
  EXPECT_EQ(hinted.get().status, 200);
  EXPECT_EQ(metric(R"(keel_kv_pulls_total{outcome="waited"})"), 0);
}

}  // namespace
}  // namespace keel::server
