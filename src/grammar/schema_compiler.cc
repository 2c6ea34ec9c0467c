#include "grammar/schema_compiler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"

namespace keel::grammar::detail {
namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxEnumChecks = 4096;

constexpr std::array<std::string_view, 48> kAssertions = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref",
    "minProperties", "maxProperties", "uniqueItems", "unevaluatedProperties", "unevaluatedItems", "nullable", "not",
    "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "propertyNames", "contains",
    "minContains", "maxContains", "multipleOf", "$dynamicRef", "$recursiveRef", kStringNotIn, kNotPattern, kNotInteger, kKeyPattern};

// Annotations say nothing about which values are valid (keel reads none of them): subschemas that
// differ only there compile to one symbol, so strings of one bound under different titles share their
// rules, and their parser states share runs (state_shapes.h).
constexpr std::array<std::string_view, 8> kAnnotations = {"title",   "description", "examples", "$comment",
                                                          "default", "deprecated",  "readOnly", "writeOnly"};

std::string memo_key(const Json& s) {
  for (std::string_view a : kAnnotations) {
    if (!s.contains(a)) continue;
    Json bare = s;
    for (std::string_view k : kAnnotations) bare.erase(std::string(k));
    return bare.dump();
  }
  return s.dump();
}

Status unsupported(std::string_view keyword, const std::string& ptr, std::string_view detail = "") {
  return make_error(ErrorCode::kUnsupported, "JSON Schema keyword '{}' at '{}' is not supported{}{}", keyword,
                    ptr.empty() ? "#" : "#" + ptr, detail.empty() ? "" : ": ", detail);
}

bool trivially_true(const Json& s) {
  if (s.is_boolean()) return s.get<bool>();
  if (!s.is_object()) return false;
  for (auto& [k, v] : s.items())
    if (is_assertion_keyword(k)) return false;
  return true;
}

bool has_assertions(const Json& s, std::initializer_list<std::string_view> except) {
  for (auto& [k, v] : s.items()) {
    if (!is_assertion_keyword(k)) continue;
    if (std::find(except.begin(), except.end(), k) == except.end()) return true;
  }
  return false;
}

}  // namespace

std::string pointer_escape(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool is_assertion_keyword(std::string_view key) {
  return std::find(kAssertions.begin(), kAssertions.end(), key) != kAssertions.end();
}

SchemaCompiler::SchemaCompiler(GrammarBuilder& b, const Json& root, const JsonGrammarOptions& opts)
    : b_(b), root_(root), opts_(opts) {}

Result<Symbol> SchemaCompiler::compile(const Json& s, const std::string& ptr, int depth) {
  if (depth > kMaxDepth) {
    return make_error(ErrorCode::kUnsupported, "schema at '#{}' is nested deeper than {} levels", ptr, kMaxDepth);
  }
  KEEL_RETURN_IF_ERROR(b_.check_budget());
  if (s.is_boolean()) return s.get<bool>() ? any_value() : b_.never("false");
  if (!s.is_object())
    return make_error(ErrorCode::kInvalidArgument, "schema at '#{}' must be an object or a boolean", ptr);
  std::string key = memo_key(s);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  KEEL_ASSIGN_OR_RETURN(Symbol sym, compile_object_schema(s, ptr, depth));
  memo_.emplace(std::move(key), sym);
  return sym;
}

Result<Symbol> SchemaCompiler::compile_object_schema(const Json& s, const std::string& ptr, int depth) {
  if (s.contains("not")) {
    KEEL_ASSIGN_OR_RETURN(Json rewritten, rewrite_not(s, ptr, root_));
    return compile(rewritten, ptr, depth + 1);
  }
  if (s.contains("if") && (s.contains("then") || s.contains("else"))) {
    KEEL_ASSIGN_OR_RETURN(Json rewritten, rewrite_if(s, ptr, root_));
    return compile(rewritten, ptr, depth + 1);
  }
  if (s.contains("dependentRequired") || s.contains("dependentSchemas") || s.contains("dependencies")) {
    KEEL_ASSIGN_OR_RETURN(Json rewritten, rewrite_dependencies(s, ptr));
    return compile(rewritten, ptr, depth + 1);
  }
  KEEL_RETURN_IF_ERROR(check_keywords(s, ptr));
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string()) return make_error(ErrorCode::kInvalidArgument, "'$ref' at '#{}' must be a string", ptr);
    if (!has_assertions(s, {"$ref"})) return compile_ref(s["$ref"].get<std::string>(), ptr);
    KEEL_ASSIGN_OR_RETURN(Json merged, deref(s, ptr));
    return compile(merged, ptr, depth + 1);
  }
  if (s.contains("allOf")) return compile_all_of(s, ptr, depth);
  if (s.contains("anyOf")) return compile_any_of(s, "anyOf", ptr, depth);
  if (s.contains("oneOf")) return compile_any_of(s, "oneOf", ptr, depth);
  if (s.contains("enum") || s.contains("const")) return compile_enum(s, ptr, depth);
  return compile_typed(s, ptr, depth);
}

