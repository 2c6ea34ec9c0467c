// Test helper for the JSON Schema compiler tests: compile a schema and run one instance through the
// Earley parser, and a table row of (schema, instance, valid by the specification).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "grammar/compile.h"
#include "grammar/earley.h"

namespace keel::grammar::test {

inline bool accepts(const std::string& schema, const std::string& instance) {
  auto g = compile_grammar({.kind = GrammarSpec::Kind::kJsonSchema, .source = schema});
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().to_string();
  if (!g.ok()) return false;
  EarleyParser p(*g.value());
  return p.push_bytes(instance) && p.can_end();
}

struct Case {
  const char* schema;
  const char* instance;
  bool valid;
};

}  // namespace keel::grammar::test
