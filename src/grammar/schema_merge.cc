// allOf merging and oneOf disjointness for the JSON Schema compiler.
#include <algorithm>
#include <set>

#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

constexpr size_t kMaxAnyOfProduct = 64;

Status unsupported_merge(std::string_view keyword, const std::string& ptr) {
  // The internal keywords come from negations; name the keyword the user wrote.
  if (keyword == kNotPattern || keyword == kNotInteger || keyword == kStringNotIn) keyword = "not";
  return make_error(ErrorCode::kUnsupported,
                    "JSON Schema keyword '{}' at '#{}' is not supported: allOf combining different values", keyword,
                    ptr);
}

std::set<std::string> type_set(const Json& t) {
  std::set<std::string> out;
  if (t.is_string()) out.insert(t.get<std::string>());
  if (t.is_array())
    for (const Json& x : t)
      if (x.is_string()) out.insert(x.get<std::string>());
  return out;
}

Json intersect_types(const Json& a, const Json& b) {
  std::set<std::string> sa = type_set(a), sb = type_set(b), out;
  for (const std::string& t : sa) {
    if (sb.count(t)) out.insert(t);
    if (t == "integer" && sb.count("number")) out.insert("integer");
    if (t == "number" && sb.count("integer")) out.insert("integer");
  }
  Json r = Json::array();
  for (const std::string& t : out) r.push_back(t);
  return r;
}

bool is_true(const Json& s) { return s.is_boolean() ? s.get<bool>() : (s.is_object() && s.empty()); }

Json all_of(const Json& x, const Json& y) {
  if (is_true(x)) return y;
  if (is_true(y) || x == y) return x;
  return Json{{"allOf", Json::array({x, y})}};
}

Status merge_objects(Json& out, const Json& b, const std::string& ptr) {
  const Json a = out;
  const Json pa = a.value("properties", Json::object()), pb = b.value("properties", Json::object());
  const Json aa = a.value("additionalProperties", Json(true)), ab = b.value("additionalProperties", Json(true));
  const bool a_pat = a.contains("patternProperties"), b_pat = b.contains("patternProperties");
  if ((a_pat && !is_true(ab)) || (b_pat && !is_true(aa)) || (a_pat && b_pat && a["patternProperties"] != b["patternProperties"]))
    return unsupported_merge("patternProperties", ptr);
  if ((!is_true(aa) || !is_true(ab)) && (a.contains("unevaluatedProperties") || b.contains("unevaluatedProperties")))
    return unsupported_merge("unevaluatedProperties", ptr);
  Json props = Json::object();
  for (auto& [k, v] : pa.items()) props[k] = pb.contains(k) ? all_of(v, pb[k]) : all_of(v, ab);
  for (auto& [k, v] : pb.items())
    if (!pa.contains(k)) props[k] = all_of(v, aa);
  if (!props.empty()) out["properties"] = props;
  if (a.contains("additionalProperties") || b.contains("additionalProperties")) {
    out["additionalProperties"] = (aa == false || ab == false) ? Json(false) : all_of(aa, ab);
  }
  if (b_pat) out["patternProperties"] = b["patternProperties"];
  return {};
}

bool number_tighter(const Json& x, const Json& y, bool lower) {
  return lower ? y.get<double>() > x.get<double>() : y.get<double>() < x.get<double>();
}

}  // namespace