Status SchemaCompiler::check_keywords(const Json& s, const std::string& ptr) const {
  for (auto& [k, v] : s.items()) {
    if (k == "$dynamicRef" || k == "$recursiveRef") return unsupported(k, ptr);
    if (k == "if" && (s.contains("then") || s.contains("else"))) return unsupported("if", ptr);
    if (k == "unevaluatedItems" && !trivially_true(v)) return unsupported(k, ptr);
    if (k == "multipleOf" && !(v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>())))
      return make_error(ErrorCode::kInvalidArgument, "'multipleOf' at '#{}' must be a number > 0", ptr);
    if (k == "uniqueItems" && v.is_boolean() && v.get<bool>() &&
        !(s.contains("maxItems") && s["maxItems"].is_number_unsigned() && s["maxItems"].get<uint64_t>() <= 1))
      return unsupported(k, ptr);
  }
  return {};
}

Result<const Json*> SchemaCompiler::resolve(const std::string& ref, const std::string& ptr) const {
  return resolve_pointer(root_, ref, ptr);
}

Result<const Json*> resolve_pointer(const Json& root, const std::string& ref, const std::string& ptr) {
  if (ref.empty() || ref[0] != '#')
    return unsupported("$ref", ptr, "only references within the document ('#/...') are supported");
  std::string path = ref.substr(1);
  // Percent-decoding of the fragment.
  std::string decoded;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && std::isxdigit(static_cast<unsigned char>(path[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(path[i + 2]))) {
      decoded += static_cast<char>(std::stoi(path.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      decoded += path[i];
    }
  }
  if (!decoded.empty() && decoded[0] != '/') return unsupported("$ref", ptr, "anchor references are not supported");
  const Json* cur = &root;
  size_t i = 0;
  while (i < decoded.size()) {
    size_t next = decoded.find('/', i + 1);
    std::string seg = decoded.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    std::string key;
    for (size_t k = 0; k < seg.size(); ++k) {
      if (seg[k] == '~' && k + 1 < seg.size() && (seg[k + 1] == '0' || seg[k + 1] == '1')) {
        key += seg[k + 1] == '0' ? '~' : '/';
        ++k;
      } else {
        key += seg[k];
      }
    }
    if (cur->is_object() && cur->contains(key)) {
      cur = &(*cur)[key];
    } else if (cur->is_array() && !key.empty() && key.size() < 10 && key.find_first_not_of("0123456789") == std::string::npos &&
               std::stoull(key) < cur->size()) {
      cur = &(*cur)[std::stoull(key)];
    } else {
      return make_error(ErrorCode::kInvalidArgument, "'$ref' '{}' at '#{}' does not resolve", ref, ptr);
    }
    if (next == std::string::npos) break;
    i = next;
  }
  return cur;
}

Result<Symbol> SchemaCompiler::compile_ref(const std::string& ref, const std::string& ptr) {
  if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return b_.ref(it->second);
  KEEL_ASSIGN_OR_RETURN(const Json* target, resolve(ref, ptr));
  RuleId rule = b_.add_rule("ref");
  ref_rules_.emplace(ref, rule);
  KEEL_ASSIGN_OR_RETURN(Symbol body, compile(*target, ref.substr(1), 0));
  b_.add_alt(rule, {body});
  return b_.ref(rule);
}

// Replaces top-level $ref chains by the referenced schema merged with the siblings.
Result<Json> SchemaCompiler::deref(const Json& s, const std::string& ptr) const {
  Json cur = s;
  for (int i = 0; cur.is_object() && cur.contains("$ref"); ++i) {
    if (i > kMaxDepth) return unsupported("$ref", ptr, "reference chain deeper than 64");
    if (!cur["$ref"].is_string()) return make_error(ErrorCode::kInvalidArgument, "'$ref' at '#{}' must be a string", ptr);
    KEEL_ASSIGN_OR_RETURN(const Json* target, resolve(cur["$ref"].get<std::string>(), ptr));
    Json rest = cur;
    rest.erase("$ref");
    if (target->is_boolean()) {
      if (target->get<bool>()) {
        cur = rest;
        continue;
      }
      return Json(false);
    }
    KEEL_ASSIGN_OR_RETURN(cur, merge_schemas(*target, rest, ptr));
  }
  return cur;
}

Result<Symbol> SchemaCompiler::compile_all_of(const Json& s, const std::string& ptr, int depth) {
  const Json& items = s["allOf"];
  if (!items.is_array() || items.empty())
    return make_error(ErrorCode::kInvalidArgument, "'allOf' at '#{}' must be a non-empty array", ptr);
  Json merged = s;
  merged.erase("allOf");
  for (size_t i = 0; i < items.size(); ++i) {
    KEEL_ASSIGN_OR_RETURN(Json item, deref(items[i], ptr + "/allOf/" + std::to_string(i)));
    if (item.is_boolean()) {
      if (!item.get<bool>()) return b_.never("false");
      continue;
    }
    KEEL_ASSIGN_OR_RETURN(merged, merge_schemas(merged, item, ptr + "/allOf/" + std::to_string(i)));
  }
  return compile(merged, ptr, depth + 1);
}

Result<Symbol> SchemaCompiler::compile_any_of(const Json& s, const std::string& key, const std::string& ptr,
                                              int depth) {
  const Json& items = s[key];
  if (!items.is_array() || items.empty())
    return make_error(ErrorCode::kInvalidArgument, "'{}' at '#{}' must be a non-empty array", key, ptr);
  Json base = s;
  base.erase(key);
  std::vector<Json> branches, raw;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string bptr = ptr + "/" + key + "/" + std::to_string(i);
    KEEL_ASSIGN_OR_RETURN(Json item, deref(items[i], bptr));
    if (item.is_boolean()) item = item.get<bool>() ? Json::object() : Json{{"enum", Json::array()}};
    KEEL_ASSIGN_OR_RETURN(Json merged, merge_schemas(base, item, bptr));
    raw.push_back(std::move(item));
    branches.push_back(std::move(merged));
  }
  const std::vector<Json> merged = branches;
  if (key == "oneOf") {
    KEEL_ASSIGN_OR_RETURN(branches, exclusive_branches(branches, raw, ptr, root_));
  }
  std::vector<Sequence> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    // A bare {"$ref"} branch with nothing merged into it compiles as a reference (one rule per
    // target), so recursion through anyOf/oneOf branches is not unrolled.
    const bool bare_ref = items[i].is_object() && items[i].contains("$ref") && !has_assertions(items[i], {"$ref"}) &&
                          !has_assertions(base, {}) && branches[i] == merged[i];
    KEEL_ASSIGN_OR_RETURN(Symbol sym, compile(bare_ref ? items[i] : branches[i], ptr + "/" + key + "/" + std::to_string(i), depth + 1));
    alts.push_back({sym});
  }
  return b_.choice(std::move(alts), key);
}

