// The Api end to end over real HTTP: HttpServer on a loopback port, the Api's routes, a ReplayEngine
// test double that replays "Hello!" token by token, and a ByteTokenizer; raw HTTP from the test.
#include "server/api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <future>
#include <thread>

#include "replay_engine.h"
#include "test_http_client.h"

namespace keel::server {
namespace {

using nlohmann::json;
using test::RawClient;
using namespace std::chrono_literals;

constexpr const char* kTemplate =
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}";

class ApiTest : public ::testing::Test {
 protected:
  explicit ApiTest(std::chrono::milliseconds tick = 1ms) : engine_("Hello!", tick) {}

  void SetUp() override {
    auto compiled = tokenizer::ChatTemplate::compile(kTemplate);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    template_ = std::make_unique<tokenizer::ChatTemplate>(std::move(compiled).value());
    config_.model_names = {"test-model", "alias"};
    config_.max_context_tokens = 4096;
    api_ = std::make_unique<Api>(config_, engine_, tok_, template_.get());
    http::Router router;
    api_->add_routes(router);
    api_->set_flush_cache([this] {
      ++n_flushes_;
      return Status();
    });
    server_ = std::make_unique<http::HttpServer>(
        http::ServerConfig{.host = "127.0.0.1", .port = 0, .n_io_threads = 2, .max_body_bytes = max_body_bytes_},
        std::move(router), api_->hooks());
    ASSERT_TRUE(server_->start().ok());
    api_->set_ready();
  }
  void TearDown() override { server_->stop(); }

  test::RawResponse call(const std::string& raw) {
    RawClient c(server_->port());
    EXPECT_TRUE(c.send(raw));
    auto r = c.read_response();
    EXPECT_TRUE(r.has_value());
    return r.value_or(test::RawResponse{});
  }
  // SSE "data:" payloads of a stream body.
  static std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      size_t end = body.find("\n\n", pos);
      out.push_back(body.substr(pos + 6, end - pos - 6));
      pos = end;
    }
    return out;
  }

  ApiConfig config_;  // subclasses set fields before SetUp
  int64_t max_body_bytes_ = 4096;
  test::ByteTokenizer tok_;
  test::ReplayEngine engine_;
  std::unique_ptr<tokenizer::ChatTemplate> template_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<http::HttpServer> server_;
  std::atomic<int> n_flushes_{0};
};

TEST_F(ApiTest, ChatCompletionNonStreamed) {
  auto r = call(test::post_json("/v1/chat/completions",
                                R"({"model":"test-model","messages":[{"role":"user","content":"Hi"}],"seed":7,
                                    "temperature":0.5,"top_k":3,"stop":["zz"],"frequency_penalty":0.5,
                                    "logit_bias":{"65":10}})"));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello!");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  std::string prompt = "<|user|>Hi\n<|assistant|>";
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt.size() + 6);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  ASSERT_EQ(engine_.submitted().size(), 1u);
  const auto submitted = engine_.submitted();
  ASSERT_EQ(submitted.size(), 1u);
  const auto& req = submitted[0];
  EXPECT_EQ(std::string(req.prompt.begin(), req.prompt.end()), prompt);  // ByteTokenizer ids are bytes
  EXPECT_EQ(req.sampling.seed, 7u);
  EXPECT_FLOAT_EQ(req.sampling.temperature, 0.5f);
  EXPECT_EQ(req.sampling.top_k, 3);
  EXPECT_EQ(req.stop.stop_strings, std::vector<std::string>{"zz"});
  EXPECT_FLOAT_EQ(req.sampling.frequency_penalty, 0.5f);
  EXPECT_EQ(req.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{65, 10.0f}}));
  EXPECT_EQ(req.stop.max_tokens, 4096 - static_cast<int32_t>(prompt.size()));  // chat: rest of the context
}

