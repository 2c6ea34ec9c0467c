// `not` and if/then/else in the JSON Schema compiler: each compiled schema accepts exactly the
// instances the specification's semantics admit (expectations written from the specification, not
// from keel), and negations keel cannot state exactly are kUnsupported naming the keyword.
#include <gtest/gtest.h>

#include "grammar/compile.h"
#include "grammar/earley.h"
#include "unit/grammar/schema_accepts.h"

namespace keel::grammar {
namespace {

using test::accepts;
using test::Case;

TEST(SchemaNot, NegationsMatchTheSpecification) {
  const Case cases[] = {
      {R"({"not":{}})", "1", false},
      {R"({"not":{"description":"only an annotation"}})", "null", false},
      {R"({"not":false})", "[1]", true},
      {R"({"not":{"type":"string"}})", R"("a")", false},
      {R"({"not":{"type":"string"}})", "1.5", true},
      {R"({"not":{"type":["string","number"]}})", "3", false},
      {R"({"not":{"type":["string","number"]}})", "true", true},
      {R"({"type":"object","properties":{"a":{"type":"integer"}},"not":{"required":["a"]}})", R"({"a":1})", false},
      {R"({"type":"object","properties":{"a":{"type":"integer"}},"not":{"required":["a"]}})", "{}", true},
      {R"({"not":{"required":["a"]}})", "1", false},  // required holds for non-objects, so its negation fails
      {R"({"not":{"required":["a","b"]}})", R"({"a":1})", true},
      {R"({"not":{"required":["a","b"]}})", R"({"a":1,"b":2})", false},
      {R"({"type":"object","not":{"anyOf":[{"required":["a"]},{"required":["b"]}]}})", R"({"b":1})", false},
      {R"({"type":"object","not":{"anyOf":[{"required":["a"]},{"required":["b"]}]}})", R"({"c":1})", true},
      {R"({"not":{"not":{"type":"integer"}}})", "1", true},
      {R"({"not":{"not":{"type":"integer"}}})", R"("1")", false},
      {R"({"not":{"properties":{"a":{"type":"string"}}}})", R"({"a":1})", true},
      {R"({"not":{"properties":{"a":{"type":"string"}}}})", R"({"a":"x"})", false},
      {R"({"not":{"properties":{"a":{"type":"string"}}}})", "{}", false},
      {R"({"not":{"type":"object","required":["a"]}})", "[]", true},
      {R"({"not":{"type":"object","required":["a"]}})", R"({"b":1})", true},
      {R"({"not":{"type":"object","required":["a"]}})", R"({"a":1})", false},
      {R"({"not":{"enum":["a","b",null,true]}})", R"("a")", false},
      {R"({"not":{"enum":["a","b",null,true]}})", R"("ab")", true},
      {R"({"not":{"enum":["a","b",null,true]}})", R"("")", true},
      {R"({"not":{"enum":["a","b",null,true]}})", "null", false},
      {R"({"not":{"enum":["a","b",null,true]}})", "true", false},
      {R"({"not":{"enum":["a","b",null,true]}})", "false", true},
      {R"({"not":{"enum":["a","b",null,true]}})", "0", true},
      {R"({"not":{"const":"x"}})", R"("x")", false},
      {R"({"not":{"const":"x"}})", R"("\u0078")", false},  // not a canonical spelling: never emitted
      {R"({"not":{"const":"x"}})", R"("y")", true},
      {R"({"not":{"const":"x"}})", "{}", true},
      {R"({"type":"string","enum":["a","b","c"],"not":{"enum":["b"]}})", R"("b")", false},
      {R"({"type":"string","enum":["a","b","c"],"not":{"enum":["b"]}})", R"("c")", true},
      {R"({"not":{"not":{"const":"x"}}})", R"("x")", true},
      {R"({"not":{"not":{"const":"x"}}})", R"("y")", false},
      {R"({"not":{"allOf":[{"type":"string"},{"enum":["a","b"]}]}})", R"("a")", false},
      {R"({"not":{"allOf":[{"type":"string"},{"enum":["a","b"]}]}})", R"("c")", true},
      {R"({"not":{"allOf":[{"type":"string"},{"enum":["a","b"]}]}})", "3", true},
      {R"({"not":{"items":{"type":"string"}}})", R"(["a","b"])", false},
      {R"({"not":{"items":{"type":"string"}}})", "[]", false},
      {R"({"not":{"items":{"type":"string"}}})", R"(["a",1])", true},
      {R"({"not":{"items":{"type":"string"}}})", "{}", false},  // items holds for non-arrays
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
}

TEST(SchemaNot, UnsatisfiableSchemasHaveAnEmptyLanguage) {
  for (const char* s : {R"({"not":{}})", R"({"type":"object","required":["a"],"properties":{"a":false}})",
                        R"({"allOf":[{"type":"string"},{"not":{"type":"string"}}]})"}) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = s});
    ASSERT_TRUE(g.ok()) << s;
    EXPECT_TRUE(g.value()->language_empty()) << s;
  }
  for (const char* s : {R"({"not":{"type":"string"}})", R"({"type":"object","properties":{"a":false}})"}) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = s});
    ASSERT_TRUE(g.ok()) << s;
    EXPECT_FALSE(g.value()->language_empty()) << s;
  }
}

TEST(SchemaNot, IfThenElseMatchesTheSpecification) {
  const char* s = R"({"if":{"required":["a"]},"then":{"required":["b"]},"else":{"required":["c"]}})";
  EXPECT_FALSE(accepts(s, R"({"a":1})"));
  EXPECT_TRUE(accepts(s, R"({"a":1,"b":2})"));
  EXPECT_TRUE(accepts(s, R"({"c":1})"));
  EXPECT_FALSE(accepts(s, R"({"b":1})"));
  EXPECT_TRUE(accepts(s, "3"));  // `if` holds for a non-object, and so does `then`
  const char* t = R"({"if":{"properties":{"a":{"type":"string"}}},"then":{"required":["b"]}})";
  EXPECT_TRUE(accepts(t, R"({"a":1})"));
  EXPECT_FALSE(accepts(t, R"({"a":"x"})"));
  EXPECT_TRUE(accepts(t, R"({"a":"x","b":null})"));
}

TEST(SchemaNot, InexactNegationsAreUnsupportedNamingTheKeyword) {
  struct Bad {
    const char* schema;
    const char* needle;
  };
  const Bad bad[] = {
      {R"({"not":{"multipleOf":0.5}})", "'not'"},
      {R"({"properties":{"x":{"not":{"multipleOf":3}}}})", "#/properties/x/not"},
      {R"({"not":{"enum":["a",[1]]}})", "'not'"},
      {R"({"not":{"uniqueItems":true}})", "'uniqueItems'"},
      {R"({"if":{"properties":{"k":{"multipleOf":2}}},"then":{"required":["b"]}})", "'if'"},
  };
  for (const Bad& b : bad) {
    auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = b.schema});
    ASSERT_FALSE(g.ok()) << b.schema;
    EXPECT_EQ(g.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(g.status().message().find(b.needle), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace keel::grammar
