// Negations of bounds, lengths, counts, pattern, contains, prefixItems and numeric enums
// (schema_not_values.cc), minProperties / maxProperties and maxContains (schema_counts.cc): every
// compiled schema accepts exactly what the specification admits (expectations written from the
// specification's definitions, not from keel's output).
#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "unit/grammar/schema_accepts.h"

namespace keel::grammar {
namespace {

using test::accepts;
using test::Case;

void check(const Case* begin, const Case* end) {
  for (const Case* c = begin; c != end; ++c)
    EXPECT_EQ(accepts(c->schema, c->instance), c->valid) << c->schema << " " << c->instance;
}

TEST(SchemaNegation, BoundsLengthsAndCounts) {
  const char* min = R"({"not":{"minimum":2.5}})";
  const char* xmax = R"({"not":{"exclusiveMaximum":3}})";
  const char* d4 = R"({"not":{"minimum":2,"exclusiveMinimum":true}})";  // draft-04: not (x > 2)
  const char* len = R"({"not":{"minLength":2,"maxLength":3}})";
  const char* items = R"({"not":{"maxItems":1}})";
  const char* props = R"({"not":{"minProperties":1}})";
  const Case cases[] = {
      {min, "2", true},        {min, "2.49", true},   {min, "2.5", false},   {min, "3", false},
      {min, "-7", true},       {min, R"("x")", true}, {min, "null", true},   {min, "[]", true},
      {xmax, "3", true},       {xmax, "3.0", true},   {xmax, "2.99", false}, {xmax, "4", true},
      {d4, "2", true},         {d4, "1", true},       {d4, "2.01", false},   {d4, "true", true},
      {len, R"("a")", true},   {len, R"("")", true},  {len, R"("ab")", false}, {len, R"("abc")", false},
      {len, R"("abcd")", true}, {len, "5", true},
      {items, "[]", false},    {items, "[1]", false}, {items, "[1,2]", true}, {items, "{}", true},
      {props, "{}", true},     {props, R"({"a":1})", false}, {props, "7", true},
  };
  check(std::begin(cases), std::end(cases));
}

TEST(SchemaNegation, PatternContainsPrefixItemsAndNumbers) {
  const char* pat = R"({"not":{"pattern":"^a+$"}})";
  const char* two = R"({"allOf":[{"not":{"pattern":"^a"}},{"not":{"pattern":"b$"}}]})";
  const char* con = R"({"not":{"contains":{"type":"string"}}})";
  const char* pre = R"({"not":{"prefixItems":[{"type":"boolean"},{"const":"x"}]}})";
  const char* num = R"({"not":{"enum":[1,2.5,"a"]}})";
  const char* one = R"({"type":"number","not":{"const":0}})";
  const Case cases[] = {
      {pat, R"("aaa")", false}, {pat, R"("ab")", true},  {pat, R"("")", true},   {pat, R"("ba")", true},
      {pat, "1", true},
      {two, R"("xx")", true},   {two, R"("ax")", false}, {two, R"("xb")", false}, {two, R"("ab")", false},
      {two, "1", true},
      {con, "[]", true},        {con, "[1,2]", true},    {con, R"([1,"s"])", false}, {con, R"("s")", true},
      {pre, "[]", false},       {pre, "[true]", false},  {pre, R"([false,"x",3])", false}, {pre, R"([true,"y"])", true},
      {pre, R"(["1"])", true},  {pre, "{}", true},
      {num, "1", false},        {num, "1.0", false},     {num, "2.5", false}, {num, "2", true},
      {num, R"("a")", false},   {num, R"("b")", true},   {num, "-3", true},   {num, "null", true},
      {one, "0", false},        {one, "0.0", false},     {one, "-0.5", true}, {one, "0.0000001", true},
  };
  check(std::begin(cases), std::end(cases));
}

TEST(SchemaNegation, IntegerAndUnknownFormats) {
  const char* nint = R"({"not":{"type":"integer"}})";
  const char* fmt = R"({"type":"string","format":"no-such-format"})";
  const char* nfmt = R"({"not":{"format":"no-such-format"}})";
  const char* known = R"({"not":{"format":"email"}})";
  const Case cases[] = {
      {nint, "1", false},   {nint, "1.0", false}, {nint, "-20", false}, {nint, "1.5", true}, {nint, "-0.25", true},
      {nint, R"("1")", true}, {nint, "null", true},
      {fmt, R"("anything at all")", true}, {fmt, "3", false},
      {nfmt, R"("x")", false}, {nfmt, "3", false},  // not of an annotation: nothing is valid
  };
  check(std::begin(cases), std::end(cases));
  // A format the specification defines but keel has no pattern for is not an annotation.
  for (const char* s : {R"({"format":"hostname"})", known}) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = s});
    ASSERT_FALSE(g.ok()) << s;
    EXPECT_NE(g.status().message().find("'format'"), std::string::npos) << g.status().message();
  }
}