TEST_F(ApiTest, ChatCompletionStreamedWithUsage) {
  auto r = call(test::post_json("/v1/chat/completions",
                                R"({"model":"alias","messages":[{"role":"user","content":"Hi"}],"max_tokens":3,
                                    "stream":true,"stream_options":{"include_usage":true}})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  auto events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 6u);
  EXPECT_EQ(events.back(), "[DONE]");
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["model"], "alias");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  std::string content;
  std::string finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json e = json::parse(events[i]);
    EXPECT_EQ(e["id"], first["id"]);
    const auto& ch = e["choices"][0];
    if (ch["delta"].contains("content")) content += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(content, "Hel");
  EXPECT_EQ(finish, "length");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
}

TEST_F(ApiTest, CompletionsWithTokenIdsLogprobsAndN) {
  auto r = call(test::post_json("/v1/completions",
                                R"({"model":"test-model","prompt":[72,105],"max_tokens":2,"n":2,"logprobs":2})"));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  ASSERT_EQ(j["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& c = j["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["text"], "He");
    EXPECT_EQ(c["finish_reason"], "length");
    EXPECT_EQ(c["logprobs"]["tokens"], json::array({"H", "e"}));
    EXPECT_FLOAT_EQ(c["logprobs"]["token_logprobs"][1].get<float>(), test::ReplayEngine::logprob_of('e'));
    EXPECT_EQ(c["logprobs"]["top_logprobs"][0].size(), 2u);
    EXPECT_EQ(c["logprobs"]["text_offset"], json::array({0, 1}));
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(engine_.submitted()[0].top_logprobs, 2);
  EXPECT_EQ(engine_.submitted()[0].n, 2);
}

TEST_F(ApiTest, CompletionsTextPromptGetsBosAndDefaultMaxTokens) {
  auto r = call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"ab","stream":true})"));
  ASSERT_EQ(r.status, 200);
  auto events = sse_payloads(r.body);
  std::string text;
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    json j = json::parse(e);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_FALSE(j.contains("usage"));
    text += j["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "Hello!");
  const auto submitted = engine_.submitted();
  ASSERT_EQ(submitted.size(), 1u);
  const auto& req = submitted[0];
  EXPECT_EQ(req.prompt, (std::vector<int32_t>{test::ByteTokenizer::kBos, 'a', 'b'}));
  EXPECT_EQ(req.stop.max_tokens, 16);
}

TEST_F(ApiTest, ChatLogprobsHaveOpenAiShape) {
  auto r = call(test::post_json("/v1/chat/completions",
                                R"({"model":"test-model","messages":[{"role":"user","content":"x"}],
                                    "logprobs":true,"top_logprobs":1,"max_tokens":1})"));
  ASSERT_EQ(r.status, 200) << r.body;
  json lp = json::parse(r.body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 1u);
  EXPECT_EQ(lp[0]["token"], "H");
  EXPECT_EQ(lp[0]["bytes"], json::array({72}));
  EXPECT_FLOAT_EQ(lp[0]["logprob"].get<float>(), test::ReplayEngine::logprob_of('H'));
  ASSERT_EQ(lp[0]["top_logprobs"].size(), 1u);
  EXPECT_EQ(lp[0]["top_logprobs"][0]["token"], "I");
}

TEST_F(ApiTest, NativeGenerate) {
  auto r = call(
      test::post_json("/generate", R"({"input_ids":[1,2,3],"sampling_params":{"max_new_tokens":4,"temperature":0}})"));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["text"], "Hell");
  EXPECT_EQ(j["output_ids"], json::array({'H', 'e', 'l', 'l'}));
  EXPECT_EQ(j["meta_info"]["finish_reason"]["type"], "length");
  EXPECT_EQ(j["meta_info"]["prompt_tokens"], 3);
  EXPECT_FLOAT_EQ(engine_.submitted()[0].sampling.temperature, 0.0f);

  r = call(test::post_json("/generate", R"({"text":"a","stream":true})"));
  ASSERT_EQ(r.status, 200);
  auto events = sse_payloads(r.body);
  ASSERT_EQ(events.back(), "[DONE]");
  json last = json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["meta_info"]["finish_reason"]["type"], "stop");
}

