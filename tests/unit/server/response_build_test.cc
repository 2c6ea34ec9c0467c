// Response bodies and stream chunks against OpenAI's documented shapes.
#include "server/openai/response_build.h"

#include <gtest/gtest.h>

namespace keel::server::openai {
namespace {

using nlohmann::json;

const ResponseHead kHead{.id = "chatcmpl-1", .created = 1700000000, .model = "m"};

const std::string& token_bytes(int32_t id) {
  static const std::vector<std::string> kTokens = {"he", "llo", "\xE2\x82", "\xAC"};  // € split over 2 tokens
  return kTokens[static_cast<size_t>(id)];
}

TEST(ResponseBuild, ChatCompletion) {
  Choice c{.index = 0,
           .text = "hello",
           .tokens = {0, 1},
           .logprobs = {{0, -0.5f}, {1, -1.0f}},
           .top_logprobs = {{{1, -2.0f}}, {{0, -3.0f}}},
           .finish = sched::FinishReason::kLength};
  json j = json::parse(chat_completion_json(kHead, std::span(&c, 1), Usage{10, 2, 4}, true, token_bytes));
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "m");
  const auto& ch = j["choices"][0];
  EXPECT_EQ(ch["index"], 0);
  EXPECT_EQ(ch["message"], json({{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(ch["finish_reason"], "length");
  const auto& lp = ch["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0]["token"], "he");
  EXPECT_EQ(lp[0]["logprob"], -0.5);
  EXPECT_EQ(lp[0]["bytes"], json::array({104, 101}));
  EXPECT_EQ(lp[0]["top_logprobs"][0], json({{"token", "llo"}, {"logprob", -2.0}, {"bytes", {108, 108, 111}}}));
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 10},
                              {"completion_tokens", 2},
                              {"total_tokens", 12},
                              {"prompt_tokens_details", {{"cached_tokens", 4}}}}));
}

TEST(ResponseBuild, TextCompletionLogprobs) {
  Choice c{.index = 1,
           .text = "hello",
           .tokens = {0, 1},
           .logprobs = {{0, -0.5f}, {1, -1.0f}},
           .top_logprobs = {{{1, -2.0f}}, {{0, -3.0f}}},
           .finish = sched::FinishReason::kStop};
  json j = json::parse(text_completion_json(kHead, std::span(&c, 1), Usage{1, 2, 0}, true, token_bytes));
  EXPECT_EQ(j["object"], "text_completion");
  const auto& ch = j["choices"][0];
  EXPECT_EQ(ch["index"], 1);
  EXPECT_EQ(ch["text"], "hello");
  EXPECT_EQ(ch["finish_reason"], "stop");
  EXPECT_EQ(ch["logprobs"]["tokens"], json::array({"he", "llo"}));
  EXPECT_EQ(ch["logprobs"]["token_logprobs"], json::array({-0.5, -1.0}));
  EXPECT_EQ(ch["logprobs"]["top_logprobs"], json::array({{{"llo", -2.0}}, {{"he", -3.0}}}));
  EXPECT_EQ(ch["logprobs"]["text_offset"], json::array({0, 2}));
  json no_lp = json::parse(text_completion_json(kHead, std::span(&c, 1), Usage{}, false, token_bytes));
  EXPECT_TRUE(no_lp["choices"][0]["logprobs"].is_null());
}

TEST(ResponseBuild, TokensSplittingACharacterStayValidJson) {
  std::vector<int32_t> tokens = {2, 3};
  std::vector<sched::TokenLogprob> chosen = {{2, -1.0f}, {3, -1.0f}};
  LogprobRun run{.tokens = tokens, .chosen = chosen};
  std::string text = dump_json(chat_logprobs_json(run, token_bytes));
  json j = json::parse(text);  // would throw on invalid UTF-8
  EXPECT_EQ(j["content"][0]["bytes"], json::array({0xE2, 0x82}));
  EXPECT_EQ(j["content"][1]["bytes"], json::array({0xAC}));
  json offsets = completion_logprobs_json(run, token_bytes, 5)["text_offset"];
  EXPECT_EQ(offsets, json::array({5, 7}));
}

TEST(ResponseBuild, StreamChunks) {
  json first = json::parse(chat_chunk_json(kHead, ChunkDelta{.index = 0, .role = "assistant", .content = ""}, false));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  json last = json::parse(chat_chunk_json(kHead, ChunkDelta{.index = 2, .finish = sched::FinishReason::kStop}, true));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["index"], 2);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last["usage"].is_null());
  json text = json::parse(completion_chunk_json(kHead, 0, "he", nullptr, sched::FinishReason::kNone, false));
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "he");
  json usage = json::parse(usage_chunk_json(kHead, "chat.completion.chunk", Usage{3, 4, 1}));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 7);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
}

TEST(ResponseBuild, FinishReasons) {
  EXPECT_EQ(finish_reason_json(sched::FinishReason::kStop), "stop");
  EXPECT_EQ(finish_reason_json(sched::FinishReason::kLength), "length");
  EXPECT_TRUE(finish_reason_json(sched::FinishReason::kNone).is_null());
}

}  // namespace
}  // namespace keel::server::openai
