// Internal to the JSON Schema front end: the compiler object that walks one schema document and
// emits rules into a GrammarBuilder. schema_compiler.cc holds dispatch, $ref, combinators and enums;
// schema_types.cc the per-type rules (object, array, string, number); schema_merge.cc allOf merging.
// One instance per compilation, on the compiling thread.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"

namespace keel::grammar::detail {

using Json = nlohmann::ordered_json;

// JSON pointer segment escaping (RFC 6901).
std::string pointer_escape(std::string_view key);
// Keywords that assert something (everything else is an annotation or unknown, and is ignored).
bool is_assertion_keyword(std::string_view key);
// Intersection of two schema objects (allOf); kUnsupported when keel cannot merge a keyword exactly.
Result<Json> merge_schemas(const Json& a, const Json& b, const std::string& ptr);
// True when no JSON value can satisfy both schemas (conservative: false when unsure).
bool provably_disjoint(const Json& a, const Json& b);
// schema_not.cc: the positive form of `not s` (kUnsupported where keel has none), and a schema with
// its `not` moved into allOf as that positive form (false when the negation is unsatisfiable).
// `root` is the document, for negating a `$ref` by its (non-recursive) target.
Result<Json> negate_schema(const Json& s, const std::string& ptr, int depth, const Json& root);
Result<Json> rewrite_not(const Json& s, const std::string& ptr, const Json& root);
// schema_not_values.cc: negations of bounds, lengths, counts, pattern, contains, prefixItems
// (nullopt: not one of those, or not exactly negatable next to its siblings); numbers outside a set.
Result<std::optional<Json>> negate_value_keyword(const Json& s, const std::string& k, const std::string& ptr,
                                                 int depth, const Json& root);
Result<Json> numbers_outside(std::vector<Json> values);
// schema_refs.cc: the schema with every $ref (and static $dynamicRef) rewritten to a '#/...' pointer
// from its root, resolved against $id base URIs, $anchor / $dynamicAnchor names and the supplied
// documents (embedded under kDocumentsKey).
inline constexpr std::string_view kDocumentsKey = "$keelDocuments";
Result<Json> resolve_references(const Json& schema, const SchemaDocuments* docs);
// The schema a '#/...' reference names within `root` (kUnsupported for other forms).
Result<const Json*> resolve_pointer(const Json& root, const std::string& ref, const std::string& ptr);
// The internal keyword for "a string the pattern does not match" (the negation of `pattern`).
inline constexpr std::string_view kNotPattern = "$keelNotPattern";
// schema_property_names.cc: propertyNames rewritten into properties / additionalProperties /
// maxProperties or the internal keyword below (every key matches this pattern).
Result<Json> rewrite_property_names(const Json& s, const std::string& ptr, const Json& root);
inline constexpr std::string_view kKeyPattern = "$keelKeyPattern";
// The internal keyword for "a number that is not an integer" (the negation of type integer).
inline constexpr std::string_view kNotInteger = "$keelNotInteger";
// if/then/else as allOf: anyOf [allOf [if, then], allOf [not if, else]]; kUnsupported naming 'if'
// when the condition has no exact negation.
Result<Json> rewrite_if(const Json& s, const std::string& ptr, const Json& root);

// schema_rewrite.cc: dependentRequired / dependentSchemas / dependencies as allOf members; the
// branches of a oneOf (merged with their siblings) each conjoined with the negation of the raw
// items that may overlap it.
Result<Json> rewrite_dependencies(const Json& s, const std::string& ptr);
Result<std::vector<Json>> exclusive_branches(const std::vector<Json>& branches, const std::vector<Json>& items,
                                             const std::string& ptr, const Json& root);
// The internal keyword for "a string other than these" (the negation of a string enum); it is
// an assertion like any other and can only narrow what a schema accepts.
inline constexpr std::string_view kStringNotIn = "$keelStringNotIn";

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& b, const Json& root, const JsonGrammarOptions& opts);

  Result<Symbol> compile(const Json& s, const std::string& ptr, int depth);
  Symbol any_value();

 private:
  Result<Symbol> compile_object_schema(const Json& s, const std::string& ptr, int depth);
  Result<Symbol> compile_ref(const std::string& ref, const std::string& ptr);
  Result<const Json*> resolve(const std::string& ref, const std::string& ptr) const;
  Result<Json> deref(const Json& s, const std::string& ptr) const;
  Result<Symbol> compile_all_of(const Json& s, const std::string& ptr, int depth);
  Result<Symbol> compile_any_of(const Json& s, const std::string& key, const std::string& ptr, int depth);
  Result<Symbol> compile_enum(const Json& s, const std::string& ptr, int depth);
  Status check_keywords(const Json& s, const std::string& ptr) const;
  Result<Symbol> compile_typed(const Json& s, const std::string& ptr, int depth);

  // schema_types.cc
  Result<Symbol> compile_object(const Json& s, const std::string& ptr, int depth);
  Result<Symbol> compile_array(const Json& s, const std::string& ptr, int depth);
  // schema_counts.cc
  Result<std::optional<Symbol>> compile_contains(const Json& s, const std::string& ptr, int depth);
  Result<Symbol> object_members(const std::vector<std::pair<Symbol, bool>>& listed, std::optional<Symbol> extra,
                                int64_t lo, int64_t hi, const std::string& ptr);
  Sequence comma();
  Result<Symbol> compile_string(const Json& s, const std::string& ptr);
  Result<Symbol> compile_number(const Json& s, const std::string& ptr, bool integer);
  Result<Symbol> key_not_in(const std::vector<std::string>& names);
  Result<Symbol> pattern_string(const std::string& pattern, bool search, const std::string& ptr);
  Result<bool> pattern_matches(const std::string& pattern, const std::string& name, const std::string& ptr);
  Result<Symbol> key_set(const std::string& pattern, const std::vector<std::string>& names, KeySet which,
                         const std::string& ptr);

  Sequence ws();
  Sequence literal_value(const Json& v);
  Symbol json_char();
  Symbol any_string();
  Symbol any_number();

  GrammarBuilder& b_;
  const Json& root_;
  JsonGrammarOptions opts_;
  std::unordered_map<std::string, RuleId> ref_rules_;
  std::unordered_map<std::string, Symbol> memo_;  // schema text -> symbol
  std::optional<Symbol> any_value_, json_char_, any_string_, any_number_, ws_;
};

}  // namespace keel::grammar::detail
