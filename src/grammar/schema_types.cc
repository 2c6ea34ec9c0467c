// Per-type rules of the JSON Schema compiler: objects, arrays, strings, numbers, and any value.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "grammar/char_class.h"
#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/json_formats.h"
#include "grammar/json_number.h"
#include "grammar/key_start.h"
#include "grammar/regex.h"
#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

Status unsupported(std::string_view keyword, const std::string& ptr, std::string_view detail = "") {
  return make_error(ErrorCode::kUnsupported, "JSON Schema keyword '{}' at '#{}' is not supported{}{}", keyword, ptr,
                    detail.empty() ? "" : ": ", detail);
}

// k when the literal is 10^-k ("0.01", "1e-05"), 0 otherwise.
int decimal_power_digits(const std::string& text) {
  if (text.rfind("0.", 0) == 0 && text.size() > 2 && text.back() == '1' &&
      text.find_first_not_of('0', 2) == text.size() - 1)
    return static_cast<int>(text.size() - 2);
  for (const char* prefix : {"1e-", "1E-", "1.0e-", "1.0E-"}) {
    const std::string p = prefix;
    if (text.rfind(p, 0) != 0 || text.size() == p.size() || text.size() > p.size() + 2) continue;
    if (text.find_first_not_of("0123456789", p.size()) != std::string::npos) return 0;
    const int k = std::stoi(text.substr(p.size()));
    return k >= 1 && k <= 30 ? k : 0;
  }
  return 0;
}

Status bad(std::string_view keyword, const std::string& ptr, std::string_view want) {
  return make_error(ErrorCode::kInvalidArgument, "'{}' at '#{}' must be {}", keyword, ptr, want);
}

Result<std::optional<int64_t>> count_keyword(const Json& s, std::string_view key, const std::string& ptr) {
  if (!s.contains(key)) return std::optional<int64_t>();
  const Json& v = s[std::string(key)];
  if (v.is_number_unsigned()) return std::optional<int64_t>(static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX)));
  if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())))
    return std::optional<int64_t>(static_cast<int64_t>(v.get<double>()));
  return bad(key, ptr, "a non-negative integer");
}

}  // namespace

Sequence SchemaCompiler::ws() {
  if (opts_.whitespace == WhitespacePolicy::kCompact) return {};
  if (!ws_) {
    ByteSet space;
    for (char c : {' ', '\t', '\n', '\r'}) space.set(static_cast<uint8_t>(c));
    ws_ = b_.repeat({b_.bytes(space)}, 0, std::max(0, opts_.max_whitespace));
  }
  return {*ws_};
}

Symbol SchemaCompiler::json_char() {
  if (!json_char_) json_char_ = emit_char_class(b_, CharClass::any(), CharEncoding::kJsonString);
  return *json_char_;
}

Symbol SchemaCompiler::any_string() {
  if (!any_string_) any_string_ = b_.group({b_.byte('"'), b_.star({json_char()}), b_.byte('"')}, "string");
  return *any_string_;
}

Symbol SchemaCompiler::any_number() {
  if (!any_number_) any_number_ = *number_symbol(b_, false, std::nullopt, std::nullopt);
  return *any_number_;
}

