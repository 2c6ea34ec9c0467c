// Reference resolution (schema_refs.cc): $id base URIs, $anchor, $dynamicRef with one static
// target, URN bases and caller-supplied documents, against the resolution rules of JSON Schema
// 2020-12 §8.2 and RFC 3986 (expectations from the specification, not from keel's output).
#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/json_schema.h"
#include "unit/grammar/schema_accepts.h"

namespace keel::grammar {
namespace {

using test::Case;
using Json = nlohmann::ordered_json;

Result<Grammar> compile(const char* schema, const SchemaDocuments* docs = nullptr) {
  return json_schema_grammar(Json::parse(schema), {}, {}, docs);
}

bool accepts(const char* schema, const char* instance, const SchemaDocuments* docs = nullptr) {
  auto g = compile(schema, docs);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().to_string();
  if (!g.ok()) return false;
  CompiledGrammar cg(std::move(g).value());
  EarleyParser p(cg);
  return p.push_bytes(instance) && p.can_end();
}

TEST(SchemaRefs, IdsAnchorsAndUrns) {
  const char* rel = R"({"$id":"http://x.test/root.json","$defs":{"a":{"$id":"sub/a.json","type":"integer"}},
                       "properties":{"p":{"$ref":"sub/a.json"},"q":{"$ref":"http://x.test/sub/a.json"}}})";
  const char* anchor = R"({"$defs":{"a":{"$anchor":"num","type":"number"}},"items":{"$ref":"#num"}})";
  // Inside the resource "inner", '#/$defs/t' is inner's own $defs (a string), not the root's.
  const char* nested = R"({"$id":"http://x.test/r","$defs":{"t":{"type":"integer"},
                          "inner":{"$id":"inner","$defs":{"t":{"type":"string"}},"$ref":"#/$defs/t"}},
                          "$ref":"inner"})";
  const char* urn = R"({"$id":"urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed","$defs":{"b":{"type":"boolean"}},
                       "$ref":"urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed#/$defs/b"})";
  const char* dots = R"({"$id":"http://x.test/a/b/c.json","$defs":{"d":{"$id":"../d.json","const":7}},
                        "$ref":"http://x.test/a/d.json"})";
  // Draft-04 spells $id "id"; "#name" is a plain-name identifier there.
  const char* d4 = R"({"$schema":"http://json-schema.org/draft-04/schema#","definitions":{"a":{"id":"#n","type":"null"}},
                      "items":{"$ref":"#n"}})";
  const Case cases[] = {
      {d4, "[null]", true},            {d4, "[1]", false},
      {rel, R"({"p":1,"q":2})", true}, {rel, R"({"p":"s"})", false}, {rel, R"({"q":1.5})", false},
      {anchor, "[1,2.5]", true},       {anchor, R"(["x"])", false},
      {nested, R"("s")", true},        {nested, "1", false},
      {urn, "true", true},             {urn, "1", false},
      {dots, "7", true},               {dots, "8", false},
  };
  for (const Case& c : cases) EXPECT_EQ(accepts(c.schema, c.instance), c.valid) << c.schema << " " << c.instance;
}

TEST(SchemaRefs, SuppliedDocumentsAndDynamicRefs) {
  const SchemaDocuments docs = {
      {"http://d.test/x.json", Json::parse(R"({"$defs":{"n":{"type":"null"},"r":{"$ref":"y.json"}}})")},
      {"http://d.test/y.json", Json::parse(R"({"type":"string","maxLength":2})")},
  };
  const char* remote = R"({"items":[{"$ref":"http://d.test/x.json#/$defs/n"},{"$ref":"http://d.test/x.json#/$defs/r"}]})";
  EXPECT_TRUE(accepts(remote, R"([null,"ab"])", &docs));
  EXPECT_FALSE(accepts(remote, R"([null,"abc"])", &docs));
  EXPECT_FALSE(accepts(remote, R"([1])", &docs));
  // Without the documents, the reference names the keyword and is never dropped.
  auto g = compile(remote);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(g.status().message().find("'$ref' at '#/items/0'"), std::string::npos) << g.status().message();

  const char* dyn = R"({"$defs":{"s":{"$dynamicAnchor":"item","type":"string"}},"items":{"$dynamicRef":"#item"}})";
  EXPECT_TRUE(accepts(dyn, R"(["a","b"])"));
  EXPECT_FALSE(accepts(dyn, R"(["a",1])"));
  // Two resources declare the anchor: the target depends on the dynamic scope.
  const char* two = R"({"$id":"http://x.test/1","$dynamicAnchor":"t","$defs":{
                       "o":{"$id":"http://x.test/2","$dynamicAnchor":"t","items":{"$dynamicRef":"#t"}}},"$ref":"http://x.test/2"})";
  g = compile(two);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'$dynamicRef'"), std::string::npos) << g.status().message();
  // An $id inside an enum value is data, not an identifier.
  g = compile(R"({"$defs":{"e":{"enum":[{"$id":"http://x.test/fake","type":"null"}]}},"$ref":"http://x.test/fake"})");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'$ref'"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace keel::grammar
