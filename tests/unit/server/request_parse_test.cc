// Request parsing and validation: every parameter's accepted values, wrong types and out-of-range
// values, each failure naming the parameter.
#include "server/openai/request_parse.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/engine_request.h"

namespace keel::server::openai {
namespace {

using nlohmann::json;

const ParseLimits kLimits{.n_vocab = 1000};

json chat_base() { return {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}}; }
json completion_base() { return {{"model", "m"}, {"prompt", "hi"}}; }

ApiResult<ChatRequest> chat(const json& j) { return parse_chat_request(j.dump(), kLimits); }
ApiResult<CompletionRequest> completion(const json& j) { return parse_completion_request(j.dump(), kLimits); }

json with(json base, const std::string& key, json value) {
  base[key] = std::move(value);
  return base;
}

TEST(ChatParse, MinimalRequestGetsDefaults) {
  auto r = chat(chat_base());
  ASSERT_TRUE(r.ok()) << r.error().status.to_string();
  const auto& req = r.value();
  EXPECT_EQ(req.model, "m");
  ASSERT_EQ(req.messages.size(), 1u);
  EXPECT_EQ(req.messages[0].role, "user");
  EXPECT_EQ(req.messages[0].content, "hi");
  const auto& p = req.params;
  EXPECT_FALSE(p.max_tokens.has_value());
  EXPECT_FLOAT_EQ(p.temperature, 1.0f);
  EXPECT_FLOAT_EQ(p.top_p, 1.0f);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.n, 1);
  EXPECT_FALSE(p.seed.has_value());
  EXPECT_EQ(p.top_logprobs, -1);
  EXPECT_FALSE(p.stream);
  EXPECT_EQ(p.response_format.kind, ResponseFormat::Kind::kText);
}

TEST(ChatParse, EveryParameterIsRead) {
  json j = chat_base();
  j.update({{"max_completion_tokens", 12},
            {"temperature", 0},
            {"top_p", 0.5},
            {"top_k", 40},
            {"min_p", 0.1},
            {"n", 3},
            {"stop", json::array({"a", "b"})},
            {"seed", -1},
            {"logprobs", true},
            {"top_logprobs", 5},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}},
            {"presence_penalty", 0.5},
            {"frequency_penalty", -0.5},
            {"repetition_penalty", 1.1},
            {"logit_bias", {{"5", -100}, {"7", 2.5}}},
            {"ignore_eos", true},
            {"stop_token_ids", json::array({3, 4})},
            {"user", "u1"},
            {"response_format", {{"type", "text"}}}});
  auto r = chat(j);
  ASSERT_TRUE(r.ok()) << r.error().status.to_string();
  const auto& p = r.value().params;
  EXPECT_EQ(p.max_tokens, 12);
  EXPECT_FLOAT_EQ(p.temperature, 0.0f);
  EXPECT_FLOAT_EQ(p.top_p, 0.5f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(p.top_logprobs, 5);
  EXPECT_TRUE(p.stream);
  EXPECT_TRUE(p.include_usage);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_EQ(p.logit_bias[0], (std::pair<int32_t, float>{5, -100.0f}));
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{3, 4}));
}

TEST(ChatParse, ScalarsAcceptTheirAliasesAndNull) {
  auto r = chat(with(with(with(chat_base(), "top_k", -1), "stop", "x"), "temperature", nullptr));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().params.top_k, 0);
  EXPECT_EQ(r.value().params.stop, std::vector<std::string>{"x"});
  EXPECT_FLOAT_EQ(r.value().params.temperature, 1.0f);
  auto m = chat(with(chat_base(), "max_tokens", 9));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.value().params.max_tokens, 9);
  auto lp = chat(with(chat_base(), "logprobs", true));
  ASSERT_TRUE(lp.ok());
  EXPECT_EQ(lp.value().params.top_logprobs, 0);
}

struct BadCase {
  std::string key;
  json value;
  std::string param;  // expected "param"
};

void expect_rejected(const ApiResult<ChatRequest>& r, const std::string& param, const std::string& what) {
  ASSERT_FALSE(r.ok()) << what;
  EXPECT_EQ(r.error().param, param) << what;
  EXPECT_EQ(r.error().status.code(), ErrorCode::kInvalidArgument) << what;
  EXPECT_NE(r.error().status.message().find(param), std::string::npos) << r.error().status.message();
}