Symbol SchemaCompiler::any_value() {
  if (any_value_) return *any_value_;
  RuleId value = b_.add_rule("value");
  any_value_ = b_.ref(value);
  auto cat = [](std::initializer_list<Sequence> parts) {
    Sequence out;
    for (const Sequence& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  const Sequence comma = cat({ws(), {b_.byte(',')}, ws()});
  RuleId members = b_.add_rule("members");
  Sequence member = cat({{any_string()}, ws(), {b_.byte(':')}, ws(), {b_.ref(value)}});
  b_.add_alt(members, cat({{b_.ref(members)}, comma, member}));
  b_.add_alt(members, member);
  RuleId elements = b_.add_rule("elements");
  b_.add_alt(elements, cat({{b_.ref(elements)}, comma, {b_.ref(value)}}));
  b_.add_alt(elements, {b_.ref(value)});
  Symbol object = b_.choice({cat({{b_.byte('{')}, ws(), {b_.byte('}')}}),
                             cat({{b_.byte('{')}, ws(), {b_.ref(members)}, ws(), {b_.byte('}')}})},
                            "object");
  Symbol array = b_.choice({cat({{b_.byte('[')}, ws(), {b_.byte(']')}}),
                            cat({{b_.byte('[')}, ws(), {b_.ref(elements)}, ws(), {b_.byte(']')}})},
                           "array");
  for (Sequence alt : {Sequence{object}, Sequence{array}, Sequence{any_string()}, Sequence{any_number()},
                       b_.literal("true"), b_.literal("false"), b_.literal("null")})
    b_.add_alt(value, std::move(alt));
  return *any_value_;
}

// Whether a (JSON Schema, unanchored) pattern matches `name`, by keel's own regex front end, so the
// split between listed names and pattern keys agrees with the key grammars.
Result<bool> SchemaCompiler::pattern_matches(const std::string& pattern, const std::string& name,
                                             const std::string& ptr) {
  GrammarBuilder b;
  RuleId root = b.add_rule("match");
  auto sym = regex_to_symbol(b, pattern, {.encoding = CharEncoding::kUtf8, .search = true});
  if (!sym.ok()) return sym.status().with_context(fmt::format("pattern at '#{}/patternProperties'", ptr));
  b.add_alt(root, {*sym});
  KEEL_ASSIGN_OR_RETURN(Grammar g, b.finish(root));
  CompiledGrammar cg(std::move(g));
  EarleyParser p(cg);
  return p.push_bytes(name) && p.can_end();
}

Result<Symbol> SchemaCompiler::key_set(const std::string& pattern, const std::vector<std::string>& names, KeySet which,
                                       const std::string& ptr) {
  auto sym = regex_key_set(b_, pattern, names, which, CharEncoding::kJsonString);
  if (!sym.ok()) {
    if (sym.status().code() != ErrorCode::kUnsupported) return sym.status().with_context(fmt::format("pattern at '#{}'", ptr));
    return unsupported("patternProperties", ptr, sym.status().message());
  }
  return sym;
}

Result<Symbol> SchemaCompiler::pattern_string(const std::string& pattern, bool search, const std::string& ptr) {
  auto sym = regex_to_symbol(b_, pattern, {.encoding = CharEncoding::kJsonString, .search = search});
  if (!sym.ok()) return sym.status().with_context(fmt::format("pattern at '#{}'", ptr));
  return sym;
}

// A JSON string key (quotes included) whose text is none of `names`: the complement of the names'
// trie as a DFA, emitted left-linear (as regex_keys.cc emits key DFAs). prefix[i] derives the key text
// so far when it is node i's name prefix; `other` a name prefix followed by a character no name
// continues with there, after which anything goes. Left-linear, every item of the key starts at the
// key's first column, so once a key has left the names' trie its parse state no longer depends on
// where it left (one state, one mask, for the whole tail of every other key of an object); a
// right-linear trie (node ::= c node' | other rest) nests an item per typed character and made every
// column of the tail, and every kernel position, a new one.
Result<Symbol> SchemaCompiler::key_not_in(const std::vector<std::string>& names) {
  struct Node {
    std::map<uint32_t, int> kids;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    int cur = 0;
    size_t pos = 0;
    uint32_t cp;
    while (pos < name.size()) {
      if (!decode_utf8(name, &pos, &cp)) return make_error(ErrorCode::kInvalidArgument, "property name is not UTF-8");
      auto it = trie[cur].kids.find(cp);
      if (it == trie[cur].kids.end()) {
        trie.push_back({});
        it = trie[cur].kids.emplace(cp, static_cast<int>(trie.size() - 1)).first;
      }
      cur = it->second;
    }
    trie[cur].terminal = true;
  }
  const Symbol rest = b_.group({b_.star({json_char()}), b_.byte('"')}, "key_rest");
  // "Any character but the names' next ones" comes in two parts, so the nodes share most of it: the
  // plain ASCII characters (one raw byte each: printable, not '"' or '\\') as one byte set, and all
  // other characters (escapes, controls, non-ASCII) as one symbol made once, unless a name continues
  // with such a character at that node.
  CharClass plain;
  for (auto [lo, hi] : {std::pair<uint32_t, uint32_t>{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}}) plain.add(lo, hi);
  const CharClass non_plain = plain.negated();
  const Symbol any_non_plain = emit_char_class(b_, non_plain, CharEncoding::kJsonString);
  std::vector<RuleId> prefix(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) prefix[i] = b_.add_rule("key_prefix");
  const RuleId other = b_.add_rule("key_other");
  const RuleId body = b_.add_rule("key_not_in");
  // The prefixes where any non-plain character leaves the names, as one rule: the first byte of such
  // a character (a UTF-8 lead byte, the backslash of an escape) then leads to one state from all of
  // them, not to one per prefix.
  const RuleId shared_prefix = b_.add_rule("key_prefix_np");
  b_.add_alt(prefix[0], {});
  for (size_t i = 0; i < trie.size(); ++i) {
    const Symbol at = b_.ref(prefix[i]);
    if (!trie[i].terminal) b_.add_alt(body, {at, b_.byte('"')});
    ByteSet other_plain;
    for (const CharClass::Range& r : plain.ranges())
      for (uint32_t c = r.lo; c <= r.hi; ++c) other_plain.set(c);
    CharClass used_non_plain;
    for (auto& [cp, kid] : trie[i].kids) {
      if (plain.contains(cp)) {
        other_plain.reset(cp);
        b_.add_alt(prefix[kid], {at, b_.byte(static_cast<uint8_t>(cp))});
      } else {
        used_non_plain.add(cp, cp);
        b_.add_alt(prefix[kid], {at, emit_char_class(b_, CharClass::of(cp), CharEncoding::kJsonString)});
      }
    }
    if (other_plain.any()) b_.add_alt(other, {at, b_.bytes(other_plain)});
    if (used_non_plain.empty()) {
      b_.add_alt(shared_prefix, {at});
    } else {
      used_non_plain.add(plain);
      const CharClass others = used_non_plain.negated();
      if (!others.empty()) b_.add_alt(other, {at, emit_char_class(b_, others, CharEncoding::kJsonString)});
    }
  }
  // The character's first byte is scanned in this rule's own alternatives (the factored class's
  // alternatives spliced in): behind a rule of its own, the character's items would start at the
  // prefix's column and carry its state.
  if (any_non_plain.kind == Symbol::Kind::kRule) {
    const std::vector<Sequence> alts = b_.rule(any_non_plain.index).alts;
    for (const Sequence& alt : alts) {
      Sequence seq{b_.ref(shared_prefix)};
      seq.insert(seq.end(), alt.begin(), alt.end());
      b_.add_alt(other, std::move(seq));
    }
  } else {
    b_.add_alt(other, {b_.ref(shared_prefix), any_non_plain});
  }
  b_.add_alt(body, {b_.ref(other), rest});
  KEEL_RETURN_IF_ERROR(b_.check_budget());
  const Symbol key = b_.group({b_.byte('"'), b_.ref(body)}, "key");
  // Its start position is classified from any key's, shared across schemas (key_start.h).
  if (auto closers = key_closers(names)) {
    const Symbol* known = b_.memo("key_any");
    const Symbol any_key = known != nullptr ? *known : b_.memo("key_any", b_.group({b_.byte('"'), rest}, "key_any"));
    b_.add_key_complement({.key = key.index, .any_key = any_key.index, .closers = std::move(*closers)});
  }
  return key;
}

Result<Symbol> SchemaCompiler::compile_object(const Json& s, const std::string& ptr, int depth) {
  struct Prop {
    std::string name;
    Symbol value;
    bool required;
  };
  if (s.contains("propertyNames")) {  // schema_property_names.cc
    Json with = s;
    if (!s.contains("additionalProperties") && !s.contains("unevaluatedProperties"))
      with["additionalProperties"] = opts_.additional_properties_default;
    KEEL_ASSIGN_OR_RETURN(Json rewritten, rewrite_property_names(with, ptr, root_));
    return compile_object(rewritten, ptr, depth);
  }
  std::optional<std::string> key_pattern;  // propertyNames as a pattern every key matches
  if (s.contains(kKeyPattern)) key_pattern = s[std::string(kKeyPattern)].get<std::string>();
  auto name_allowed = [&](const std::string& n) -> Result<bool> {
    if (!key_pattern) return true;
    return pattern_matches(*key_pattern, n, ptr + "/propertyNames");
  };
  std::vector<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return bad("required", ptr, "an array of strings");
    for (const Json& r : s["required"]) {
      if (!r.is_string()) return bad("required", ptr, "an array of strings");
      if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end())
        required.push_back(r.get<std::string>());
    }
  }
  Json addl = s.contains("additionalProperties") ? s["additionalProperties"]
              : s.contains("unevaluatedProperties") ? s["unevaluatedProperties"]
                                                      : Json(opts_.additional_properties_default);
  std::optional<std::pair<std::string, Json>> pattern_extra;
  if (s.contains("patternProperties") && !s["patternProperties"].empty()) {
    const Json& pp = s["patternProperties"];
    if (!pp.is_object()) return bad("patternProperties", ptr, "an object");
    bool all_true = std::all_of(pp.begin(), pp.end(), [](const Json& v) { return v == true || v == Json::object(); });
    if (pp.size() == 1 && regex_matches_everything(pp.begin().key())) {
      // Every key matches: additionalProperties never applies, each listed property also needs the
      // pattern's schema, and every other key gets it.
      Json rewritten = s;
      rewritten.erase("patternProperties");
      rewritten.erase("unevaluatedProperties");
      const Json& sub = pp.begin().value();
      rewritten["additionalProperties"] = sub;
      if (s.contains("properties") && s["properties"].is_object())
        for (auto& [name, v] : s["properties"].items())
          rewritten["properties"][name] = Json{{"allOf", Json::array({v, sub})}};
      return compile_object(rewritten, ptr, depth);
    }
    if (all_true && addl != false) {
      addl = true;
    } else if (pp.size() == 1) {
      pattern_extra.emplace(pp.begin().key(), pp.begin().value());
    } else {
      return unsupported("patternProperties", ptr, "several patterns (only one, or several with trivial schemas)");
    }
  }
  // Listed and required names the pattern matches need its schema too (keel's own regex decides).
  std::vector<std::string> matched;
  if (pattern_extra) {
    std::vector<std::string> listed = required;
    if (s.contains("properties") && s["properties"].is_object())
      for (auto& [name, v] : s["properties"].items()) listed.push_back(name);
    for (const std::string& n : listed) {
      KEEL_ASSIGN_OR_RETURN(bool hit, pattern_matches(pattern_extra->first, n, ptr));
      if (hit && std::find(matched.begin(), matched.end(), n) == matched.end()) matched.push_back(n);
    }
  }
  auto is_matched = [&](const std::string& n) { return std::find(matched.begin(), matched.end(), n) != matched.end(); };
  std::vector<Prop> props;
  std::vector<std::string> names;
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) return bad("properties", ptr, "an object");
    for (auto& [name, sub] : s["properties"].items()) {
      const Json both = is_matched(name) ? Json{{"allOf", Json::array({sub, pattern_extra->second})}} : sub;
      KEEL_ASSIGN_OR_RETURN(bool allowed, name_allowed(name));
      KEEL_ASSIGN_OR_RETURN(Symbol v, allowed ? compile(both, ptr + "/properties/" + pointer_escape(name), depth + 1)
                                              : Result<Symbol>(b_.never("name_not_allowed")));
      bool req = std::find(required.begin(), required.end(), name) != required.end();
      props.push_back({name, v, req});
      names.push_back(name);
    }
  }
  for (const std::string& r : required) {
    if (std::find(names.begin(), names.end(), r) != names.end()) continue;
    Symbol v;
    KEEL_ASSIGN_OR_RETURN(bool allowed, name_allowed(r));
    if (!allowed) {
      v = b_.never("name_not_allowed");
    } else if (is_matched(r)) {
      KEEL_ASSIGN_OR_RETURN(v, compile(pattern_extra->second, ptr + "/patternProperties", depth + 1));
    } else if (addl == false) {
      v = b_.never("forbidden_required");
    } else {
      KEEL_ASSIGN_OR_RETURN(v, compile(addl, ptr + "/additionalProperties", depth + 1));
    }
    props.push_back({r, v, true});
    names.push_back(r);
  }
  std::optional<Symbol> extra_kv;
  auto kv_tail = [&](Symbol value) { Sequence t = ws(); t.push_back(b_.byte(':')); auto w = ws(); t.insert(t.end(), w.begin(), w.end()); t.push_back(value); return t; };
  if (pattern_extra) {
    const std::string pptr = ptr + "/patternProperties/" + pointer_escape(pattern_extra->first);
    // Keys the pattern matches, other than the listed names (whose kv pairs come first).
    Symbol key;
    if (matched.empty()) {
      KEEL_ASSIGN_OR_RETURN(key, pattern_string(pattern_extra->first, true, ptr + "/patternProperties"));
    } else {
      KEEL_ASSIGN_OR_RETURN(key, key_set(pattern_extra->first, names, KeySet::kPatternMinusNames, pptr));
    }
    KEEL_ASSIGN_OR_RETURN(Symbol value, compile(pattern_extra->second, pptr, depth + 1));
    Sequence kv{b_.byte('"'), key, b_.byte('"')};
    for (Symbol x : kv_tail(value)) kv.push_back(x);
    std::vector<Sequence> alts{{b_.group(std::move(kv), "pattern_kv")}};
    if (addl != false) {  // keys matching neither the pattern nor a name: additionalProperties
      KEEL_ASSIGN_OR_RETURN(Symbol other, key_set(pattern_extra->first, names, KeySet::kNeither, pptr));
      KEEL_ASSIGN_OR_RETURN(Symbol other_value, compile(addl, ptr + "/additionalProperties", depth + 1));
      Sequence okv{b_.byte('"'), other, b_.byte('"')};
      for (Symbol x : kv_tail(other_value)) okv.push_back(x);
      alts.push_back({b_.group(std::move(okv), "other_kv")});
    }
    extra_kv = b_.choice(std::move(alts), "extra_kv");
  } else if (addl != false) {
    Symbol key;
    if (key_pattern) {
      auto sym = regex_key_set(b_, *key_pattern, names, KeySet::kPatternMinusNames, CharEncoding::kJsonString);
      if (!sym.ok()) {
        if (sym.status().code() != ErrorCode::kUnsupported) return sym.status().with_context(fmt::format("propertyNames at '#{}'", ptr));
        return unsupported("propertyNames", ptr, sym.status().message());
      }
      key = b_.group({b_.byte('"'), *sym, b_.byte('"')}, "key");
    } else {
      KEEL_ASSIGN_OR_RETURN(key, key_not_in(names));
    }
    KEEL_ASSIGN_OR_RETURN(Symbol value, compile(addl, ptr + "/additionalProperties", depth + 1));
    Sequence kv{key};
    for (Symbol x : kv_tail(value)) kv.push_back(x);
    extra_kv = b_.group(std::move(kv), "extra_kv");
  }
  KEEL_ASSIGN_OR_RETURN(auto min_props, count_keyword(s, "minProperties", ptr));
  KEEL_ASSIGN_OR_RETURN(auto max_props, count_keyword(s, "maxProperties", ptr));
  std::vector<std::pair<Symbol, bool>> listed;
  for (const Prop& prop : props) {
    Sequence kv = b_.literal(Json(prop.name).dump(-1, ' ', false, Json::error_handler_t::replace));
    for (Symbol x : kv_tail(prop.value)) kv.push_back(x);
    listed.emplace_back(b_.group(std::move(kv), "kv"), prop.required);
  }
  // A maximum that no object of this shape can exceed asserts nothing (and costs no counting).
  int64_t hi = max_props.value_or(-1);
  if (hi >= 0 && !extra_kv && static_cast<int64_t>(props.size()) <= hi) hi = -1;
  // So does a minimum the required properties reach.
  const auto n_required = std::count_if(props.begin(), props.end(), [](const Prop& p) { return p.required; });
  const int64_t lo = min_props.value_or(0) <= n_required ? 0 : *min_props;
  KEEL_ASSIGN_OR_RETURN(Symbol members, object_members(listed, extra_kv, lo, hi, ptr));
  // Each member brings the whitespace before it, so every gap (also in "{ }") is one bounded run.
  Sequence obj{b_.byte('{')};
  obj.push_back(members);
  for (Symbol x : ws()) obj.push_back(x);
  obj.push_back(b_.byte('}'));
  KEEL_RETURN_IF_ERROR(b_.check_budget());
  return b_.group(std::move(obj), "object");
}