TEST_F(ApiTest, BadRequestsGetOpenAiErrors) {
  struct Case {
    std::string raw;
    int status;
    std::string param;  // "" = null
  };
  std::vector<Case> cases = {
      {test::post_json("/v1/chat/completions", "{not json"), 400, ""},
      {test::post_json("/v1/chat/completions", R"({"model":"test-model","messages":[]})"), 400, "messages"},
      {test::post_json("/v1/chat/completions", R"({"model":"nope","messages":[{"role":"user","content":"x"}]})"), 404,
       "model"},
      {test::post_json("/v1/chat/completions",
                       R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"temperature":"hot"})"),
       400, "temperature"},
      {test::post_json("/v1/chat/completions",
                       R"({"model":"test-model","messages":[{"role":"user","content":"x"}],
                           "response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"not":{}}}}})"),
       400, "response_format.json_schema.schema"},
      {test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x","regex":"(a"})"), 400, "regex"},
      {test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x","ebnf":"root ::= undefined"})"), 400,
       "ebnf"},
      {test::post_json("/v1/chat/completions",
                       R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"presence_penalty":5})"),
       400, "presence_penalty"},
      {test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x","max_tokens":5000})"), 400,
       "max_tokens"},
      {test::post_json("/v1/completions", R"({"model":"test-model","prompt":[300]})"), 400, "prompt[0]"},
      {test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x","bogus":1})"), 400, "bogus"},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", 415, ""},
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 415, ""},
      {test::post_json("/v1/completions", std::string(5000, ' ')), 413, ""},
      {test::get("/v1/completions"), 405, ""},
      {test::get("/v2/unknown"), 404, ""},
  };
  for (const auto& c : cases) {
    auto r = call(c.raw);
    EXPECT_EQ(r.status, c.status) << c.raw << "\n" << r.body;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    if (c.param.empty())
      EXPECT_TRUE(j["error"]["param"].is_null()) << r.body;
    else
      EXPECT_EQ(j["error"]["param"], c.param) << r.body;
  }
  EXPECT_TRUE(engine_.submitted().empty());
}

TEST_F(ApiTest, StructuredOutputAttachesAConstraintOrNamesWhatIsUnsupported) {
  auto ok = call(test::post_json("/v1/chat/completions",
                                 R"({"model":"test-model","messages":[{"role":"user","content":"x"}],
                                     "response_format":{"type":"json_schema","json_schema":{"name":"a",
                                     "schema":{"type":"object","properties":{"b":{"type":"integer"}}}}}})"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  auto native = call(test::post_json("/generate", R"({"text":"x","sampling_params":{"regex":"[a-z]+"}})"));
  EXPECT_EQ(native.status, 200) << native.body;
  auto plain = call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})"));
  EXPECT_EQ(plain.status, 200) << plain.body;
  auto sub = engine_.submitted();
  ASSERT_EQ(sub.size(), 3u);
  EXPECT_NE(sub[0].constraint, nullptr);
  EXPECT_NE(sub[1].constraint, nullptr);
  EXPECT_EQ(sub[2].constraint, nullptr);

  auto bad = call(test::post_json("/v1/chat/completions",
                                  R"({"model":"test-model","messages":[{"role":"user","content":"x"}],
                                      "response_format":{"type":"json_schema","json_schema":{"name":"a",
                                      "schema":{"type":"object","properties":{"b":{"$dynamicRef":"#node"}}}}}})"));
  EXPECT_EQ(bad.status, 400);
  json j = json::parse(bad.body);
  const std::string message = j["error"]["message"];
  EXPECT_NE(message.find("'$dynamicRef'"), std::string::npos) << message;
  EXPECT_NE(message.find("#/properties/b"), std::string::npos) << message;
  EXPECT_EQ(j["error"]["param"], "response_format.json_schema.schema");
  EXPECT_EQ(engine_.submitted().size(), 3u);
}

