// scan_body: the router's one-pass read of a request body. Expected values are written out by hand
// from the JSON (role "\n" content "\n" per message, the last of repeated keys, ...), including the
// orders and shapes a DOM reader handles for free: content before role, repeated keys, parts.
#include "router/body_scan.h"

#include <gtest/gtest.h>

namespace keel::router {
namespace {

BodyFields scan(std::string_view body, BodyKind kind = BodyKind::kChat) {
  auto r = scan_body(body, kind);
  EXPECT_TRUE(r.has_value()) << body;
  return r.value_or(BodyFields{});
}

TEST(BodyScan, ChatMessagesInAnyKeyOrderWithParts) {
  BodyFields f = scan(R"({"model": "m", "messages": [
      {"role": "system", "content": "Be brief."},
      {"content": [{"type": "text", "text": "Hi "}, {"text": "there", "type": "text"}, {"type": "image_url"}],
       "role": "user"},
      7,
      {"role": "assistant"},
      {"role": 5, "content": {"text": "not a part list"}}]})");
  EXPECT_EQ(f.prompt_text, "system\nBe brief.\nuser\nHi there\nassistant\n\n\n\n");
  EXPECT_FALSE(f.stream);
  EXPECT_TRUE(f.single);
  EXPECT_FALSE(f.has_seed);
  EXPECT_FALSE(f.prompt_is_ids);
}

TEST(BodyScan, RepeatedKeysKeepTheLastValue) {
  BodyFields f = scan(R"({"messages": [{"role": "user", "content": "old"}], "stream": true,
                          "messages": [{"role": "user", "content": "a", "content": "b", "role": "tool"}],
                          "stream": false})");
  EXPECT_EQ(f.prompt_text, "tool\nb\n");
  EXPECT_FALSE(f.stream);
}

TEST(BodyScan, StreamNAndSeed) {
  EXPECT_TRUE(scan(R"({"stream": true})").stream);
  EXPECT_FALSE(scan(R"({"stream": 1})").stream);
  EXPECT_FALSE(scan(R"({"stream": {"x": true}})").stream);
  EXPECT_TRUE(scan(R"({"n": 1})").single);
  for (const char* n : {"2", "1.0", "null", "\"1\"", "[1]", "{}"}) {
    EXPECT_FALSE(scan(std::string(R"({"n": )") + n + "}").single) << n;
  }
  EXPECT_TRUE(scan(R"({"seed": 0})").has_seed);
  EXPECT_TRUE(scan(R"({"seed": {"a": 1}})").has_seed);
  EXPECT_FALSE(scan(R"({"seed": null})").has_seed);
  // Keys of nested objects are not top-level fields.
  BodyFields nested = scan(R"({"x": {"stream": true, "n": 3, "seed": 4}, "messages": []})");
  EXPECT_FALSE(nested.stream);
  EXPECT_TRUE(nested.single);
  EXPECT_FALSE(nested.has_seed);
}

TEST(BodyScan, CompletionPromptForms) {
  EXPECT_EQ(scan(R"({"prompt": "Once upon"})", BodyKind::kCompletion).prompt_text, "Once upon");
  BodyFields ids = scan(R"({"prompt": [1, 2, "x", 3]})", BodyKind::kCompletion);
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  BodyFields parts = scan(R"({"prompt": [{"text": "a"}, 5, {"text": "b"}]})", BodyKind::kCompletion);
  EXPECT_FALSE(parts.prompt_is_ids);
  EXPECT_EQ(parts.prompt_text, "ab");
  EXPECT_EQ(scan(R"({"prompt": []})", BodyKind::kCompletion).prompt_ids.size(), 0u);
  // A chat body's messages and a native "text" do not key a completion, and vice versa.
  EXPECT_EQ(scan(R"({"messages": [{"role": "user", "content": "x"}], "text": "y"})", BodyKind::kCompletion).prompt_text,
            "");
  EXPECT_EQ(scan(R"({"prompt": "x"})", BodyKind::kChat).prompt_text, "");
  EXPECT_FALSE(scan(R"({"prompt": [1, 2]})", BodyKind::kNative).prompt_is_ids);
}

TEST(BodyScan, NativeText) {
  EXPECT_EQ(scan(R"({"text": "Hello", "sampling_params": {"text": "no"}})", BodyKind::kNative).prompt_text, "Hello");
}

TEST(BodyScan, RejectsWhatIsNotAJsonObject) {
  for (const char* bad : {"", "{not json", "[1, 2]", "42", "\"s\"", "null", "{\"a\": 1} trailing", "{\"a\": 1}{}",
                          "{\"a\": [1, 2}", "{\"a\": \"\xff\"}"}) {
    EXPECT_FALSE(scan_body(bad, BodyKind::kChat).has_value()) << bad;
  }
}

}  // namespace
}  // namespace keel::router