TEST(ChatParse, WrongTypesAreRejectedNamingTheParameter) {
  std::vector<BadCase> cases = {
      {"model", 5, "model"},
      {"max_tokens", "10", "max_tokens"},
      {"max_tokens", 10.5, "max_tokens"},
      {"max_completion_tokens", true, "max_completion_tokens"},
      {"temperature", "0.5", "temperature"},
      {"top_p", json::array(), "top_p"},
      {"top_k", 1.5, "top_k"},
      {"min_p", "x", "min_p"},
      {"n", 1.0, "n"},
      {"stop", 5, "stop"},
      {"stop", json::array({1}), "stop[0]"},
      {"seed", 1.5, "seed"},
      {"seed", "7", "seed"},
      {"logprobs", 1, "logprobs"},
      {"top_logprobs", "2", "top_logprobs"},
      {"stream", "true", "stream"},
      {"presence_penalty", "0", "presence_penalty"},
      {"frequency_penalty", false, "frequency_penalty"},
      {"repetition_penalty", json::object(), "repetition_penalty"},
      {"logit_bias", json::array(), "logit_bias"},
      {"logit_bias", {{"5", "x"}}, "logit_bias[\"5\"]"},
      {"ignore_eos", 0, "ignore_eos"},
      {"response_format", "json", "response_format"},
      {"stop_token_ids", 3, "stop_token_ids"},
      {"messages", "hi", "messages"},
  };
  for (const auto& c : cases)
    expect_rejected(chat(with(chat_base(), c.key, c.value)), c.param, c.key + "=" + c.value.dump());
}

TEST(ChatParse, OutOfRangeValuesAreRejected) {
  std::vector<BadCase> cases = {
      {"max_tokens", 0, "max_tokens"},
      {"max_tokens", -5, "max_tokens"},
      {"max_tokens", 3'000'000'000LL, "max_tokens"},
      {"temperature", -0.1, "temperature"},
      {"temperature", 2.5, "temperature"},
      {"top_p", 0, "top_p"},
      {"top_p", 1.01, "top_p"},
      {"top_k", -2, "top_k"},
      {"min_p", 1.5, "min_p"},
      {"n", 0, "n"},
      {"n", 17, "n"},
      {"stop", "", "stop"},
      {"stop", json::array({"a", ""}), "stop[1]"},
      {"stop", json(std::vector<std::string>(17, "s")), "stop"},
      {"top_logprobs", 21, "top_logprobs"},
      {"presence_penalty", 2.5, "presence_penalty"},
      {"frequency_penalty", -3, "frequency_penalty"},
      {"repetition_penalty", 0, "repetition_penalty"},
      {"repetition_penalty", 10.5, "repetition_penalty"},
      {"logit_bias", {{"1000", 1}}, "logit_bias[\"1000\"]"},
      {"logit_bias", {{"-1", 1}}, "logit_bias[\"-1\"]"},
      {"logit_bias", {{"abc", 1}}, "logit_bias[\"abc\"]"},
      {"logit_bias", {{"5", 101}}, "logit_bias[\"5\"]"},
      {"stop_token_ids", json::array({1000}), "stop_token_ids[0]"},
      {"seed", 18446744073709551615ULL, "seed"},
  };
  for (const auto& c : cases)
    expect_rejected(chat(with(chat_base(), c.key, c.value)), c.param, c.key + "=" + c.value.dump());
  // logprobs=true is needed for top_logprobs
  expect_rejected(chat(with(chat_base(), "top_logprobs", 2)), "top_logprobs", "top_logprobs alone");
  expect_rejected(chat(with(with(chat_base(), "max_tokens", 2), "max_completion_tokens", 2)), "max_completion_tokens",
                  "both");
  expect_rejected(chat(with(chat_base(), "stream_options", {{"include_usage", true}})), "stream_options", "no stream");
  expect_rejected(chat(with(with(chat_base(), "stream", true), "stream_options", {{"x", 1}})), "stream_options.x",
                  "bad key");
}

TEST(ChatParse, UnknownFieldsAreRejected) {
  expect_rejected(chat(with(chat_base(), "temperatur", 1)), "temperatur", "typo");
  expect_rejected(chat(with(chat_base(), "tools", json::array())), "tools", "tools");
}

// What sglang-router 0.3.2 adds to a chat request it forwards (captured from its upstream traffic):
// accepted at these values, a 400 naming the field at any other, and still no other unknown field.
TEST(ChatParse, PeerRouterFieldsOnlyAtKeelsOwnBehaviour) {
  json forwarded = chat_base();
  for (auto [key, value] : std::vector<std::pair<std::string, bool>>{{"no_stop_trim", false},
                                                                     {"continue_final_message", false},
                                                                     {"skip_special_tokens", true},
                                                                     {"separate_reasoning", true},
                                                                     {"stream_reasoning", true},
                                                                     {"return_hidden_states", false}}) {
    forwarded[key] = value;
    auto flipped = chat(with(chat_base(), key, !value));
    ASSERT_FALSE(flipped.ok()) << key;
    EXPECT_EQ(flipped.error().param, key);
    EXPECT_EQ(flipped.error().status.code(), ErrorCode::kUnsupported) << key;
    auto number = chat(with(chat_base(), key, value ? 1 : 0));  // a number is not the default bool
    ASSERT_FALSE(number.ok()) << key;
    EXPECT_EQ(number.error().param, key);
  }
  EXPECT_TRUE(chat(forwarded).ok()) << forwarded.dump();
  expect_rejected(chat(with(forwarded, "no_stop_trimm", false)), "no_stop_trimm", "typo of a peer field");
  expect_rejected(chat(with(chat_base(), "background", false)), "background", "not a field sglang-router sends");
}

TEST(ChatParse, Messages) {
  auto parts = json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}});
  auto r = chat(with(chat_base(), "messages",
                     json::array({{{"role", "system"}, {"content", "s"}},
                                  {{"role", "user"}, {"content", parts}, {"name", "bob"}},
                                  {{"role", "assistant"}, {"content", nullptr}},
                                  {{"role", "tool"}, {"content", "42"}, {"tool_call_id", "c1"}}})));
  ASSERT_TRUE(r.ok()) << r.error().status.to_string();
  const auto& m = r.value().messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].content, "a\nb");
  EXPECT_EQ(m[1].name, "bob");
  EXPECT_EQ(m[2].content, "");
  EXPECT_EQ(m[3].tool_call_id, "c1");

  auto msg = [](json one) { return with(chat_base(), "messages", json::array({std::move(one)})); };
  expect_rejected(chat(with(chat_base(), "messages", json::array())), "messages", "empty");
  expect_rejected(chat(msg("hi")), "messages[0]", "not object");
  expect_rejected(chat(msg({{"content", "x"}})), "messages[0].role", "no role");
  expect_rejected(chat(msg({{"role", "robot"}, {"content", "x"}})), "messages[0].role", "bad role");
  expect_rejected(chat(msg({{"role", "user"}})), "messages[0].content", "no content");
  expect_rejected(chat(msg({{"role", "user"}, {"content", 5}})), "messages[0].content", "content type");
  expect_rejected(chat(msg({{"role", "user"}, {"content", json::array({{{"type", "text"}}})}})),
                  "messages[0].content[0].text", "part without text");
  expect_rejected(chat(msg({{"role", "user"}, {"content", "x"}, {"extra", 1}})), "messages[0].extra", "unknown key");
  auto image = chat(msg({{"role", "user"}, {"content", json::array({{{"type", "image_url"}, {"image_url", "u"}}})}}));
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.error().status.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(image.error().param, "messages[0].content[0].type");
  auto tools = chat(msg({{"role", "assistant"}, {"content", "x"}, {"tool_calls", json::array()}}));
  ASSERT_FALSE(tools.ok());
  EXPECT_EQ(tools.error().status.code(), ErrorCode::kUnsupported);
}