// One compile thread and room for one compile to wait: a test holds the thread with a job of its own.
class ApiCompileQueueTest : public ApiTest {
 protected:
  ApiCompileQueueTest() {
    config_.structured.compile_threads = 1;
    config_.structured.max_compiles_waiting = 1;
    max_body_bytes_ = 1 << 20;
  }
  // Holds the compile thread until release() (or the end of the test).
  struct Hold {
    explicit Hold(Api& api) {
      EXPECT_TRUE(api.compile_queue().try_post([this] {
        holding = true;
        gate.wait();
      }));
      while (!holding.load()) std::this_thread::yield();
    }
    ~Hold() { release(); }
    void release() {
      if (!released.exchange(true)) go.set_value();
    }
    std::promise<void> go;
    std::shared_future<void> gate = go.get_future().share();
    std::atomic<bool> holding{false};
    std::atomic<bool> released{false};
  };
  // `description_bytes` pads the schema (a large body; 100 KB is past the io thread's lookup limit).
  static std::string schema_chat(const std::string& property, size_t description_bytes = 0) {
    return test::post_json("/v1/chat/completions",
                           R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"response_format":)"
                           R"({"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object",)"
                           R"("description":")" + std::string(description_bytes, 'd') + R"(",)"
                           R"("properties":{")" + property + R"(":{"type":"integer"}}}}}})");
  }
  // The waiting client is answered 200, and the engine's latest (n-th) request carries its grammar.
  void expect_answered_under_a_grammar(RawClient& client, size_t n_submitted) {
    auto r = client.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200) << r->body;
    auto sub = engine_.submitted();
    ASSERT_EQ(sub.size(), n_submitted);
    EXPECT_NE(sub.back().constraint, nullptr);
  }
  void wait_for_waiting_compiles(size_t n) {
    for (int i = 0; i < 5000 && api_->compile_queue().waiting() != n; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(api_->compile_queue().waiting(), n);
  }
};

TEST_F(ApiCompileQueueTest, NewGrammarsWaitForACompileThreadAndNothingElseDoes) {
  ASSERT_EQ(call(schema_chat("cached")).status, 200);
  Hold hold(*api_);
  RawClient queued(server_->port());
  ASSERT_TRUE(queued.send(schema_chat("new")));
  wait_for_waiting_compiles(1);

  // The queue is full: another new grammar is refused at once, not queued without bound.
  auto busy = call(schema_chat("another"));
  EXPECT_EQ(busy.status, 429) << busy.body;
  EXPECT_EQ(busy.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(busy.body)["error"]["type"], "rate_limit_error");
  // A grammar compiled before and free text do not wait for the compile thread.
  EXPECT_EQ(call(schema_chat("cached")).status, 200);
  EXPECT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})")).status, 200);
  EXPECT_NE(call(test::get("/metrics")).body.find("keel_grammar_compiles_waiting 2"), std::string::npos);
  EXPECT_FALSE(queued.read_response(100).has_value()) << "answered before its grammar could compile";
  EXPECT_EQ(engine_.submitted().size(), 3u);

  hold.release();
  expect_answered_under_a_grammar(queued, 4);
}