Result<Symbol> SchemaCompiler::compile_enum(const Json& s, const std::string& ptr, int depth) {
  std::vector<Json> values;
  if (s.contains("enum")) {
    if (!s["enum"].is_array()) return make_error(ErrorCode::kInvalidArgument, "'enum' at '#{}' must be an array", ptr);
    for (const Json& v : s["enum"])
      if (!s.contains("const") || v == s["const"]) values.push_back(v);
  } else {
    values.push_back(s["const"]);
  }
  Json rest = s;
  rest.erase("enum");
  rest.erase("const");
  std::vector<Sequence> alts;
  std::optional<Symbol> rest_sym;
  if (has_assertions(rest, {})) {
    if (values.size() > kMaxEnumChecks) return unsupported("enum", ptr, "more than 4096 values beside other keywords");
    KEEL_ASSIGN_OR_RETURN(rest_sym, compile(rest, ptr, depth + 1));
  }
  std::unique_ptr<CompiledGrammar> probe;
  if (rest_sym) {
    // Rules still under construction (recursive $ref) match less, so values can only be dropped
    // here, never admitted wrongly.
    RuleId r = b_.add_rule("enum_probe");
    b_.add_alt(r, {*rest_sym});
    probe = std::make_unique<CompiledGrammar>(b_.snapshot(r));
  }
  for (const Json& v : values) {
    if (probe) {
      EarleyParser parser(*probe);
      if (!parser.push_bytes(v.dump(-1, ' ', false, Json::error_handler_t::replace)) || !parser.can_end()) continue;
    }
    alts.push_back(literal_value(v));
  }
  if (alts.empty()) return b_.never("enum");
  return b_.choice(std::move(alts), "enum");
}