TEST(ChatParse, MalformedBodies) {
  for (const std::string& body :
       std::vector<std::string>{"", "{", "[1]", "\"x\"", "{\"model\": \"m\",}", "{\"model\":\"\xff\"}",
                                std::string(100, '[') + std::string(100, ']')}) {
    auto r = parse_chat_request(body, kLimits);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().status.code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(r.error().param.empty());
  }
  expect_rejected(chat(json::object({{"messages", chat_base()["messages"]}})), "model", "no model");
  expect_rejected(chat(json::object({{"model", "m"}})), "messages", "no messages");
}

TEST(ChatParse, ResponseFormatShapes) {
  auto schema = chat(with(
      chat_base(), "response_format",
      {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"strict", true}, {"schema", {{"type", "object"}}}}}}));
  ASSERT_TRUE(schema.ok()) << schema.error().status.to_string();
  EXPECT_EQ(schema.value().params.response_format.kind, ResponseFormat::Kind::kJsonSchema);
  EXPECT_EQ(schema.value().params.response_format.spec, R"({"type":"object"})");
  auto regex = chat(with(chat_base(), "response_format", {{"type", "regex"}, {"regex", "[a-z]+"}}));
  ASSERT_TRUE(regex.ok());
  EXPECT_EQ(regex.value().params.response_format.spec, "[a-z]+");
  auto obj = chat(with(chat_base(), "response_format", {{"type", "json_object"}}));
  ASSERT_TRUE(obj.ok());
  expect_rejected(chat(with(chat_base(), "response_format", {{"type", "xml"}})), "response_format.type", "bad type");
  expect_rejected(chat(with(chat_base(), "response_format", json::object())), "response_format.type", "no type");
  expect_rejected(chat(with(chat_base(), "response_format", {{"type", "json_schema"}})), "response_format.json_schema",
                  "no schema");
  expect_rejected(chat(with(chat_base(), "response_format", {{"type", "regex"}})), "response_format.regex", "no regex");
  EXPECT_EQ(schema.value().params.response_format.param, "response_format.json_schema.schema");
  EXPECT_TRUE(schema.value().params.response_format.strict);
}