Result<Symbol> SchemaCompiler::compile_array(const Json& s, const std::string& ptr, int depth) {
  KEEL_ASSIGN_OR_RETURN(auto with_contains, compile_contains(s, ptr, depth));
  if (with_contains) return *with_contains;
  std::vector<Symbol> prefix;
  Json tail = true;
  std::string tail_ptr = ptr + "/items";
  const Json* prefix_json = s.contains("prefixItems") ? &s["prefixItems"] : nullptr;
  if (s.contains("items") && s["items"].is_array()) {  // draft-07 tuple form
    if (prefix_json) return bad("items", ptr, "a schema when prefixItems is present");
    prefix_json = &s["items"];
    if (s.contains("additionalItems")) tail = s["additionalItems"], tail_ptr = ptr + "/additionalItems";
  } else if (s.contains("items")) {
    tail = s["items"];
  }
  if (prefix_json) {
    if (!prefix_json->is_array()) return bad("prefixItems", ptr, "an array");
    for (size_t i = 0; i < prefix_json->size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(Symbol sym, compile((*prefix_json)[i], ptr + "/prefixItems/" + std::to_string(i), depth + 1));
      prefix.push_back(sym);
    }
  }
  KEEL_ASSIGN_OR_RETURN(auto min_items, count_keyword(s, "minItems", ptr));
  KEEL_ASSIGN_OR_RETURN(auto max_items, count_keyword(s, "maxItems", ptr));
  const int64_t lo = min_items.value_or(0), hi = max_items.value_or(-1);
  if (hi >= 0 && hi < lo) return b_.never("array");
  Sequence comma = ws();
  comma.push_back(b_.byte(','));
  for (Symbol x : ws()) comma.push_back(x);
  std::optional<Symbol> tail_sym;
  if (tail != false) {
    KEEL_ASSIGN_OR_RETURN(tail_sym, compile(tail, tail_ptr, depth + 1));
  }
  // R(i): the rest of the array after i elements.
  const auto np = static_cast<int64_t>(prefix.size());
  Symbol rest;
  if (hi >= 0 && hi <= np) {
    rest = b_.empty();
  } else if (!tail_sym) {
    rest = np >= lo ? b_.empty() : b_.never("array_tail");
  } else {
    Sequence item = np == 0 ? Sequence{} : comma;
    item.push_back(*tail_sym);
    int64_t t_lo = std::max<int64_t>(lo - np, 0), t_hi = hi < 0 ? -1 : hi - np;
    if (np == 0) {
      // First element has no comma: elem (comma elem){t_lo-1, t_hi-1}, or nothing when t_lo == 0.
      Sequence more = comma;
      more.push_back(*tail_sym);
      Symbol after = b_.repeat(std::move(more), std::max<int64_t>(t_lo - 1, 0), t_hi < 0 ? -1 : t_hi - 1);
      Sequence first = ws();
      first.push_back(*tail_sym);
      first.push_back(after);
      Symbol some = b_.group(std::move(first), "elements");
      rest = t_lo == 0 ? b_.optional({some}) : some;
    } else {
      rest = b_.repeat(std::move(item), t_lo, t_hi);
    }
  }
  for (int64_t i = np; i-- > 0;) {
    std::vector<Sequence> alts;
    if (i >= lo) alts.push_back({});
    if (hi < 0 || i < hi) {
      Sequence s2 = i == 0 ? ws() : comma;
      s2.push_back(prefix[static_cast<size_t>(i)]);
      s2.push_back(rest);
      alts.push_back(std::move(s2));
    }
    rest = alts.empty() ? b_.never("array") : b_.choice(std::move(alts), "prefix");
  }
  Sequence arr{b_.byte('[')};  // as for objects: each element brings its leading whitespace
  arr.push_back(rest);
  for (Symbol x : ws()) arr.push_back(x);
  arr.push_back(b_.byte(']'));
  return b_.group(std::move(arr), "array");
}

