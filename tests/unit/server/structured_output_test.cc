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
}

}  // namespace
}  // namespace keel::server
