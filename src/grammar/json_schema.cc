#include "grammar/json_schema.h"

#include <utility>
#include <vector>

#include "grammar/schema_compiler.h"

namespace keel::grammar {
namespace {

constexpr size_t kMaxJsonDepth = 512;

// Iterative depth check, so that later recursive walks (dump, compile) stay within the stack.
bool deeper_than(const nlohmann::ordered_json& root, size_t limit) {
  std::vector<std::pair<const nlohmann::ordered_json*, size_t>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [v, depth] = stack.back();
    stack.pop_back();
    if (depth > limit) return true;
    if (v->is_structured())
      for (const auto& child : *v) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace

Result<Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& opts,
                                    const BuildLimits& limits, const SchemaDocuments* documents) {
  if (deeper_than(schema, kMaxJsonDepth))
    return make_error(ErrorCode::kUnsupported, "JSON Schema nested deeper than {} levels", kMaxJsonDepth);
  GrammarBuilder b(limits);
  RuleId root = b.add_rule("root");
  // The compiler checks value types before use; this boundary keeps a missed case an error, not a crash.
  try {
    KEEL_ASSIGN_OR_RETURN(nlohmann::ordered_json resolved, detail::resolve_references(schema, documents));
    detail::SchemaCompiler compiler(b, resolved, opts);
    KEEL_ASSIGN_OR_RETURN(Symbol body, compiler.compile(resolved, "", 0));
    b.add_alt(root, {body});
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "malformed JSON Schema: {}", e.what());
  }
  return b.finish(root);
}

Result<Grammar> any_json_grammar(const JsonGrammarOptions& opts, const BuildLimits& limits) {
  GrammarBuilder b(limits);
  const nlohmann::ordered_json empty = nlohmann::ordered_json::object();
  detail::SchemaCompiler compiler(b, empty, opts);
  RuleId root = b.add_rule("root");
  b.add_alt(root, {compiler.any_value()});
  return b.finish(root);
}

}  // namespace keel::grammar