Result<Symbol> SchemaCompiler::compile_typed(const Json& s, const std::string& ptr, int depth) {
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array()) {
      for (const Json& x : t) {
        if (!x.is_string()) return make_error(ErrorCode::kInvalidArgument, "'type' at '#{}' has a non-string", ptr);
        types.push_back(x.get<std::string>());
      }
    } else {
      return make_error(ErrorCode::kInvalidArgument, "'type' at '#{}' must be a string or an array", ptr);
    }
  } else {
    types = {"null", "boolean", "object", "array", "string", "number"};
  }
  if (s.contains("nullable") && s["nullable"] == true) types.push_back("null");
  const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
  std::vector<Sequence> alts;
  std::vector<std::string> done;
  for (const std::string& t : types) {
    if (std::find(done.begin(), done.end(), t) != done.end() || (t == "integer" && has_number)) continue;
    done.push_back(t);
    Symbol sym;
    if (t == "null") {
      sym = b_.group(b_.literal("null"), "null");
    } else if (t == "boolean") {
      sym = b_.choice({b_.literal("true"), b_.literal("false")}, "boolean");
    } else if (t == "object") {
      KEEL_ASSIGN_OR_RETURN(sym, compile_object(s, ptr, depth));
    } else if (t == "array") {
      KEEL_ASSIGN_OR_RETURN(sym, compile_array(s, ptr, depth));
    } else if (t == "string") {
      KEEL_ASSIGN_OR_RETURN(sym, compile_string(s, ptr));
    } else if (t == "number" || t == "integer") {
      KEEL_ASSIGN_OR_RETURN(sym, compile_number(s, ptr, t == "integer"));
    } else {
      return make_error(ErrorCode::kInvalidArgument, "unknown type '{}' at '#{}'", t, ptr);
    }
    alts.push_back({sym});
  }
  if (alts.empty()) return b_.never("no_type");
  return b_.choice(std::move(alts), "typed");
}

// One value of an enum/const: objects and arrays with the whitespace policy between their tokens
// (keys in the listed order), numbers in each spelling of their value that JSON allows without an
// exponent change ("1", "1.0" for an integral value; the dumped text otherwise).
Sequence SchemaCompiler::literal_value(const Json& v) {
  auto dump = [](const Json& x) { return x.dump(-1, ' ', false, Json::error_handler_t::replace); };
  auto append = [](Sequence& out, const Sequence& more) { out.insert(out.end(), more.begin(), more.end()); };
  if (v.is_object() || v.is_array()) {
    const bool obj = v.is_object();
    Sequence out{b_.byte(obj ? '{' : '[')};
    bool first = true;
    for (auto& [k, x] : v.items()) {
      if (!first) {
        append(out, ws());
        out.push_back(b_.byte(','));
      }
      first = false;
      append(out, ws());
      if (obj) {
        append(out, b_.literal(dump(Json(k))));
        append(out, ws());
        out.push_back(b_.byte(':'));
        append(out, ws());
      }
      append(out, literal_value(x));
    }
    append(out, ws());
    out.push_back(b_.byte(obj ? '}' : ']'));
    return out;
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) {
      const std::string whole = fmt::format("{}", static_cast<int64_t>(d));
      std::vector<Sequence> alts{b_.literal(whole), b_.literal(whole + ".0")};
      if (dump(v) != whole && dump(v) != whole + ".0") alts.push_back(b_.literal(dump(v)));
      return {b_.choice(std::move(alts), "number_literal")};
    }
  }
  return b_.literal(dump(v));
}

}  // namespace keel::grammar::detail