Result<Symbol> SchemaCompiler::compile_string(const Json& s, const std::string& ptr) {
  KEEL_ASSIGN_OR_RETURN(auto min_len, count_keyword(s, "minLength", ptr));
  KEEL_ASSIGN_OR_RETURN(auto max_len, count_keyword(s, "maxLength", ptr));
  const bool has_len = min_len.value_or(0) > 0 || max_len.has_value();
  std::optional<std::string> pattern;
  std::string pattern_kw = "pattern";
  if (s.contains("format")) {
    if (!s["format"].is_string()) return bad("format", ptr, "a string");
    pattern = format_pattern(s["format"].get<std::string>());
    if (pattern) {
      pattern_kw = "format";
      if (s.contains("pattern")) return unsupported("pattern", ptr, "together with format");
    } else if (is_standard_format(s["format"].get<std::string>())) {
      return unsupported("format", ptr, fmt::format("format '{}'", s["format"].get<std::string>()));
    }
    // Any other name is no format JSON Schema defines: an annotation, which validators ignore.
  }
  if (!pattern && s.contains("pattern")) {
    if (!s["pattern"].is_string()) return bad("pattern", ptr, "a string");
    pattern = s["pattern"].get<std::string>();
  }
  if (s.contains(kNotPattern)) {
    const Json& p = s[std::string(kNotPattern)];
    if (!p.is_string()) return bad(kNotPattern, ptr, "a string");
    if (pattern || has_len || s.contains(kStringNotIn))
      return unsupported("not", ptr, "a negated pattern next to pattern/format/length/enum");
    auto sym = regex_key_set(b_, p.get<std::string>(), {}, KeySet::kNeither, CharEncoding::kJsonString);
    if (!sym.ok()) {
      if (sym.status().code() != ErrorCode::kUnsupported) return sym.status().with_context(fmt::format("pattern at '#{}'", ptr));
      return unsupported("not", ptr, fmt::format("the negated pattern ({})", sym.status().message()));
    }
    return b_.group({b_.byte('"'), *sym, b_.byte('"')}, "string");
  }
  if (s.contains(kStringNotIn)) {
    std::vector<std::string> names;
    const Json& v = s[std::string(kStringNotIn)];
    for (const Json& n : v.is_array() ? v : Json::array({v})) {
      if (!n.is_string()) return bad(kStringNotIn, ptr, "an array of strings");
      names.push_back(n.get<std::string>());
    }
    if (pattern || has_len) return unsupported("not", ptr, "a string enum negated next to pattern/format/length");
    return key_not_in(names);
  }
  Symbol body;
  if (pattern && has_len) {
    auto sym = regex_with_length(b_, *pattern, {.encoding = CharEncoding::kJsonString, .search = true},
                                 min_len.value_or(0), max_len ? *max_len : -1);
    if (!sym.ok()) {
      if (sym.status().code() != ErrorCode::kUnsupported) return sym.status().with_context(fmt::format("pattern at '#{}'", ptr));
      return unsupported(pattern_kw, ptr, fmt::format("together with minLength/maxLength ({})", sym.status().message()));
    }
    body = *sym;
  } else if (pattern) {
    KEEL_ASSIGN_OR_RETURN(body, pattern_string(*pattern, true, ptr + "/" + pattern_kw));
  } else if (has_len) {
    const int64_t max = max_len ? std::min<int64_t>(*max_len, INT64_MAX) : -1;
    if (max > 100'000 || min_len.value_or(0) > 100'000) return unsupported("maxLength", ptr, "length above 100000");
    body = b_.repeat({json_char()}, min_len.value_or(0), max);
  } else {
    return any_string();
  }
  return b_.group({b_.byte('"'), body, b_.byte('"')}, "string");
}

