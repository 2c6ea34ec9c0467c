// `not` for the JSON Schema compiler: the negations keel can state positively, exactly. A `not` is
// rewritten into an allOf member before compiling; anything else stays a kUnsupported error.
//   not {} / not true                -> false            not false       -> true
//   not {"type": T}                  -> the other types (unsupported when T has integer but not number:
//                                       "a number that is not an integer" has no exact grammar here)
//   not {"required": [a, b, ...]}    -> an object missing one of them: anyOf of {"properties": {x: false}}
//   not {"anyOf": [s1, s2, ...]}     -> allOf of the negated branches
//   not {"not": s}                   -> s
//   not {"properties": {p: s}}       -> an object holding p with a value that fails s
//   not {"allOf": [s1, s2, ...]}     -> anyOf of the negated members
//   not {"items": s}                 -> an array containing an item that fails s
//   not {"enum"/"const": values}     -> other types, the other boolean, a string outside the set
//                                       (unsupported when the values hold numbers, objects, arrays)
//   not {k1: .., k2: ..}             -> anyOf of the negated keywords (each must be one of the above)
// Keywords that are annotations (description, title, ...) are ignored, as everywhere.
#include <algorithm>
#include <cmath>
#include <set>

#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

Status unsupported_not(const std::string& ptr, std::string_view why) {
  return make_error(ErrorCode::kUnsupported, "JSON Schema keyword 'not' at '#{}' is not supported: {}", ptr, why);
}

Result<Json> negate_type(const Json& t, const std::string& ptr) {
  std::set<std::string> named;
  if (t.is_string()) named.insert(t.get<std::string>());
  if (t.is_array())
    for (const Json& x : t) {
      if (!x.is_string()) return make_error(ErrorCode::kInvalidArgument, "'type' at '#{}' must hold strings", ptr);
      named.insert(x.get<std::string>());
    }
  if (named.empty()) return make_error(ErrorCode::kInvalidArgument, "'type' at '#{}' must name types", ptr);
  const bool integer_only = named.count("integer") && !named.count("number");
  Json rest = Json::array();
  for (const char* type : {"null", "boolean", "object", "array", "string", "number"})
    if (!named.count(type) && !(integer_only && std::string_view(type) == "number")) rest.push_back(type);
  if (integer_only) {  // numbers that are not integers
    Json non_integer{{"type", "number"}, {std::string(kNotInteger), true}};
    if (rest.empty()) return non_integer;
    return Json{{"anyOf", Json::array({Json{{"type", rest}}, std::move(non_integer)})}};
  }
  if (rest.empty()) return Json(false);
  return Json{{"type", rest}};
}

Result<Json> negate_required(const Json& names, const std::string& ptr) {
  if (!names.is_array()) return make_error(ErrorCode::kInvalidArgument, "'required' at '#{}' must be an array", ptr);
  if (names.empty()) return Json(false);  // required [] holds for every value
  Json alts = Json::array();
  for (const Json& n : names) {
    if (!n.is_string()) return make_error(ErrorCode::kInvalidArgument, "'required' at '#{}' must hold strings", ptr);
    alts.push_back(Json{{"type", "object"}, {"properties", Json{{n.get<std::string>(), false}}}});
  }
  if (alts.size() == 1) return alts[0];
  return Json{{"anyOf", alts}};
}

Result<Json> negate_properties(const Json& props, const std::string& ptr, int depth, const Json& root) {
  if (!props.is_object()) return make_error(ErrorCode::kInvalidArgument, "'properties' at '#{}' must be an object", ptr);
  Json alts = Json::array();
  for (auto& [name, sub] : props.items()) {
    KEEL_ASSIGN_OR_RETURN(Json n, negate_schema(sub, ptr + "/" + pointer_escape(name), depth + 1, root));
    if (n.is_boolean() && !n.get<bool>()) continue;  // every value of that property is allowed
    alts.push_back(Json{{"type", "object"}, {"required", Json::array({name})}, {"properties", Json{{name, n}}}});
  }
  if (alts.empty()) return Json(false);
  if (alts.size() == 1) return alts[0];
  return Json{{"anyOf", alts}};
}