TEST(ChatParse, GrammarExtensionFields) {
  auto regex = chat(with(chat_base(), "regex", "[0-9]+"));
  ASSERT_TRUE(regex.ok()) << regex.error().status.to_string();
  EXPECT_EQ(regex.value().params.response_format.kind, ResponseFormat::Kind::kRegex);
  EXPECT_EQ(regex.value().params.response_format.spec, "[0-9]+");
  EXPECT_EQ(regex.value().params.response_format.param, "regex");
  auto ebnf = chat(with(chat_base(), "ebnf", "root ::= \"a\""));
  ASSERT_TRUE(ebnf.ok());
  EXPECT_EQ(ebnf.value().params.response_format.kind, ResponseFormat::Kind::kEbnf);
  EXPECT_EQ(ebnf.value().params.response_format.param, "ebnf");
  expect_rejected(chat(with(chat_base(), "regex", "")), "regex", "empty regex");
  expect_rejected(chat(with(chat_base(), "ebnf", 3)), "ebnf", "ebnf not a string");
  expect_rejected(chat(with(with(chat_base(), "regex", "a"), "ebnf", "root ::= \"a\"")), "ebnf", "two grammars");
  expect_rejected(chat(with(with(chat_base(), "response_format", {{"type", "json_object"}}), "regex", "a")), "regex",
                  "response_format and regex");
  expect_rejected(chat(with(chat_base(), "json_schema", {{"type", "object"}})), "json_schema",
                  "json_schema is /generate's field, not the OpenAI endpoints'");
}

TEST(ChatParse, GrammarWhitespaceExtension) {
  using Ws = ResponseFormat::Whitespace;
  auto plain = chat(with(chat_base(), "response_format", {{"type", "json_object"}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.value().params.response_format.whitespace, Ws::kDefault);
  auto flexible = chat(with(with(chat_base(), "response_format", {{"type", "json_object"}}), "grammar_whitespace", "flexible"));
  ASSERT_TRUE(flexible.ok()) << flexible.error().status.to_string();
  EXPECT_EQ(flexible.value().params.response_format.whitespace, Ws::kFlexible);
  auto compact = chat(with(chat_base(), "grammar_whitespace", "compact"));
  ASSERT_TRUE(compact.ok());
  EXPECT_EQ(compact.value().params.response_format.whitespace, Ws::kCompact);
  expect_rejected(chat(with(chat_base(), "grammar_whitespace", "loose")), "grammar_whitespace", "unknown policy");
  expect_rejected(chat(with(chat_base(), "grammar_whitespace", 1)), "grammar_whitespace", "not a string");
}

TEST(CompletionParse, PromptForms) {
  auto text = completion(completion_base());
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text.value().prompt_is_ids);
  EXPECT_EQ(text.value().prompt_text, "hi");
  auto one = completion(with(completion_base(), "prompt", json::array({"a"})));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one.value().prompt_text, "a");
  auto ids = completion(with(completion_base(), "prompt", json::array({1, 2, 999})));
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids.value().prompt_is_ids);
  EXPECT_EQ(ids.value().prompt_ids, (std::vector<int32_t>{1, 2, 999}));
  auto nested = completion(with(completion_base(), "prompt", json::array({json::array({4, 5})})));
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(nested.value().prompt_ids, (std::vector<int32_t>{4, 5}));

  auto batch = completion(with(completion_base(), "prompt", json::array({"a", "b"})));
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.error().status.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(batch.error().param, "prompt");
  for (auto [value, param] : std::vector<std::pair<json, std::string>>{{json::array(), "prompt"},
                                                                       {5, "prompt"},
                                                                       {json::array({1000}), "prompt[0]"},
                                                                       {json::array({-1}), "prompt[0]"},
                                                                       {json::array({1, 2.5}), "prompt[1]"},
                                                                       {json::array({1, "a"}), "prompt[1]"},
                                                                       {json::array({json::array()}), "prompt[0]"},
                                                                       {nullptr, "prompt"}}) {
    auto r = completion(with(completion_base(), "prompt", value));
    ASSERT_FALSE(r.ok()) << value.dump();
    EXPECT_EQ(r.error().param, param) << value.dump();
  }
}

