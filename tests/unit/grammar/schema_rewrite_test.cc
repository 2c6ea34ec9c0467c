// dependentRequired / dependentSchemas / dependencies and overlapping oneOf in the JSON Schema
// compiler: each compiled schema accepts exactly the instances the specification admits
// (expectations written from the specification, not from keel); inexact cases stay kUnsupported.
#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "grammar/earley.h"
#include "unit/grammar/schema_accepts.h"

namespace keel::grammar {
namespace {

using test::accepts;
using test::Case;

TEST(SchemaRewrite, DependenciesMatchTheSpecification) {
  const char* req = R"({"properties":{"a":{},"b":{},"c":{}},"dependentRequired":{"a":["b","c"]}})";
  const char* draft7 = R"({"properties":{"a":{},"b":{}},"dependencies":{"b":["a"],"a":{"properties":{"b":{"type":"string"}}}}})";
  const char* sch = R"({"properties":{"a":{},"b":{}},"dependentSchemas":{"a":{"required":["b"],"properties":{"b":{"const":1}}}}})";
  const Case cases[] = {
      {req, "{}", true},
      {req, R"({"b":1})", true},
      {req, R"({"a":1,"b":2,"c":3})", true},
      {req, R"({"a":1,"b":2})", false},
      {req, R"({"a":1})", false},
      {req, "[1]", true},  // dependencies only look at objects
      {draft7, R"({"a":1,"b":"x"})", true},
      {draft7, R"({"a":1,"b":2})", false},
      {draft7, R"({"b":"x"})", false},
      {draft7, R"({"a":1})", true},
      {sch, R"({"a":0,"b":1})", true},
      {sch, R"({"a":0,"b":2})", false},
      {sch, R"({"a":0})", false},
      {sch, R"({"b":2})", true},
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
}

TEST(SchemaRewrite, OverlappingOneOfAcceptsExactlyOneBranch) {
  const char* req = R"({"type":"object","properties":{"a":{},"b":{}},"oneOf":[{"required":["a"]},{"required":["b"]}]})";
  const char* en = R"({"oneOf":[{"type":"string"},{"enum":["x","y",null]}]})";
  const char* pr = R"({"type":"object","oneOf":[{"properties":{"k":{"const":"u"},"v":{"type":"boolean"}}},
                                             {"properties":{"k":{"const":"w"},"v":{"type":"string"}}}]})";
  const Case cases[] = {
      {req, R"({"a":1})", true},
      {req, R"({"b":1})", true},
      {req, R"({"a":1,"b":2})", false},
      {req, "{}", false},
      {en, R"("z")", true},
      {en, R"("x")", false},  // both branches
      {en, "null", true},
      {en, "2", false},
      {pr, R"({"k":"u","v":true})", true},
      {pr, R"({"k":"w","v":"s"})", true},
      {pr, R"({"k":"u","v":"s"})", false},  // neither
      {pr, R"({"v":false})", true},          // only the first
      {pr, R"({"k":"z"})", false},           // neither
      {pr, "{}", false},                     // both
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
}

TEST(SchemaRewrite, PatternPropertiesMatchingEveryKey) {
  const char* all = R"({"properties":{"a":{"type":"integer"}},"patternProperties":{".*":{"minimum":0}},
                        "additionalProperties":false})";
  const Case cases[] = {
      {all, R"({"a":1,"b":2})", true},  // every key matches ".*", so additionalProperties never applies
      {all, R"({"a":-1})", false},      // "a" matches the pattern too
      {all, R"({"a":"x"})", false},
      {all, R"({"b":-2})", false},
      {all, R"({"b":"x"})", true},      // minimum only constrains numbers
      {all, "{}", true},
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
}

