// multipleOf in the JSON Schema compiler: integer multiples (an automaton over decimal digits,
// checked against the % operator over a range of integers) and powers of ten below 1 (a limit on
// fraction digits, checked against exact decimal arithmetic on scaled integers), with and without
// bounds; other multiples are kUnsupported.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "grammar/earley.h"

namespace keel::grammar {
namespace {

std::shared_ptr<const CompiledGrammar> compile(const std::string& schema) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema});
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().to_string();
  return g.ok() ? g.value() : nullptr;
}

bool accepts(const CompiledGrammar& g, const std::string& text) {
  EarleyParser p(g);
  return p.push_bytes(text) && p.can_end();
}

TEST(MultipleOf, IntegerMultiplesEqualTheRemainder) {
  for (int m : {2, 3, 7, 11, 25, 100}) {
    for (const char* type : {"integer", "number"}) {
      auto g = compile(fmt::format(R"({{"type":"{}","multipleOf":{}}})", type, m));
      ASSERT_NE(g, nullptr);
      for (int v = -300; v <= 300; ++v) EXPECT_EQ(accepts(*g, std::to_string(v)), v % m == 0) << m << " " << v;
      EXPECT_FALSE(accepts(*g, "1.5"));
      EXPECT_FALSE(accepts(*g, "007"));
    }
  }
}

TEST(MultipleOf, PowersOfTenLimitFractionDigitsExactlyUnderBounds) {
  // Values v/1000 for v in [-3000, 3000]: a multiple of 0.01 when v % 10 == 0, in [-1.5, 2.005] by
  // integer comparison of the scaled values.
  auto g = compile(R"({"type":"number","multipleOf":0.01,"minimum":-1.5,"exclusiveMaximum":2.005})");
  ASSERT_NE(g, nullptr);
  for (int v = -3000; v <= 3000; ++v) {
    const int a = v < 0 ? -v : v;
    const std::string text = fmt::format("{}{}.{:03d}", v < 0 ? "-" : "", a / 1000, a % 1000);
    std::string trimmed = text;  // canonical: no trailing fraction zeros, no bare "."
    while (trimmed.back() == '0') trimmed.pop_back();
    if (trimmed.back() == '.') trimmed.pop_back();
    if (trimmed == "-0") continue;
    const bool valid = v % 10 == 0 && v >= -1500 && v < 2005;
    EXPECT_EQ(accepts(*g, trimmed), valid) << trimmed;
  }
  auto free = compile(R"({"type":"number","multipleOf":1e-3})");
  ASSERT_NE(free, nullptr);
  EXPECT_TRUE(accepts(*free, "-12.125"));
  EXPECT_FALSE(accepts(*free, "0.0001"));
  EXPECT_FALSE(accepts(*free, "1e3"));  // no exponent under a fraction limit
  auto integers = compile(R"({"type":"integer","multipleOf":0.1,"maximum":3})");
  ASSERT_NE(integers, nullptr);
  EXPECT_TRUE(accepts(*integers, "3"));
  EXPECT_FALSE(accepts(*integers, "4"));
}

TEST(MultipleOf, OthersAreUnsupportedOrInvalid) {
  for (const char* s : {R"({"type":"number","multipleOf":2.5})", R"({"type":"integer","multipleOf":3,"minimum":1})",
                        R"({"type":"integer","multipleOf":101})"}) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = s});
    ASSERT_FALSE(g.ok()) << s;
    EXPECT_EQ(g.status().code(), ErrorCode::kUnsupported) << s;
    EXPECT_NE(g.status().message().find("multipleOf"), std::string::npos);
  }
  auto bad = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"multipleOf":-1})"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace keel::grammar
