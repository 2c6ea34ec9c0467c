// `propertyNames` for the JSON Schema compiler, rewritten into keywords the object rules run, each
// exact:
//   propertyNames false / a schema no string satisfies -> maxProperties 0 (only the empty object)
//   propertyNames {enum / const of strings}            -> every allowed name listed (with the
//        additionalProperties schema when not listed already), names outside the set false, and
//        additionalProperties false
//   propertyNames {pattern: p} / {minLength, maxLength} -> the internal keyword $keelKeyPattern: p
//        (the length bounds as an anchored pattern); compile_object drops listed names p does not
//        match and takes additional keys from "matches p, not a listed name" (regex_keys.cc)
// `type: string` beside these is implied (keys are strings). Anything else, and propertyNames next
// to patternProperties, stays kUnsupported naming 'propertyNames'.
#include <algorithm>
#include <set>

#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

Status unsupported(const std::string& ptr, std::string_view detail) {
  return make_error(ErrorCode::kUnsupported, "JSON Schema keyword 'propertyNames' at '#{}' is not supported: {}", ptr,
                    detail);
}

bool only(const Json& s, std::initializer_list<std::string_view> keys) {
  for (auto& [k, v] : s.items()) {
    if (!is_assertion_keyword(k)) continue;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) return false;
  }
  return true;
}

}  // namespace

Result<Json> rewrite_property_names(const Json& s, const std::string& ptr, const Json& root) {
  Json names = s["propertyNames"];
  Json out = s;
  out.erase("propertyNames");
  // Follow a reference to its target (names schemas are rarely recursive; a chain is bounded).
  for (int i = 0; names.is_object() && names.contains("$ref") && only(names, {"$ref"}); ++i) {
    if (i > 16 || !names["$ref"].is_string()) return unsupported(ptr, "a reference chain");
    KEEL_ASSIGN_OR_RETURN(const Json* target, resolve_pointer(root, names["$ref"].get<std::string>(), ptr));
    names = *target;
  }
  if (names == true || (names.is_object() && only(names, {}))) return out;
  if (s.contains("patternProperties") && !s["patternProperties"].empty())
    return unsupported(ptr, "next to patternProperties");
  const bool string_type = !names.is_object() || !names.contains("type") || names["type"] == "string" ||
                           (names["type"].is_array() && std::find(names["type"].begin(), names["type"].end(), "string") !=
                                                            names["type"].end());
  if (names == false || !string_type) {
    out["maxProperties"] = uint64_t{0};
    return out;
  }
  if (names.contains("enum") || names.contains("const")) {
    if (!only(names, {"enum", "const", "type"})) return unsupported(ptr, "an enum next to other keywords");
    std::set<std::string> allowed;
    const Json values = names.contains("const") ? Json::array({names["const"]}) : names["enum"];
    if (!values.is_array()) return make_error(ErrorCode::kInvalidArgument, "'enum' at '#{}/propertyNames' must be an array", ptr);
    for (const Json& v : values)
      if (v.is_string() && (!names.contains("const") || !names.contains("enum") ||
                            std::find(names["enum"].begin(), names["enum"].end(), v) != names["enum"].end()))
        allowed.insert(v.get<std::string>());
    Json props = s.value("properties", Json::object());
    if (!props.is_object()) return make_error(ErrorCode::kInvalidArgument, "'properties' at '#{}' must be an object", ptr);
    const Json addl = s.contains("additionalProperties") ? s["additionalProperties"]
                      : s.contains("unevaluatedProperties") ? s["unevaluatedProperties"]
                                                              : Json(true);
    for (auto& [k, v] : props.items())
      if (!allowed.count(k)) v = false;
    for (const std::string& name : allowed)
      if (!props.contains(name)) props[name] = addl;
    out["properties"] = props;
    out["additionalProperties"] = false;
    out.erase("unevaluatedProperties");
    return out;
  }
  std::string pattern;
  if (names.contains("pattern")) {
    if (!only(names, {"pattern", "type"})) return unsupported(ptr, "a pattern next to other keywords");
    if (!names["pattern"].is_string())
      return make_error(ErrorCode::kInvalidArgument, "'pattern' at '#{}/propertyNames' must be a string", ptr);
    pattern = names["pattern"].get<std::string>();
  } else if (names.contains("minLength") || names.contains("maxLength")) {
    if (!only(names, {"minLength", "maxLength", "type"})) return unsupported(ptr, "lengths next to other keywords");
    auto count = [&](const char* k, const char* dflt) -> Result<std::string> {
      if (!names.contains(k)) return std::string(dflt);
      if (!names[k].is_number_unsigned() || names[k].get<uint64_t>() > 1000)
        return unsupported(ptr, fmt::format("'{}' must be an integer up to 1000 here", k));
      return std::to_string(names[k].get<uint64_t>());
    };
    KEEL_ASSIGN_OR_RETURN(std::string lo, count("minLength", "0"));
    KEEL_ASSIGN_OR_RETURN(std::string hi, count("maxLength", ""));
    pattern = "^[\\s\\S]{" + lo + "," + hi + "}$";
  } else {
    return unsupported(ptr, "only false, enum/const, pattern or minLength/maxLength");
  }
  out[std::string(kKeyPattern)] = pattern;
  return out;
}

}  // namespace keel::grammar::detail