TEST(SchemaRewrite, PatternPropertiesBesideAdditionalProperties) {
  const char* typed = R"({"properties":{"ab":{"type":"integer"},"b":{}},"patternProperties":{"^a":{"type":"string"}},
                          "additionalProperties":{"type":"boolean"}})";
  const char* open = R"({"patternProperties":{"^[a-z]+$":{"type":"integer"}}})";
  const char* closed = R"({"properties":{"ab":{"minimum":3}},"required":["ac"],"patternProperties":{"^a":{"type":"integer"}},
                           "additionalProperties":false})";
  const Case cases[] = {
      {typed, R"({"ab":1})", false},  // "ab" matches ^a: integer and string
      {typed, R"({"ab":"x"})", false},
      {typed, R"({"ax":"s"})", true},
      {typed, R"({"ax":1})", false},
      {typed, R"({"c":true})", true},
      {typed, R"({"c":"s"})", false},
      {typed, R"({"":false})", true},
      {typed, R"({"b":"s"})", true},  // listed: additionalProperties does not apply
      {typed, R"({"ba":"s"})", false},
      {open, R"({"abc":1})", true},
      {open, R"({"abc":"x"})", false},
      {open, R"({"ABC":"x"})", true},
      {open, R"({"a-b":"x"})", true},
      {open, R"({"":"x"})", true},
      {open, R"({"a\"":"x"})", true},
      {open, R"({"abc":1,"ABC":[],"zz":2})", true},
      {closed, R"({"ac":1})", true},
      {closed, R"({"ac":"1"})", false},
      {closed, R"({"ab":2,"ac":1})", false},  // ab: minimum 3 and integer
      {closed, R"({"ab":3,"ac":1})", true},
      {closed, R"({"ab":3.5,"ac":1})", false},
      {closed, R"({"ac":1,"ad":2})", true},
      {closed, R"({"ac":1,"b":2})", false},
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
}

TEST(SchemaRewrite, ContainsWithMinContains) {
  const char* one = R"({"contains":{"minimum":5}})";
  const char* two = R"({"items":{"type":"integer"},"contains":{"const":2},"minContains":2})";
  const char* zero = R"({"type":"array","contains":{"const":1},"minContains":0})";
  const Case cases[] = {
      {one, "[]", false},     {one, "[1]", false},      {one, "[5]", true},         {one, "[1,6]", true},
      {one, R"("x")", true},  {one, R"([1,"a"])", true}, {one, R"(["a",7])", true}, {two, "[2,2]", true},
      {two, "[2,1,2]", true}, {two, "[2]", false},      {two, R"([2,"x",2])", false}, {two, "[]", false},
      {two, "[1,2,3,2]", true}, {zero, "[]", true},     {zero, "[3]", true},
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = R"({"contains":{"multipleOf":3},"maxContains":1})"});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'maxContains' at '#'"), std::string::npos) << g.status().message();
}

TEST(SchemaFormats, UriReferenceFollowsRfc3986) {
  const char* s = R"({"type":"string","format":"uri-reference"})";
  for (const char* ok : {R"("http://a/b?c#d")", R"("//host:80/p")", R"("/abs/path")", R"("rel/path")", R"("")",
                         R"("?q=1")", R"("#frag")", R"("../x")", R"("a:b")", R"("%41b")"})
    EXPECT_TRUE(accepts(s, ok)) << ok;
  for (const char* bad : {R"("a b")", R"("%zz")", R"("1:x")", R"("\\x")", R"("http://a b")", R"("#a#b")"})
    EXPECT_FALSE(accepts(s, bad)) << bad;
}

TEST(SchemaRewrite, InexactCasesAreUnsupportedNamingTheKeyword) {
  const char* bad[] = {
      R"({"oneOf":[{"multipleOf":2},{"multipleOf":3}]})",
      R"({"oneOf":[{"type":"array"},{"uniqueItems":true}]})",
  };
  for (const char* s : bad) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = s});
    ASSERT_FALSE(g.ok()) << s;
    EXPECT_EQ(g.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(g.status().message().find("'oneOf' at '#'"), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace keel::grammar
