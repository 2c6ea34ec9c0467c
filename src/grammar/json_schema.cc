#include "grammar/json_schema.h"

#include "grammar/schema_compiler.h"

namespace keel::grammar {

Result<Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& opts,
                                    const BuildLimits& limits) {
  GrammarBuilder b(limits);
  detail::SchemaCompiler compiler(b, schema, opts);
  RuleId root = b.add_rule("root");
  KEEL_ASSIGN_OR_RETURN(Symbol body, compiler.compile(schema, "", 0));
  b.add_alt(root, {body});
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