TEST_F(ApiCompileQueueTest, LargeBodiesAreLookedUpOnACompileThreadEvenWhenCached) {
  auto first = call(schema_chat("big", 100'000));
  ASSERT_EQ(first.status, 200) << first.body;
  Hold hold(*api_);
  RawClient cached(server_->port());
  ASSERT_TRUE(cached.send(schema_chat("big", 100'000)));  // the same schema: cached, and still queued
  wait_for_waiting_compiles(1);
  EXPECT_EQ(call(schema_chat("small")).status, 429) << "the queue holds the large cached one";
  EXPECT_FALSE(cached.read_response(100).has_value());
  hold.release();
  expect_answered_under_a_grammar(cached, 2);
  // A bad schema in a large body is still a 400 naming it, from the compile thread.
  auto bad = call(test::post_json(
      "/v1/chat/completions",
      R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
      R"("json_schema":{"name":"s","schema":{"description":")" + std::string(100'000, 'd') + R"(","not":{}}}}})"));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(json::parse(bad.body)["error"]["param"], "response_format.json_schema.schema");
}

TEST_F(ApiCompileQueueTest, LargeBodiesAreParsedAndTokenizedOnACompileThread) {
  Hold hold(*api_);
  RawClient big(server_->port());
  const std::string prompt(100'000, 'w');  // 100k tokens of the byte tokenizer: over the context
  ASSERT_TRUE(big.send(
      test::post_json("/v1/completions", R"({"model":"test-model","prompt":")" + prompt + R"(","max_tokens":1})")));
  wait_for_waiting_compiles(1);
  EXPECT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})")).status, 200);
  EXPECT_FALSE(big.read_response(100).has_value()) << "parsed on the io thread";
  hold.release();
  auto r = big.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400) << r->body;
  json e = json::parse(r->body);
  EXPECT_EQ(e["error"]["param"], "prompt");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("more than the context"), std::string::npos) << r->body;
  EXPECT_EQ(engine_.submitted().size(), 1u);
}

TEST_F(ApiCompileQueueTest, AClientGoneDuringItsCompileNeverReachesTheEngine) {
  Hold hold(*api_);
  {
    RawClient gone(server_->port());
    ASSERT_TRUE(gone.send(schema_chat("new")));
    wait_for_waiting_compiles(1);
  }  // closed while its grammar waits
  for (int i = 0; i < 5000 && server_->n_connections() > 0; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(server_->n_connections(), 0) << "the server did not see the client go";
  hold.release();
  api_->compile_queue().wait_idle();
  EXPECT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})")).status, 200);
  auto sub = engine_.submitted();
  ASSERT_EQ(sub.size(), 1u) << "the compiled request was submitted for nobody";
  EXPECT_EQ(sub[0].constraint, nullptr);
}

TEST_F(ApiCompileQueueTest, DrainWaitsForCompilesSoTheirRequestsRun) {
  Hold hold(*api_);
  RawClient queued(server_->port());
  ASSERT_TRUE(queued.send(schema_chat("new")));
  wait_for_waiting_compiles(1);
  std::atomic<bool> drained{false};
  std::thread drain([&] {
    api_->begin_drain();
    drained = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(drained.load()) << "begin_drain returned with a compile still to run";
  EXPECT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})")).status, 503);
  hold.release();
  drain.join();
  EXPECT_TRUE(drained.load());
  auto r = queued.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;  // accepted before the drain, so it runs
}

TEST_F(ApiTest, QueueFullIs429WithRetryAfter) {
  engine_.set_reject(Status(ErrorCode::kResourceExhausted, "queue full"));
  auto r = call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})"));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "rate_limit_error");
}

TEST_F(ApiTest, EngineErrorMidStreamEndsTheStreamWithAnErrorEvent) {
  engine_.set_fail_after(2);
  auto r = call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x","stream":true})"));
  ASSERT_EQ(r.status, 200);
  auto events = sse_payloads(r.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  json err = json::parse(events[events.size() - 2]);
  EXPECT_EQ(err["error"]["message"], "replay engine failure");

  auto plain = call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})"));
  EXPECT_EQ(plain.status, 500);
}

TEST_F(ApiTest, ClientDisconnectMidStreamCancelsTheRequest) {
  auto c = std::make_unique<RawClient>(server_->port());
  ASSERT_TRUE(c->send(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x","stream":true})")));
  ASSERT_TRUE(c->read_until([](const std::string& b) { return b.find("text_completion") != std::string::npos; }));
  engine_.set_paused(true);
  c.reset();
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (engine_.cancelled().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(engine_.cancelled().size(), 1u);
  EXPECT_EQ(*engine_.cancelled().begin(), engine_.submitted()[0].id);
  engine_.set_paused(false);
}