TEST(SchemaPropertyNames, FalseEnumPatternAndLength) {
  const char* no = R"({"propertyNames":false})";
  const char* en = R"({"properties":{"a":{"type":"integer"},"z":{}},"propertyNames":{"enum":["a","b"]}})";
  const char* pat = R"({"properties":{"x1":{"type":"string"},"y":{}},"propertyNames":{"pattern":"^x"}})";
  const char* len = R"({"propertyNames":{"maxLength":2},"additionalProperties":{"type":"null"}})";
  const Case cases[] = {
      {no, "{}", true},                    {no, R"({"a":1})", false},          {no, "[1]", true},
      {en, R"({"a":1,"b":"s"})", true},    {en, R"({"a":"s"})", false},        {en, R"({"z":1})", false},
      {en, R"({"c":1})", false},           {en, "{}", true},
      {pat, R"({"x1":"s","xyz":[]})", true}, {pat, R"({"x1":2})", false},      {pat, R"({"y":1})", false},
      {pat, R"({"ax":1})", false},         {pat, R"({"x":null})", true},
      {len, R"({"ab":null,"c":null})", true}, {len, R"({"abc":null})", false}, {len, R"({"":null})", true},
      {len, R"({"ab":1})", false},
  };
  check(std::begin(cases), std::end(cases));
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema,
                            .source = R"({"propertyNames":{"format":"email"},"patternProperties":{"^a":{}}})"});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'propertyNames' at '#'"), std::string::npos) << g.status().message();
}

TEST(SchemaCounts, MinAndMaxProperties) {
  const char* max = R"({"maxProperties":2})";
  const char* min = R"({"minProperties":1})";
  const char* min_listed = R"({"properties":{"a":{}},"minProperties":2})";
  const char* both = R"({"properties":{"a":{},"b":{}},"required":["a"],"minProperties":2,"maxProperties":3})";
  const char* closed = R"({"properties":{"a":{},"b":{},"c":{}},"additionalProperties":false,"maxProperties":1})";
  const char* zero = R"({"maxProperties":0})";
  const Case cases[] = {
      {max, "{}", true},   {max, R"({"x":1,"y":2})", true},       {max, R"({"x":1,"y":2,"z":3})", false},
      {max, "[1,2,3]", true},
      {min, "{}", false},  {min, R"({"x":1})", true},             {min, R"({"x":1,"y":2})", true},
      {min, R"({"x":1,"y":2,"z":[]})", true},                     {min, R"("ab")", true},
      {min_listed, R"({"a":1,"x":2})", true}, {min_listed, R"({"a":1,"x":2,"y":3})", true},
      {min_listed, R"({"a":1})", false},
      // A repeated key is one member once parsed ({"x":2}): it must not reach the minimum.
      {min_listed, R"({"x":1,"x":2})", false},
      {both, R"({"a":1})", false},          {both, R"({"a":1,"b":2})", true},   {both, R"({"a":1,"z":2})", true},
      {both, R"({"a":1,"b":2,"z":3})", true}, {both, R"({"a":1,"b":2,"y":3,"z":4})", false},
      {both, R"({"b":2,"z":3})", false},
      {closed, "{}", true}, {closed, R"({"b":1})", true},        {closed, R"({"a":1,"c":1})", false},
      {zero, "{}", true},  {zero, R"({"a":1})", false},           {zero, "0", true},
  };
  check(std::begin(cases), std::end(cases));
  // Two or more members beyond the listed properties: the extra keys could repeat one another.
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"minProperties":2})"});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(g.status().message().find("'minProperties' at '#'"), std::string::npos) << g.status().message();
}

TEST(SchemaCounts, MaxContains) {
  const char* max = R"({"contains":{"const":1},"maxContains":2})";
  const char* range = R"({"items":{"type":"integer"},"contains":{"minimum":5},"minContains":1,"maxContains":1})";
  const char* zero = R"({"contains":{"const":1},"minContains":0,"maxContains":1})";
  const char* none = R"({"contains":{"type":"string"},"maxContains":0})";
  const Case cases[] = {
      {max, "[]", false},     {max, "[1]", true},       {max, "[1,1]", true},  {max, "[1,2,1]", true},
      {max, "[1,1,1]", false}, {max, "[2]", false},     {max, R"("x")", true},
      {range, "[5]", true},   {range, "[1,6,2]", true}, {range, "[5,6]", false}, {range, "[1]", false},
      {range, R"([5,"a"])", false},
      {zero, "[]", true},     {zero, "[2]", true},      {zero, "[1]", true},   {zero, "[1,1]", false},
      {none, "[]", false},    {none, "[1]", false},     {none, R"(["a"])", false},  // maxContains < minContains 1
  };
  check(std::begin(cases), std::end(cases));
}

}  // namespace
}  // namespace keel::grammar
