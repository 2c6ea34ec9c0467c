#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "router/stream_resume.h"

namespace keel::router {
namespace {

TEST(ResumeState, CommitsTokensOnlyWithTheirChunkAndBuildsTheContinuation) {
  ResumeState s;
  ASSERT_TRUE(s.on_token_event(R"({"index":0,"token_ids":[11,12]})"));
  s.on_chunk_forwarded("{}");
  ASSERT_TRUE(s.on_token_event(R"({"index":0,"token_ids":[13]})"));  // its chunk never arrived
  EXPECT_EQ(s.tokens(), (std::vector<int32_t>{11, 12}));
  auto body = s.resume_body(nlohmann::json{{"model", "m"}, {"max_tokens", 10}, {"seed", 5}});
  ASSERT_TRUE(body);
  auto j = nlohmann::json::parse(*body);
  EXPECT_EQ(j["max_tokens"], 8);
  EXPECT_EQ(j["seed"], 5);
  EXPECT_EQ(j["keel_resume_token_ids"], (std::vector<int32_t>{11, 12}));
  EXPECT_FALSE(s.resume_body(nlohmann::json{{"max_tokens", 2}}));  // nothing left to generate
  EXPECT_FALSE(s.resume_body(nlohmann::json{{"n", 2}}));
  EXPECT_FALSE(s.finished());
  s.on_chunk_forwarded(R"({"choices":[{"delta":{},"finish_reason": "stop"}]})");
  EXPECT_TRUE(s.finished());
}

TEST(ResumeState, ContentWithoutTokenEventsCannotBeResumed) {
  ResumeState s;
  s.on_chunk_forwarded(R"({"choices":[{"delta":{"role":"assistant"},"finish_reason":null}]})");
  EXPECT_TRUE(s.resume_body(nlohmann::json::object()));  // nothing out yet: a restart is exact
  s.on_chunk_forwarded(R"({"choices":[{"delta":{"content":"hi"},"finish_reason":null}]})");
  EXPECT_FALSE(s.resume_body(nlohmann::json::object()));
}

TEST(ResumeState, ResumedChunksLookLikeTheFirstStream) {
  ResumeState s;
  ASSERT_TRUE(s.rewrite_chunk(R"({"id":"first","created":7,"choices":[{"delta":{"role":"assistant"}}]})"));
  s.on_token_event(R"({"index":0,"token_ids":[1,2,3]})");
  s.on_chunk_forwarded("{}");
  s.begin_resume();
  EXPECT_FALSE(s.rewrite_chunk(
      R"({"id":"second","created":9,"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}]})"));
  auto c = s.rewrite_chunk(R"({"id":"second","created":9,"choices":[{"delta":{"content":"x"}}]})");
  ASSERT_TRUE(c);
  auto j = nlohmann::json::parse(*c);
  EXPECT_EQ(j["id"], "first");
  EXPECT_EQ(j["created"], 7);
  auto u = nlohmann::json::parse(*s.rewrite_chunk(
      R"({"id":"second","choices":[],"usage":{"prompt_tokens":13,"completion_tokens":4,"total_tokens":17}})"));
  EXPECT_EQ(u["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(u["usage"]["completion_tokens"], 7);
}

// A replica's events with fields of the wrong type are refused or passed through, never thrown on
// (nlohmann's value() threw type_error out of the proxy's handler before).
TEST(ResumeState, FieldsOfTheWrongTypeAreHandledNotThrown) {
  ResumeState s;
  EXPECT_FALSE(s.on_token_event(R"({"index":"0","token_ids":[1]})"));  // index not an integer: a bad stream
  EXPECT_FALSE(s.on_token_event(R"({"index":0,"token_ids":[1,"2"]})"));
  EXPECT_FALSE(s.resume_body(nlohmann::json{{"max_tokens", 8}}));  // bad: cannot be resumed
  ResumeState r;
  ASSERT_TRUE(r.rewrite_chunk(R"({"id":"first","created":7,"choices":[{"delta":{"role":"assistant"}}]})"));
  EXPECT_TRUE(r.on_token_event(R"({"token_ids":[1]})"));  // no index: the first choice
  r.on_chunk_forwarded("{}");
  r.begin_resume();
  // The resumed replica's role chunk with "content": null is its opening chunk too: dropped.
  EXPECT_FALSE(r.rewrite_chunk(R"({"id":"b","choices":[{"delta":{"role":"assistant","content":null}}]})"));
  // A role chunk whose content is not a string, and a choice that is not an object: passed on, rewritten.
  auto odd = r.rewrite_chunk(R"({"id":"b","choices":[{"delta":{"role":"assistant","content":5}}]})");
  ASSERT_TRUE(odd);
  EXPECT_EQ(nlohmann::json::parse(*odd)["id"], "first");
  ASSERT_TRUE(r.rewrite_chunk(R"({"id":"b","choices":[5]})"));
}

}  // namespace
}  // namespace keel::router
