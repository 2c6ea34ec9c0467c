// JSON Schema (draft 2020-12 as used in practice, plus draft-07 tuple `items`/`additionalItems` and
// OpenAPI `nullable`) compiled to a grammar that accepts exactly the compact (or boundedly spaced)
// JSON texts of instances valid under the schema, with object properties in schema order. Anything
// keel cannot enforce exactly is a kUnsupported error naming the keyword and its JSON pointer; the
// result never accepts an invalid instance. Called by compile.h on the compiling thread.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "grammar/grammar.h"

namespace keel::grammar {

enum class WhitespacePolicy {
  kCompact,  // no whitespace between JSON tokens
  kBounded,  // up to JsonGrammarOptions::max_whitespace of [ \t\n\r] between tokens
};

struct JsonGrammarOptions {
  WhitespacePolicy whitespace = WhitespacePolicy::kCompact;
  int max_whitespace = 16;
  // What an absent `additionalProperties` means: true is the JSON Schema default; false gives
  // strict objects (only listed properties), as most structured-output engines do.
  bool additional_properties_default = true;
};

// Documents a schema may reference by URI ($ref to another document), supplied by the caller; keel
// never fetches a reference. The server supplies none.
using SchemaDocuments = std::map<std::string, nlohmann::ordered_json>;

Result<Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& opts,
                                    const BuildLimits& limits = {}, const SchemaDocuments* documents = nullptr);
// Any JSON value (json_object mode).
Result<Grammar> any_json_grammar(const JsonGrammarOptions& opts, const BuildLimits& limits = {});

}  // namespace keel::grammar
