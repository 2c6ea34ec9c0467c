// The SSE parser (split anywhere, every line ending), OpenAI chunk reading and request bodies, and
// base-URL parsing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loadgen/openai_wire.h"
#include "loadgen/runner.h"
#include "loadgen/sse_parser.h"

namespace keel::loadgen {
namespace {

TEST(SseParser, EventsSurviveAnySplitAndLineEnding) {
  const std::string streams[] = {
      "data: {\"a\":1}\n\n: comment\n\ndata: line1\ndata: line2\n\nevent: x\ndata: [DONE]\n\n",
      "data: {\"a\":1}\r\n\r\n: comment\r\n\r\ndata: line1\r\ndata: line2\r\n\r\nevent: x\r\ndata: [DONE]\r\n\r\n",
      "data: {\"a\":1}\r\r: comment\r\rdata: line1\rdata: line2\r\revent: x\rdata: [DONE]\r\r",
  };
  const std::vector<std::string> want = {"{\"a\":1}", "line1\nline2", "[DONE]"};
  for (const auto& s : streams) {
    for (size_t split = 0; split <= s.size(); ++split) {
      SseParser p;
      std::vector<std::string> got;
      p.feed(std::string_view(s).substr(0, split), got);
      p.feed(std::string_view(s).substr(split), got);
      EXPECT_EQ(got, want) << "split at " << split;
      EXPECT_FALSE(p.has_pending());
    }
    SseParser byte_by_byte;
    std::vector<std::string> got;
    for (char c : s) byte_by_byte.feed(std::string_view(&c, 1), got);
    EXPECT_EQ(got, want);
  }
}

TEST(SseParser, DataWithoutSpaceAndUnfinishedEvent) {
  SseParser p;
  std::vector<std::string> got;
  p.feed("data:x\n\ndata: y\n", got);
  EXPECT_EQ(got, std::vector<std::string>{"x"});
  EXPECT_TRUE(p.has_pending());
}

TEST(StreamChunk, ChatCompletionsUsageDoneAndErrors) {
  auto chat = parse_stream_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->text, "Hi");
  auto role_only = parse_stream_chunk(R"({"choices":[{"delta":{"role":"assistant"}}]})");
  ASSERT_TRUE(role_only.ok());
  EXPECT_EQ(role_only->text, "");
  auto comp = parse_stream_chunk(R"({"choices":[{"text":" there","finish_reason":null}]})");
  ASSERT_TRUE(comp.ok());
  EXPECT_EQ(comp->text, " there");
  auto usage = parse_stream_chunk(
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":8}}})");
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->completion_tokens, 5);
  EXPECT_EQ(usage->prompt_tokens, 12);
  EXPECT_EQ(usage->cached_tokens, 8);
  auto null_usage = parse_stream_chunk(R"({"choices":[{"text":"a"}],"usage":null})");
  ASSERT_TRUE(null_usage.ok());
  EXPECT_FALSE(null_usage->completion_tokens.has_value());
  EXPECT_TRUE(parse_stream_chunk("[DONE]")->done);
  EXPECT_EQ(parse_stream_chunk(R"({"error":{"message":"boom"}})")->error, "boom");
  EXPECT_FALSE(parse_stream_chunk("not json").ok());
  EXPECT_FALSE(parse_stream_chunk("[1,2]").ok());
}

TEST(Body, ChatAndCompletionsCarryTheWorkload) {
  RequestSpec spec{.system = "SYS", .user = "Q?", .max_tokens = 7};
  BodyOptions opt{.model = "m", .temperature = 0.5, .extra_json = R"({"ignore_eos": true, "temperature": 0})"};
  auto chat = nlohmann::json::parse(make_body(Endpoint::kChat, spec, opt));
  EXPECT_EQ(chat["model"], "m");
  EXPECT_EQ(chat["max_tokens"], 7);
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["stream_options"]["include_usage"], true);
  EXPECT_EQ(chat["messages"].size(), 2u);
  EXPECT_EQ(chat["messages"][0]["role"], "system");
  EXPECT_EQ(chat["messages"][1]["content"], "Q?");
  EXPECT_EQ(chat["ignore_eos"], true);
  EXPECT_EQ(chat["temperature"], 0);  // extra body wins
  auto comp = nlohmann::json::parse(make_body(Endpoint::kCompletions, spec, opt));
  EXPECT_EQ(comp["prompt"], "SYS\n\nQ?");
  EXPECT_FALSE(comp.contains("messages"));
  spec.system.clear();
  EXPECT_EQ(nlohmann::json::parse(make_body(Endpoint::kChat, spec, {}))["messages"].size(), 1u);
  EXPECT_TRUE(check_extra_json("").ok());
  EXPECT_FALSE(check_extra_json("[1]").ok());
  EXPECT_FALSE(check_extra_json("{").ok());
  EXPECT_EQ(endpoint_path(*parse_endpoint("completions")), "/v1/completions");
  EXPECT_FALSE(parse_endpoint("embeddings").ok());
}

TEST(ModelIds, ReadsTheList) {
  auto ids = parse_model_ids(R"({"object":"list","data":[{"id":"a"},{"id":"b"},{"x":1}]})");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(parse_model_ids("{}").ok());
  EXPECT_FALSE(parse_model_ids("<html>").ok());
}

TEST(ParseUrl, HostPortAndPrefix) {
  auto t = parse_url("http://127.0.0.1:8080");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->base_path, "");
  auto v1 = parse_url("http://localhost:9/api/v1/");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->base_path, "/api");
  EXPECT_EQ(parse_url("http://example")->port, 80);
  EXPECT_FALSE(parse_url("https://x:1").ok());
  EXPECT_FALSE(parse_url("http://:80").ok());
  EXPECT_FALSE(parse_url("http://x:0").ok());
  EXPECT_FALSE(parse_url("http://x:99999").ok());
  EXPECT_FALSE(parse_url("http://x:8a").ok());
  EXPECT_FALSE(parse_url("localhost:8000").ok());
}

}  // namespace
}  // namespace keel::loadgen
