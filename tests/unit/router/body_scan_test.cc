// scan_body: the router's one-pass read of a request body. Expected values are written out by hand
// from the JSON (role "\n" content "\n" per message, the last of repeated keys, ...), including the
// orders and shapes a DOM reader handles for free: content before role, repeated keys, parts.
#include "router/body_scan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

TEST(BodyScan, DecodesEscapesAndUnicodeInKeptStrings) {
  const std::string body = std::string(R"({"messages": [{"role": "u\u0073er", "content": "a\"b\\c\/\n\t\u00e9\ud83d\ude00 )") +
                           "\xc3\xa9" + R"("}]})";
  BodyFields f = scan(body);
  EXPECT_EQ(f.prompt_text, "user\na\"b\\c/\n\t\xc3\xa9\xf0\x9f\x98\x80 \xc3\xa9\n");
  EXPECT_TRUE(scan_body(R"({"n": 1.5e-3, "m": -0, "big": 18446744073709551616, "x": [true, false, null, {}, []]})",
                        BodyKind::kChat));
}

TEST(BodyScan, RejectsMalformedStringsNumbersAndNesting) {
  for (const char* bad : {R"({"a": "\x"})", R"({"a": "\ud800"})", R"({"a": "\udc00"})", R"({"a": "\ud800\u0041"})",
                          R"({"a": "\u12G4"})", "{\"a\": \"\t\"}", "{\"a\": \"\xc0\xaf\"}", "{\"a\": \"\xed\xa0\x80\"}",
                          "{\"a\": \"\xf4\x90\x80\x80\"}", "{\"a\": \"\xe2\x82\"}", R"({"a": 01})", R"({"a": 1.})",
                          R"({"a": -})", R"({"a": +1})", R"({"a": .5})", R"({"a": 1e})", R"({"a": 1,})", R"({"a" 1})",
                          R"({"a": "x)", R"({"a": tru})", R"({1: 2})", R"({"a": [1 2]})"}) {
    EXPECT_FALSE(scan_body(bad, BodyKind::kChat).has_value()) << bad;
  }
  std::string deep_ok = R"({"a": )" + std::string(500, '[') + std::string(500, ']') + "}";
  EXPECT_TRUE(scan_body(deep_ok, BodyKind::kChat).has_value());
  std::string too_deep = R"({"a": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_FALSE(scan_body(too_deep, BodyKind::kChat).has_value());  // refused, not a stack overflow
}

// Differential check against an independent parser (nlohmann::json::accept): every one-byte deletion
// and a set of one-byte insertions into a realistic body is valid for scan_body exactly when it is a
// valid JSON object for nlohmann.
TEST(BodyScan, AgreesWithNlohmannOnValidityOfMutatedBodies) {
  const std::string body =
      R"({"model": "m", "messages": [{"role": "system", "content": "Be \"brief\" \u00e9."},)"
      R"( {"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "n": 1, "seed": -12,)"
      R"( "temperature": 0.5e1, "stop": ["\n"], "stream": false, "x": null})";
  auto valid = [](const std::string& b) { return nlohmann::json::accept(b) && nlohmann::json::parse(b).is_object(); };
  ASSERT_TRUE(valid(body));
  int checked = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    std::string del = body;
    del.erase(i, 1);
    EXPECT_EQ(scan_body(del, BodyKind::kChat).has_value(), valid(del)) << del;
    for (char c : {'"', ',', ':', '{', ']', '\\', '0', '-', 'e', '.', ' ', '\x01', '\xc3'}) {
      std::string ins = body;
      ins.insert(i, 1, c);
      EXPECT_EQ(scan_body(ins, BodyKind::kChat).has_value(), valid(ins)) << ins;
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000);
}

}  // namespace
}  // namespace keel::router