Result<Json> merge_schemas(const Json& a, const Json& b, const std::string& ptr) {
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  if (!a.is_object() || !b.is_object())
    return make_error(ErrorCode::kInvalidArgument, "schema at '#{}' must be an object or a boolean", ptr);
  // unevaluated* and tuple items depend on their sibling keywords, so moving them next to other
  // keywords would change what they mean.
  for (const char* k : {"unevaluatedProperties", "unevaluatedItems"}) {
    if ((a.contains(k) && !is_true(a[k])) || (b.contains(k) && !is_true(b[k]))) return unsupported_merge(k, ptr);
  }
  auto tuple = [](const Json& s) { return s.contains("prefixItems") || (s.contains("items") && s["items"].is_array()); };
  auto array_kw = [](const Json& s) {
    return s.contains("prefixItems") || s.contains("items") || s.contains("additionalItems");
  };
  if ((tuple(a) && array_kw(b)) || (tuple(b) && array_kw(a))) {
    for (const char* k : {"prefixItems", "items", "additionalItems"})
      if (a.contains(k) != b.contains(k) || (a.contains(k) && a[k] != b[k])) return unsupported_merge(k, ptr);
  }
  // minContains/maxContains belong to the `contains` beside them.
  for (const char* k : {"minContains", "maxContains"}) {
    if ((a.contains(k) || b.contains(k)) && a.value("contains", Json()) != b.value("contains", Json()))
      return unsupported_merge(k, ptr);
  }
  Json out = a;
  KEEL_RETURN_IF_ERROR(merge_objects(out, b, ptr));
  for (auto& [k, v] : b.items()) {
    if (k == "properties" || k == "additionalProperties" || k == "patternProperties") continue;
    if (!out.contains(k)) {
      out[k] = v;
      continue;
    }
    const Json& x = a[k];
    if (x == v || !is_assertion_keyword(k)) continue;
    if (k == "type") {
      out[k] = intersect_types(x, v);
    } else if (k == "required") {
      if (!v.is_array() || !x.is_array()) return unsupported_merge(k, ptr);
      for (const Json& r : v)
        if (std::find(out[k].begin(), out[k].end(), r) == out[k].end()) out[k].push_back(r);
    } else if (k == "minLength" || k == "minItems" || k == "minProperties") {
      if (v.is_number() && x.is_number() && v.get<double>() > x.get<double>()) out[k] = v;
    } else if (k == "maxLength" || k == "maxItems" || k == "maxProperties") {
      if (v.is_number() && x.is_number() && v.get<double>() < x.get<double>()) out[k] = v;
    } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
      if (!v.is_number() || !x.is_number()) return unsupported_merge(k, ptr);
      if (number_tighter(x, v, k == "minimum" || k == "exclusiveMinimum")) out[k] = v;
    } else if (k == "enum") {
      Json common = Json::array();
      if (v.is_array() && x.is_array())
        for (const Json& e : x)
          if (std::find(v.begin(), v.end(), e) != v.end()) common.push_back(e);
      out[k] = common;
    } else if (k == "const") {
      out["enum"] = Json::array();  // two different constants: nothing is valid
    } else if (k == "items" && v.is_object() && x.is_object()) {
      out[k] = all_of(x, v);
    } else if (k == "allOf" && v.is_array() && x.is_array()) {
      for (const Json& e : v) out[k].push_back(e);
    } else if (k == "anyOf" && v.is_array() && x.is_array()) {
      if (v.size() * x.size() > kMaxAnyOfProduct) return unsupported_merge(k, ptr);
      Json prod = Json::array();
      for (const Json& p : x)
        for (const Json& q : v) prod.push_back(all_of(p, q));
      out[k] = prod;
    } else if (k == "$ref") {
      out["allOf"] = out.value("allOf", Json::array());
      out["allOf"].push_back(Json{{"$ref", v}});
    } else if (k == "not") {
      out[k] = Json{{"anyOf", Json::array({x, v})}};  // not a and not b: not (a or b)
    } else if (k == kNotPattern && v.is_string() && x.is_string()) {
      // Matching neither pattern is not matching either: top-level alternatives keep their
      // own anchors, so joining them with '|' is exact.
      out[k] = x.get<std::string>() + "|" + v.get<std::string>();
    } else if (k == kStringNotIn && v.is_array() && x.is_array()) {
      for (const Json& e : v)
        if (std::find(out[k].begin(), out[k].end(), e) == out[k].end()) out[k].push_back(e);
    } else if (k == "uniqueItems" || k == "nullable") {
      out[k] = k == "nullable" ? (x == true && v == true) : (x == true || v == true);
    } else {
      return unsupported_merge(k, ptr);
    }
  }
  return out;
}

namespace {

std::set<std::string> possible_types(const Json& s) {
  static const std::set<std::string> kAll = {"null", "boolean", "object", "array", "string", "number"};
  if (!s.is_object()) return kAll;
  std::set<std::string> out;
  if (s.contains("type")) {
    for (const std::string& t : type_set(s["type"])) out.insert(t == "integer" ? "number" : t);
    if (s.contains("nullable") && s["nullable"] == true) out.insert("null");
  } else {
    out = kAll;
  }
  const Json* values = s.contains("const") ? nullptr : (s.contains("enum") && s["enum"].is_array() ? &s["enum"] : nullptr);
  std::vector<Json> vals;
  if (s.contains("const")) vals.push_back(s["const"]);
  if (values) vals.assign(values->begin(), values->end());
  if (s.contains("const") || values) {
    std::set<std::string> vt;
    for (const Json& v : vals) {
      vt.insert(v.is_null() ? "null" : v.is_boolean() ? "boolean" : v.is_object() ? "object" : v.is_array() ? "array"
                                  : v.is_string() ? "string" : "number");
    }
    std::set<std::string> both;
    std::set_intersection(out.begin(), out.end(), vt.begin(), vt.end(), std::inserter(both, both.begin()));
    return both;
  }
  return out;
}

std::optional<std::vector<Json>> value_set(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return std::vector<Json>{s["const"]};
  if (s.contains("enum") && s["enum"].is_array()) return std::vector<Json>(s["enum"].begin(), s["enum"].end());
  return std::nullopt;
}

bool requires_key(const Json& s, const std::string& key) {
  if (!s.is_object() || !s.contains("required") || !s["required"].is_array()) return false;
  return std::find(s["required"].begin(), s["required"].end(), key) != s["required"].end();
}

}  // namespace

bool provably_disjoint(const Json& a, const Json& b) {
  std::set<std::string> ta = possible_types(a), tb = possible_types(b), common;
  std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::inserter(common, common.begin()));
  if (common.empty()) return true;
  auto va = value_set(a), vb = value_set(b);
  if (va && vb) {
    bool overlap = false;
    for (const Json& x : *va) overlap = overlap || std::find(vb->begin(), vb->end(), x) != vb->end();
    if (!overlap) return true;
  }
  if (common != std::set<std::string>{"object"}) return false;
  const Json pa = a.value("properties", Json::object()), pb = b.value("properties", Json::object());
  for (auto& [k, v] : pa.items()) {
    // A property both require, with values that cannot coincide (a discriminator).
    if (pb.contains(k) && requires_key(a, k) && requires_key(b, k)) {
      if (possible_types(v).empty() || possible_types(pb[k]).empty()) return true;
      if (provably_disjoint(v, pb[k])) return true;
    }
  }
  // One side forbids a key the other requires.
  auto forbids = [](const Json& s, const Json& props, const Json& other) {
    if (s.value("additionalProperties", Json(true)) != false || s.contains("patternProperties")) return false;
    if (!other.contains("required") || !other["required"].is_array()) return false;
    for (const Json& r : other["required"])
      if (r.is_string() && !props.contains(r.get<std::string>())) return true;
    return false;
  };
  return forbids(a, pa, b) || forbids(b, pb, a);
}

}  // namespace keel::grammar::detail
