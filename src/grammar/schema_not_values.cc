// Negations of the value-bound keywords, each exact (schema_not.cc calls these before giving up):
//   not {"minimum": m}            -> a non-number, or a number < m      (maximum, exclusive* alike;
//                                    draft-04 boolean exclusiveMinimum/Maximum flip the bound)
//   not {"minLength": n}          -> a non-string, or a string of at most n-1 characters
//   not {"maxLength": n}          -> a non-string, or a string of at least n+1 characters
//   min/maxItems, min/maxProperties alike for arrays and objects
//   not {"pattern": p}            -> a non-string, or a string p does not match ($keelNotPattern:
//                                    the pattern determinised and complemented, regex_keys.cc)
//   not {"contains": s}           -> a non-array, or an array whose items all fail s
//   not {"prefixItems": [p0..]}   -> a non-array, or an array whose item i exists and fails p_i
//   not {"enum"/"const": numbers} -> numbers outside the values: the open intervals between them
//   not of the internal $keelNotPattern / $keelNotInteger -> back to pattern / integer
//   not {"format": f}, f a name JSON Schema does not define -> false (f is an annotation)
// A keyword these do not cover returns nullopt and schema_not.cc reports it.
#include <algorithm>
#include <cmath>

#include "grammar/json_formats.h"
#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

Json other_types(std::string_view type) {
  Json out = Json::array();
  for (const char* t : {"null", "boolean", "object", "array", "string", "number"})
    if (type != t) out.push_back(t);
  return out;
}

Json either(std::string_view type, Json typed) {
  typed["type"] = std::string(type);
  return Json{{"anyOf", Json::array({Json{{"type", other_types(type)}}, std::move(typed)})}};
}

Status bad(std::string_view keyword, const std::string& ptr, std::string_view want) {
  return make_error(ErrorCode::kInvalidArgument, "'{}' at '#{}' must be {}", keyword, ptr, want);
}

Result<int64_t> count_value(const Json& v, std::string_view k, const std::string& ptr) {
  if (v.is_number_unsigned()) return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX / 2));
  if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 1e15 && std::floor(v.get<double>()) == v.get<double>())
    return static_cast<int64_t>(v.get<double>());
  return bad(k, ptr, "a non-negative integer");
}

bool flag(const Json& s, const char* k) { return s.contains(k) && s[k].is_boolean() && s[k].get<bool>(); }

}  // namespace

Result<std::optional<Json>> negate_value_keyword(const Json& s, const std::string& k, const std::string& ptr,
                                                 int depth, const Json& root) {
  const Json& v = s[k];
  const std::string kptr = ptr + "/" + k;
  using Opt = std::optional<Json>;
  if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
    if (v.is_boolean()) return Opt(Json(false));  // draft-04 modifier: negated with its bound
    if (!v.is_number() || !std::isfinite(v.get<double>())) return bad(k, ptr, "a finite number");
    const bool lower = k == "minimum" || k == "exclusiveMinimum";
    const bool exclusive = k.rfind("exclusive", 0) == 0 || flag(s, lower ? "exclusiveMinimum" : "exclusiveMaximum");
    // not (x >= m) is x < m; not (x > m) is x <= m; and mirrored for upper bounds.
    const char* flipped = lower ? (exclusive ? "maximum" : "exclusiveMaximum") : (exclusive ? "minimum" : "exclusiveMinimum");
    return Opt(either("number", Json{{flipped, v}}));
  }
  struct Count {
    const char* min;
    const char* max;
    const char* type;
  };
  for (const Count& c : {Count{"minLength", "maxLength", "string"}, Count{"minItems", "maxItems", "array"},
                         Count{"minProperties", "maxProperties", "object"}}) {
    if (k != c.min && k != c.max) continue;
    KEEL_ASSIGN_OR_RETURN(int64_t n, count_value(v, k, ptr));
    if (k == c.min) {
      if (n == 0) return Opt(Json(false));  // every value has at least zero
      return Opt(either(c.type, Json{{c.max, static_cast<uint64_t>(n - 1)}}));
    }
    return Opt(either(c.type, Json{{c.min, static_cast<uint64_t>(n + 1)}}));
  }
  if (k == "pattern") {
    if (!v.is_string()) return bad(k, ptr, "a string");
    return Opt(either("string", Json{{std::string(kNotPattern), v}}));
  }
  if (k == kNotPattern) return Opt(either("string", Json{{"pattern", v}}));
  if (k == kNotInteger) return Opt(Json{{"type", Json::array({"null", "boolean", "object", "array", "string", "integer"})}});
  if (k == "format" && v.is_string() && !format_pattern(v.get<std::string>()) &&
      !is_standard_format(v.get<std::string>()))
    return Opt(Json(false));  // an annotation: it holds for every value
  if (k == "contains") {
    if (s.contains("minContains") || s.contains("maxContains"))
      return make_error(ErrorCode::kUnsupported,
                        "JSON Schema keyword 'not' at '#{}' is not supported: 'contains' next to minContains/maxContains",
                        ptr);
    KEEL_ASSIGN_OR_RETURN(Json n, negate_schema(v, kptr, depth + 1, root));
    return Opt(either("array", Json{{"items", n}}));
  }
  if (k == "minContains" || k == "maxContains") {
    if (!s.contains("contains")) return Opt(Json(false));  // without contains they assert nothing
    return Opt();
  }
  if (k == "prefixItems") {
    if (!v.is_array()) return bad(k, ptr, "an array");
    if (s.contains("items") || s.contains("unevaluatedItems")) return Opt();
    Json alts = Json::array({Json{{"type", other_types("array")}}});
    for (size_t i = 0; i < v.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(Json n, negate_schema(v[i], kptr + "/" + std::to_string(i), depth + 1, root));
      if (n == false) continue;
      Json prefix = Json::array();
      for (size_t j = 0; j < i; ++j) prefix.push_back(true);
      prefix.push_back(n);
      alts.push_back(Json{{"type", "array"}, {"minItems", static_cast<uint64_t>(i + 1)}, {"prefixItems", prefix}});
    }
    if (alts.size() == 1) return Opt(Json(false));
    return Opt(Json{{"anyOf", alts}});
  }
  return Opt();
}

// Numbers other than the given values: the open intervals between the sorted values. Exact: the
// bounds compare decimal values, so 1 and 1.0 are one value, as in JSON Schema.
Result<Json> numbers_outside(std::vector<Json> values) {
  std::sort(values.begin(), values.end(), [](const Json& a, const Json& b) { return a.get<double>() < b.get<double>(); });
  values.erase(std::unique(values.begin(), values.end(),
                           [](const Json& a, const Json& b) { return a.get<double>() == b.get<double>(); }),
               values.end());
  Json alts = Json::array();
  for (size_t i = 0; i <= values.size(); ++i) {
    Json range{{"type", "number"}};
    if (i > 0) range["exclusiveMinimum"] = values[i - 1];
    if (i < values.size()) range["exclusiveMaximum"] = values[i];
    alts.push_back(std::move(range));
  }
  return Json{{"anyOf", alts}};
}

}  // namespace keel::grammar::detail