// Any value but these: other types whole, the other boolean, strings outside the set. Numbers,
// objects and arrays among the values have no exact "all but" form here (1 and 1.0 are one value).
Result<Json> negate_values(const Json& values, const std::string& ptr) {
  if (!values.is_array()) return make_error(ErrorCode::kInvalidArgument, "'enum' at '#{}' must be an array", ptr);
  bool null = false, t = false, f = false;
  Json strings = Json::array();
  std::vector<Json> numbers;
  for (const Json& v : values) {
    if (v.is_null()) {
      null = true;
    } else if (v.is_boolean()) {
      (v.get<bool>() ? t : f) = true;
    } else if (v.is_string()) {
      strings.push_back(v);
    } else if (v.is_number() && std::isfinite(v.get<double>())) {
      numbers.push_back(v);
    } else {
      return unsupported_not(ptr, "the negation of an enum holding objects or arrays has no exact grammar here");
    }
  }
  Json whole = Json::array({"object", "array"});
  if (numbers.empty()) whole.push_back("number");
  if (!null) whole.push_back("null");
  if (!t && !f) whole.push_back("boolean");
  if (strings.empty()) whole.push_back("string");
  Json alts = Json::array({Json{{"type", whole}}});
  if (t != f) alts.push_back(Json{{"const", !t}});
  if (!strings.empty()) alts.push_back(Json{{"type", "string"}, {std::string(kStringNotIn), strings}});
  if (!numbers.empty()) {
    KEEL_ASSIGN_OR_RETURN(Json outside, numbers_outside(std::move(numbers)));
    for (Json& a : outside["anyOf"]) alts.push_back(std::move(a));
  }
  return Json{{"anyOf", alts}};
}

Result<Json> negate_keyword(const Json& s, const std::string& k, const std::string& ptr, int depth, const Json& root) {
  const Json& v = s[k];
  if (k == "type") {
    if (s.contains("nullable")) return unsupported_not(ptr, "'type' next to 'nullable'");
    return negate_type(v, ptr + "/type");
  }
  if (k == "required") return negate_required(v, ptr + "/required");
  if (k == "properties") {
    if (s.contains("additionalProperties") || s.contains("patternProperties") || s.contains("unevaluatedProperties"))
      return unsupported_not(ptr, "'properties' next to additionalProperties / patternProperties");
    return negate_properties(v, ptr + "/properties", depth, root);
  }
  if (k == "not") return v;
  if (k == "enum" || k == "const") {
    // enum next to a const it holds: the const's negation covers the enum's.
    if (k == "enum" && s.contains("const") && v.is_array() && std::find(v.begin(), v.end(), s["const"]) != v.end())
      return Json(false);
    return negate_values(k == "const" ? Json::array({v}) : v, ptr + "/" + k);
  }
  if (k == "allOf") {
    if (!v.is_array() || v.empty())
      return make_error(ErrorCode::kInvalidArgument, "'allOf' at '#{}' must be a non-empty array", ptr);
    Json any = Json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(Json n, negate_schema(v[i], ptr + "/allOf/" + std::to_string(i), depth + 1, root));
      if (n.is_boolean() && n.get<bool>()) return Json(true);
      if (!n.is_boolean()) any.push_back(std::move(n));
    }
    if (any.empty()) return Json(false);
    return any.size() == 1 ? any[0] : Json{{"anyOf", any}};
  }
  if (k == "items" && (v.is_object() || v.is_boolean())) {
    if (s.contains("prefixItems") || s.contains("additionalItems") || s.contains("unevaluatedItems"))
      return unsupported_not(ptr, "'items' next to prefixItems / additionalItems / unevaluatedItems");
    KEEL_ASSIGN_OR_RETURN(Json n, negate_schema(v, ptr + "/items", depth + 1, root));
    if (n.is_boolean() && !n.get<bool>()) return Json(false);  // every item is allowed
    return Json{{"type", "array"}, {"contains", n}};            // some item fails `items`
  }
  if (k == kStringNotIn) {
    if (!v.is_array()) return make_error(ErrorCode::kInvalidArgument, "'{}' must be an array", k);
    return Json{{"anyOf", Json::array({Json{{"type", Json::array({"null", "boolean", "object", "array", "number"})}},
                                       Json{{"enum", v}}})}};
  }
  if (k == "anyOf") {
    if (!v.is_array() || v.empty())
      return make_error(ErrorCode::kInvalidArgument, "'anyOf' at '#{}' must be a non-empty array", ptr);
    Json all = Json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(Json n, negate_schema(v[i], ptr + "/anyOf/" + std::to_string(i), depth + 1, root));
      if (n.is_boolean() && !n.get<bool>()) return Json(false);
      if (!(n.is_boolean() && n.get<bool>())) all.push_back(std::move(n));
    }
    if (all.empty()) return Json(true);
    return Json{{"allOf", all}};
  }
  if (k == "$ref") {
    if (!v.is_string()) return make_error(ErrorCode::kInvalidArgument, "'$ref' at '#{}' must be a string", ptr);
    // The target negated in place; a recursive target runs into the depth limit and stays unsupported.
    KEEL_ASSIGN_OR_RETURN(const Json* target, resolve_pointer(root, v.get<std::string>(), ptr));
    return negate_schema(*target, ptr + "/$ref", depth + 1, root);
  }
  KEEL_ASSIGN_OR_RETURN(std::optional<Json> bound, negate_value_keyword(s, k, ptr, depth, root));
  if (bound) return std::move(*bound);
  return unsupported_not(ptr, fmt::format("the negation of '{}' has no exact grammar here", k));
}

}  // namespace