TEST(CompletionParse, CompletionOnlyFields) {
  auto lp = completion(with(completion_base(), "logprobs", 3));
  ASSERT_TRUE(lp.ok());
  EXPECT_EQ(lp.value().params.top_logprobs, 3);
  auto none = completion(with(completion_base(), "logprobs", nullptr));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value().params.top_logprobs, -1);
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{{"logprobs", true},
                                                                     {"logprobs", 21},
                                                                     {"logprobs", -1},
                                                                     {"max_tokens", 0},
                                                                     {"top_logprobs", 1},
                                                                     {"max_completion_tokens", 5},
                                                                     {"messages", json::array()}}) {
    auto r = completion(with(completion_base(), key, value));
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.error().param, key);
  }
  EXPECT_TRUE(completion(with(completion_base(), "echo", false)).ok());
  EXPECT_FALSE(completion(with(completion_base(), "continue_final_message", false)).ok());  // chat only
  EXPECT_TRUE(completion(with(completion_base(), "best_of", 1)).ok());
  EXPECT_TRUE(completion(with(completion_base(), "suffix", nullptr)).ok());
  json forwarded = with(with(with(completion_base(), "no_stop_trim", false), "skip_special_tokens", true),
                        "return_hidden_states", false);
  EXPECT_TRUE(completion(forwarded).ok());  // what sglang-router 0.3.2 sends for a completion
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{{"echo", true},
                                                                     {"suffix", "x"},
                                                                     {"best_of", 2},
                                                                     {"no_stop_trim", true},
                                                                     {"skip_special_tokens", false}}) {
    auto r = completion(with(completion_base(), key, value));
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.error().status.code(), ErrorCode::kUnsupported) << key;
  }
}

TEST(EngineRequest, PenaltiesAndLogitBiasReachTheSampler) {
  auto p = chat(with(with(with(with(chat_base(), "presence_penalty", 0.5), "frequency_penalty", -1),
                          "repetition_penalty", 1.3),
                     "logit_bias", {{"7", -100}}))
               .value()
               .params;
  auto r = make_generate_request(p, {1}, EngineRequestLimits{});
  ASSERT_TRUE(r.ok()) << r.error().status.to_string();
  const auto& s = r.value().sampling;
  EXPECT_FLOAT_EQ(s.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.3f);
  EXPECT_EQ(s.logit_bias, (std::vector<std::pair<int32_t, float>>{{7, -100.0f}}));
}

TEST(EngineRequest, FieldsMaxTokensAndContext) {
  auto p = chat(with(with(with(with(chat_base(), "seed", 9), "stop", "x"), "n", 2), "stop_token_ids", json::array({5})))
               .value()
               .params;
  auto r = make_generate_request(p, {1, 2, 3},
                                 EngineRequestLimits{.max_context_tokens = 10, .max_tokens_fills_context = true});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().stop.max_tokens, 7);
  EXPECT_EQ(r.value().sampling.seed, 9u);
  EXPECT_EQ(r.value().n, 2);
  EXPECT_EQ(r.value().stop.stop_strings, std::vector<std::string>{"x"});
  EXPECT_EQ(r.value().stop.stop_token_ids, std::vector<int32_t>{5});
  EXPECT_EQ(r.value().prompt, (std::vector<int32_t>{1, 2, 3}));

  auto d = make_generate_request(p, {1, 2, 3}, EngineRequestLimits{.max_context_tokens = 10, .default_max_tokens = 16});
  EXPECT_EQ(d.value().stop.max_tokens, 7);  // the default is clipped to the room left
  auto unknown = make_generate_request(p, {1}, EngineRequestLimits{});
  EXPECT_EQ(unknown.value().stop.max_tokens, 16);

  p.max_tokens = 8;
  auto over = make_generate_request(p, {1, 2, 3}, EngineRequestLimits{.max_context_tokens = 10});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().param, "max_tokens");
  auto full = make_generate_request(p, std::vector<int32_t>(10, 1), EngineRequestLimits{.max_context_tokens = 10});
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().param, "prompt");
  auto empty = make_generate_request(p, {}, EngineRequestLimits{});
  ASSERT_FALSE(empty.ok());

  GenerationParams no_seed;
  auto a = make_generate_request(no_seed, {1}, EngineRequestLimits{});
  auto b = make_generate_request(no_seed, {1}, EngineRequestLimits{});
  EXPECT_NE(a.value().sampling.seed, b.value().sampling.seed);
}

}  // namespace
}  // namespace keel::server::openai