TEST_F(ApiTest, HealthFollowsTheLifecycleAndDrainRefusesNewWork) {
  EXPECT_EQ(call(test::get("/health")).status, 200);
  api_->begin_drain();
  auto h = call(test::get("/health"));
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.headers["retry-after"], "1");
  EXPECT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})")).status, 503);
  EXPECT_TRUE(engine_.submitted().empty());
}

TEST_F(ApiTest, ModelsFlushCacheAndMetrics) {
  json models = json::parse(call(test::get("/v1/models")).body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][0]["id"], "test-model");

  EXPECT_EQ(call(test::post_json("/flush_cache", "")).status, 200);
  EXPECT_EQ(n_flushes_.load(), 1);

  engine_.set_cached_tokens(2);
  ASSERT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"abc"})")).status, 200);
  ASSERT_EQ(call(test::get("/nope")).status, 404);
  auto m = call(test::get("/metrics"));
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.headers["content-type"].find("text/plain"), std::string::npos);
  for (const char* line :
       {"keel_http_requests_total{path=\"/v1/completions\",code=\"200\"} 1",
        "keel_http_requests_total{path=\"other\",code=\"404\"} 1", "keel_prompt_tokens_total 4",
        "keel_cached_prompt_tokens_total 2", "keel_generation_tokens_total 6",
        "keel_time_to_first_token_seconds_count 1", "keel_inter_token_latency_seconds_count 5",
        "keel_e2e_request_latency_seconds_count 1", "keel_kv_usage_ratio 0.07", "keel_prefix_cache_hit_ratio 0.25",
        "keel_request_samples_finished_total{reason=\"stop\"} 1"}) {
    EXPECT_NE(m.body.find(line), std::string::npos) << line << "\n" << m.body;
  }
}

// With an admin key, a cache flush needs it even from loopback (without one, loopback is enough: above;
// other hosts get 403, tests/unit/server/admin_access_test.cc).
class ApiAdminKeyTest : public ApiTest {
 protected:
  ApiAdminKeyTest() { config_.admin_key = "s3cret"; }
};

TEST_F(ApiAdminKeyTest, FlushCacheNeedsTheKey) {
  for (const char* auth : {"", "Authorization: Bearer wrong\r\n", "Authorization: s3cret\r\n"}) {
    auto r = call(test::post_json("/flush_cache", "", auth));
    EXPECT_EQ(r.status, 401) << auth;
    json e = json::parse(r.body);
    EXPECT_EQ(e["error"]["type"], "authentication_error") << r.body;
    EXPECT_EQ(e["error"]["code"], "invalid_api_key") << r.body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find("Bearer <admin key>"), std::string::npos) << r.body;
  }
  EXPECT_EQ(n_flushes_.load(), 0);
  EXPECT_EQ(call(test::post_json("/flush_cache", "", "Authorization: Bearer s3cret\r\n")).status, 200);
  EXPECT_EQ(n_flushes_.load(), 1);
  // Generation needs no admin key.
  EXPECT_EQ(call(test::post_json("/v1/completions", R"({"model":"test-model","prompt":"x"})")).status, 200);
}

class ApiLoadingTest : public ApiTest {};

TEST_F(ApiLoadingTest, LoadingIs503) {
  Api loading(ApiConfig{.model_names = {"m"}}, engine_, tok_, nullptr);
  http::Router router;
  loading.add_routes(router);
  http::HttpServer server(http::ServerConfig{.host = "127.0.0.1", .port = 0}, std::move(router), loading.hooks());
  ASSERT_TRUE(server.start().ok());
  RawClient c(server.port());
  ASSERT_TRUE(c.send(test::get("/health")));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("loading"), std::string::npos);
  loading.set_ready();
  ASSERT_TRUE(
      c.send(test::post_json("/v1/chat/completions", R"({"model":"m","messages":[{"role":"user","content":"x"}]})")));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400);  // no chat template
  EXPECT_NE(r->body.find("no chat template"), std::string::npos);
  server.stop();
}

}  // namespace
}  // namespace keel::server