Result<Json> negate_schema(const Json& s, const std::string& ptr, int depth, const Json& root) {
  if (depth > 16) return unsupported_not(ptr, "negations nested too deep");
  if (s.is_boolean()) return Json(!s.get<bool>());
  if (!s.is_object()) return make_error(ErrorCode::kInvalidArgument, "schema at '#{}' must be an object or a boolean", ptr);
  // A schema is the conjunction of its keywords, so its negation is the disjunction of theirs, as
  // long as each keyword means the same alone (true of these; not of properties next to
  // additionalProperties, items next to prefixItems, if next to then, ...).
  Json alts = Json::array();
  for (auto& [k, v] : s.items()) {
    if (!is_assertion_keyword(k)) continue;
    KEEL_ASSIGN_OR_RETURN(Json n, negate_keyword(s, k, ptr, depth, root));
    if (n.is_boolean() && n.get<bool>()) return Json(true);
    if (!n.is_boolean()) alts.push_back(std::move(n));
  }
  if (alts.empty()) return Json(false);
  if (alts.size() == 1) return alts[0];
  return Json{{"anyOf", alts}};
}

Result<Json> rewrite_if(const Json& s, const std::string& ptr, const Json& root) {
  const Json& cond = s["if"];
  auto negated = negate_schema(cond, ptr + "/if", 0, root);
  if (!negated.ok()) {
    if (negated.status().code() != ErrorCode::kUnsupported) return negated.status();
    return make_error(ErrorCode::kUnsupported,
                      "JSON Schema keyword 'if' at '#{}' is not supported: its condition cannot be negated exactly ({})",
                      ptr, negated.status().message());
  }
  Json then_branch = Json{{"allOf", Json::array({cond, s.contains("then") ? s["then"] : Json(true)})}};
  Json else_branch = Json{{"allOf", Json::array({std::move(negated).value(), s.contains("else") ? s["else"] : Json(true)})}};
  Json out = s;
  for (const char* k : {"if", "then", "else"}) out.erase(k);
  if (!out.contains("allOf")) {
    out["allOf"] = Json::array();
  } else if (!out["allOf"].is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "'allOf' at '#{}' must be a non-empty array", ptr);
  }
  out["allOf"].push_back(Json{{"anyOf", Json::array({std::move(then_branch), std::move(else_branch)})}});
  return out;
}

Result<Json> rewrite_not(const Json& s, const std::string& ptr, const Json& root) {
  KEEL_ASSIGN_OR_RETURN(Json pos, negate_schema(s["not"], ptr + "/not", 0, root));
  if (pos.is_boolean() && !pos.get<bool>()) return Json(false);
  Json out = s;
  out.erase("not");
  if (pos.is_boolean()) return out;
  if (!out.contains("allOf")) {
    out["allOf"] = Json::array();
  } else if (!out["allOf"].is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "'allOf' at '#{}' must be a non-empty array", ptr);
  }
  out["allOf"].push_back(std::move(pos));
  return out;
}

}  // namespace keel::grammar::detail