Result<Symbol> SchemaCompiler::compile_number(const Json& s, const std::string& ptr, bool integer) {
  std::optional<NumberBound> lo, hi;
  auto tighten = [&](std::optional<NumberBound>& cur, const Json& v, bool exclusive, bool lower) -> Status {
    if (!v.is_number() || !std::isfinite(v.get<double>())) return bad(lower ? "minimum" : "maximum", ptr, "a finite number");
    NumberBound nb{v.dump(), exclusive};
    if (!cur) {
      cur = nb;
      return {};
    }
    double a = std::stod(cur->text), b = v.get<double>();
    if ((lower && (b > a || (b == a && exclusive))) || (!lower && (b < a || (b == a && exclusive)))) cur = nb;
    return {};
  };
  bool excl_min_bool = s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() && s["exclusiveMinimum"].get<bool>();
  bool excl_max_bool = s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() && s["exclusiveMaximum"].get<bool>();
  if (s.contains("minimum")) KEEL_RETURN_IF_ERROR(tighten(lo, s["minimum"], excl_min_bool, true));
  if (s.contains("maximum")) KEEL_RETURN_IF_ERROR(tighten(hi, s["maximum"], excl_max_bool, false));
  if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean())
    KEEL_RETURN_IF_ERROR(tighten(lo, s["exclusiveMinimum"], true, true));
  if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean())
    KEEL_RETURN_IF_ERROR(tighten(hi, s["exclusiveMaximum"], true, false));
  if (s.contains(kNotInteger)) {
    // Non-integral numbers, written without exponent (1.5e1 is the integer 15): a fraction with a
    // non-zero digit.
    if (integer) return b_.never("not_integer");
    if (lo || hi || s.contains("multipleOf")) return unsupported("not", ptr, "'integer' negated next to numeric bounds");
    auto sym = regex_to_symbol(b_, "-?(0|[1-9][0-9]*)\\.[0-9]*[1-9][0-9]*", {.encoding = CharEncoding::kUtf8});
    if (!sym.ok()) return sym.status();
    return sym;
  }
  int max_frac = -1;
  if (s.contains("multipleOf")) {
    const Json& m = s["multipleOf"];
    const double mv = m.get<double>();
    if (mv >= 1 && std::floor(mv) == mv) {
      if (mv > 1 && (lo || hi)) return unsupported("multipleOf", ptr, "a multiple other than 1 next to numeric bounds");
      if (mv > static_cast<double>(kMaxIntegerMultiple))
        return unsupported("multipleOf", ptr, fmt::format("a multiple above {}", kMaxIntegerMultiple));
      if (mv > 1) return integer_multiple_symbol(b_, static_cast<uint64_t>(mv));
      integer = true;
    } else if (int k = decimal_power_digits(m.dump()); k > 0) {
      if (!integer) max_frac = k;
    } else {
      return unsupported("multipleOf", ptr, "only integers and powers of ten below 1 (0.1, 0.01, ...)");
    }
  }
  if (!lo && !hi && !integer && max_frac < 0) return any_number();
  auto sym = number_symbol(b_, integer, lo, hi, max_frac);
  if (!sym.ok()) return sym.status().with_context(fmt::format("bounds at '#{}'", ptr));
  return sym;
}

}  // namespace keel::grammar::detail
