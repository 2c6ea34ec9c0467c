// StructuredOutput's whitespace policy: the server-wide default (--grammar-whitespace) and the
// per-request `grammar_whitespace` field reach the compiled grammar (byte-token vocabulary, so token
// i is byte i): compact JSON admits no whitespace, flexible admits runs of at most max_whitespace.
#include "server/structured_output.h"

#include <gtest/gtest.h>

#include "unit/server/replay_engine.h"

namespace keel::server {
namespace {

using openai::ResponseFormat;

// Whether a fresh constraint from the factory accepts `text` byte by byte.
bool accepts(const sample::ConstraintFactory& f, std::string_view text) {
  auto c = f.make();
  for (unsigned char ch : text)
    if (!c->accept_token(ch)) return false;
  return true;
}

ResponseFormat object_format(ResponseFormat::Whitespace ws) {
  return ResponseFormat{.kind = ResponseFormat::Kind::kJsonSchema,
                        .spec = R"({"type":"object","properties":{"a":{"type":"array"}}})",
                        .param = "response_format.json_schema.schema",
                        .whitespace = ws};
}

TEST(StructuredOutput, WhitespacePolicyPerServerAndPerRequest) {
  test::ByteTokenizer tok;
  using Ws = ResponseFormat::Whitespace;
  const std::string body = "{}";  // no schema in the body: the format's own text is used
  for (auto server_default : {grammar::WhitespacePolicy::kCompact, grammar::WhitespacePolicy::kBounded}) {
    StructuredOutputConfig config{.whitespace = server_default, .max_whitespace = 4};
    StructuredOutput so(tok, config);
    auto def = so.constraint_for(object_format(Ws::kDefault), body);
    auto compact = so.constraint_for(object_format(Ws::kCompact), body);
    auto flexible = so.constraint_for(object_format(Ws::kFlexible), body);
    ASSERT_TRUE(def.ok() && compact.ok() && flexible.ok());
    const bool default_flexible = server_default == grammar::WhitespacePolicy::kBounded;
    for (const char* text : {R"({"a":[]})", R"({ "a" : [ ] })", "{\n\t\"a\":[\r\n]}", "{    }"}) {
      const bool spaced = std::string_view(text).find_first_of(" \t\r\n") != std::string_view::npos;
      EXPECT_EQ(accepts(*compact.value(), text), !spaced) << text;
      EXPECT_TRUE(accepts(*flexible.value(), text)) << text;
      EXPECT_EQ(accepts(*def.value(), text), default_flexible || !spaced) << text;
    }
    // Runs are bounded: 4 spaces fit, 5 do not, anywhere between tokens.
    EXPECT_FALSE(accepts(*flexible.value(), "{     }"));
    EXPECT_FALSE(accepts(*flexible.value(), R"({"a":     []})"));
    EXPECT_TRUE(accepts(*flexible.value(), R"({"a":    []})"));
    EXPECT_EQ(so.store().size(), 2u) << "the default shares its policy's entry";
  }
}

TEST(StructuredOutput, ConfigRejectsUnboundedWhitespace) {
  EXPECT_FALSE(StructuredOutputConfig{.max_whitespace = 0}.validate().ok());
  EXPECT_FALSE(StructuredOutputConfig{.max_whitespace = 65}.validate().ok());
  EXPECT_TRUE(StructuredOutputConfig{.max_whitespace = 64}.validate().ok());
  EXPECT_FALSE(StructuredOutputConfig{.compile_threads = 0}.validate().ok());
  EXPECT_FALSE(StructuredOutputConfig{.max_compiles_waiting = 0}.validate().ok());
}

// lookup never compiles: a new grammar comes back as a spec, a compiled one as a factory; free text as
// neither; an unsatisfiable grammar is a 400 whether it is new (compile) or cached (lookup).
TEST(StructuredOutput, LookupFindsOnlyWhatIsCompiled) {
  test::ByteTokenizer tok;
  StructuredOutput so(tok, StructuredOutputConfig{});
  const auto format = object_format(ResponseFormat::Whitespace::kDefault);
  auto text = so.lookup(ResponseFormat{}, "{}");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text.value().factory, nullptr);
  EXPECT_FALSE(text.value().to_compile.has_value());

  auto first = so.lookup(format, "{}");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value().factory, nullptr);
  ASSERT_TRUE(first.value().to_compile.has_value());
  EXPECT_EQ(so.store().size(), 0u) << "lookup compiled";
  auto compiled = so.compile(format, *first.value().to_compile);
  ASSERT_TRUE(compiled.ok());
  EXPECT_TRUE(accepts(*compiled.value(), R"({"a":[]})"));
  auto again = so.lookup(format, "{}");
  ASSERT_TRUE(again.ok());
  ASSERT_NE(again.value().factory, nullptr);
  EXPECT_FALSE(again.value().to_compile.has_value());
  EXPECT_TRUE(accepts(*again.value().factory, R"({"a":[]})"));

  const ResponseFormat never{
      .kind = ResponseFormat::Kind::kJsonSchema, .spec = R"({"not":{}})", .param = "response_format.json_schema.schema"};
  auto fresh = so.lookup(never, "{}");
  ASSERT_TRUE(fresh.ok() && fresh.value().to_compile.has_value());
  auto unsat = so.compile(never, *fresh.value().to_compile);
  ASSERT_FALSE(unsat.ok());
  EXPECT_EQ(unsat.error().param, "response_format.json_schema.schema");
  auto cached = so.lookup(never, "{}");
  ASSERT_FALSE(cached.ok()) << "an unsatisfiable grammar found in the store is still a 400";
  EXPECT_NE(cached.error().status.message().find("unsatisfiable"), std::string::npos);
}

}  // namespace
}  // namespace keel::server
