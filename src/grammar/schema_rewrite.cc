// Rewrites of keywords into the ones the compiler runs directly, each exact:
//   dependentRequired {a: [b, c]}   -> anyOf [{properties: {a: false}}, {required: [a, b, c]}]
//   dependentSchemas {a: S}         -> anyOf [{properties: {a: false}}, allOf [{required: [a]}, S]]
//   dependencies (draft-07)         -> the above, by the form of each value
//   oneOf [s1, ..., sn]             -> anyOf [s_i and not s_j for every j that may overlap s_i]
// The dependency rewrites are added to the schema's allOf, so the allOf merge then distributes the
// anyOfs over the sibling keywords (bounded by its product limit). A oneOf whose overlapping
// branches have no exact negation (schema_not.cc) stays kUnsupported, naming the branches.
#include <optional>
#include <string>
#include <vector>

#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

constexpr size_t kMaxDependencies = 6;  // 2^k anyOf branches after merging

Status bad(std::string_view keyword, const std::string& ptr, std::string_view want) {
  return make_error(ErrorCode::kInvalidArgument, "'{}' at '#{}' must be {}", keyword, ptr, want);
}

Json absent(const std::string& name) { return Json{{"properties", Json{{name, false}}}}; }

Result<Json> required_dependency(const std::string& name, const Json& names, const std::string& ptr) {
  Json req = Json::array({name});
  for (const Json& n : names) {
    if (!n.is_string()) return bad("dependentRequired", ptr, "an object of string arrays");
    if (n != name) req.push_back(n);
  }
  return Json{{"anyOf", Json::array({absent(name), Json{{"required", req}}})}};
}

Json schema_dependency(const std::string& name, const Json& schema) {
  Json present = Json{{"allOf", Json::array({Json{{"required", Json::array({name})}}, schema})}};
  return Json{{"anyOf", Json::array({absent(name), present})}};
}

}  // namespace

Result<Json> rewrite_dependencies(const Json& s, const std::string& ptr) {
  Json out = s;
  Json extra = Json::array();
  for (const char* k : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    if (!s.contains(k)) continue;
    out.erase(k);
    const Json& deps = s[k];
    const std::string kptr = ptr + "/" + k;
    if (!deps.is_object()) return bad(k, ptr, "an object");
    for (auto& [name, v] : deps.items()) {
      const bool as_names = std::string_view(k) == "dependentRequired" || (std::string_view(k) == "dependencies" && v.is_array());
      if (as_names) {
        if (!v.is_array()) return bad(k, ptr, "an object of string arrays");
        if (v.empty()) continue;
        KEEL_ASSIGN_OR_RETURN(Json dep, required_dependency(name, v, kptr));
        extra.push_back(std::move(dep));
      } else {
        if (!v.is_object() && !v.is_boolean()) return bad(k, ptr, "an object of schemas");
        if (v == true || v == Json::object()) continue;
        extra.push_back(schema_dependency(name, v));
      }
    }
  }
  if (extra.size() > kMaxDependencies)
    return make_error(ErrorCode::kUnsupported,
                      "JSON Schema keyword 'dependentRequired'/'dependentSchemas' at '#{}' is not supported: more than {} "
                      "dependencies on one object",
                      ptr.empty() ? "" : ptr, kMaxDependencies);
  if (extra.empty()) return out;
  if (!out.contains("allOf")) out["allOf"] = Json::array();
  if (!out["allOf"].is_array()) return bad("allOf", ptr, "a non-empty array");
  for (Json& e : extra) out["allOf"].push_back(std::move(e));
  return out;
}

Result<std::vector<Json>> exclusive_branches(const std::vector<Json>& branches, const std::vector<Json>& items,
                                             const std::string& ptr, const Json& root) {
  std::vector<std::optional<Json>> negated(items.size());
  std::vector<Json> out;
  for (size_t i = 0; i < branches.size(); ++i) {
    Json all = Json::array({branches[i]});
    for (size_t j = 0; j < branches.size(); ++j) {
      if (j == i || provably_disjoint(branches[i], branches[j])) continue;
      if (!negated[j]) {
        auto n = negate_schema(items[j], ptr + "/oneOf/" + std::to_string(j), 0, root);
        if (!n.ok()) {
          if (n.status().code() != ErrorCode::kUnsupported) return n.status();
          return make_error(ErrorCode::kUnsupported,
                            "JSON Schema keyword 'oneOf' at '#{}' is not supported: branches {} and {} may overlap and "
                            "branch {} has no exact negation ({})",
                            ptr, std::min(i, j), std::max(i, j), j, n.status().message());
        }
        negated[j] = std::move(n).value();
      }
      if (*negated[j] == false) {
        all = Json::array({false});
        break;
      }
      if (*negated[j] != true) all.push_back(*negated[j]);
    }
    out.push_back(all.size() == 1 ? all[0] : Json{{"allOf", all}});
  }
  return out;
}

}  // namespace keel::grammar::detail
