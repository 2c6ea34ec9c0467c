// Counting constructs of the JSON Schema compiler, each a left-linear automaton over a bounded count:
//   object members with minProperties / maxProperties (listed properties in schema order, then the
//   additional members, counted together), and arrays with contains / minContains / maxContains.
#include <algorithm>
#include <array>

#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

constexpr int64_t kMaxCount = 256;  // states per position: count 0..kMaxCount

Status unsupported(std::string_view keyword, const std::string& ptr, std::string_view detail) {
  return make_error(ErrorCode::kUnsupported, "JSON Schema keyword '{}' at '#{}' is not supported: {}", keyword, ptr,
                    detail);
}

Result<std::optional<int64_t>> count_of(const Json& s, std::string_view key, const std::string& ptr) {
  if (!s.contains(key)) return std::optional<int64_t>();
  const Json& v = s[std::string(key)];
  if (v.is_number_unsigned()) return std::optional<int64_t>(static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX / 4)));
  if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 1e15 &&
      v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())))
    return std::optional<int64_t>(static_cast<int64_t>(v.get<double>()));
  return make_error(ErrorCode::kInvalidArgument, "'{}' at '#{}' must be a non-negative integer", key, ptr);
}

}  // namespace

Sequence SchemaCompiler::comma() {
  Sequence c = ws();
  c.push_back(b_.byte(','));
  for (Symbol x : ws()) c.push_back(x);
  return c;
}

// The members of an object (without the braces and the whitespace before '}'): the listed
// key-value pairs in order (each optional unless required), then any number of `extra` pairs, with
// the total count in [lo, hi] (hi < 0: unbounded). Rules P(i, c, first): members from listed pair i
// on, given c members so far (saturating at lo when hi < 0) and whether none was written yet.
Result<Symbol> SchemaCompiler::object_members(const std::vector<std::pair<Symbol, bool>>& listed,
                                              std::optional<Symbol> extra, int64_t lo, int64_t hi,
                                              const std::string& ptr) {
  if (hi >= 0 && hi < lo) return b_.never("object");
  // Extra keys (additionalProperties / patternProperties) are not kept distinct from each other, and
  // a JSON parser keeps one of two equal keys, so only the first extra member may count towards lo:
  // listed names are distinct, and an extra key differs from every listed one. (Towards hi a repeat
  // only makes the count stricter.)
  const auto reachable = static_cast<int64_t>(listed.size()) + (extra ? 1 : 0);
  if (lo > reachable) {
    return unsupported("minProperties", ptr,
                       fmt::format("{} members need more than one key beyond the {} listed properties, and keel "
                                   "does not keep additional keys distinct",
                                   lo, listed.size()));
  }
  const int64_t k = hi >= 0 ? hi : lo;
  if (k > kMaxCount)
    return unsupported(hi >= 0 ? "maxProperties" : "minProperties", ptr, fmt::format("a count above {}", kMaxCount));
  const size_t n = listed.size(), width = static_cast<size_t>(k) + 1;
  std::vector<std::array<RuleId, 2>> p((n + 1) * width);
  for (auto& r : p) r = {b_.add_rule("props"), b_.add_rule("props_first")};
  auto at = [&](size_t i, int64_t c, int first) { return p[i * width + static_cast<size_t>(c)][first]; };
  const Sequence sep = comma();
  for (int64_t c = 0; c <= k; ++c) {
    for (int first = 0; first < 2; ++first) {
      RuleId end = at(n, c, first);
      // Extra members still to come: at least lo - c (when counting exactly), at most hi - c.
      const int64_t e_lo = std::max<int64_t>(lo - c, 0), e_hi = hi < 0 ? -1 : hi - c;
      if (e_lo == 0) b_.add_alt(end, {});
      if (extra && e_hi != 0 && e_lo <= 1) {
        Sequence more = sep;
        more.push_back(*extra);
        Symbol tail = b_.repeat(std::move(more), std::max<int64_t>(e_lo - 1, 0), e_hi < 0 ? -1 : e_hi - 1);
        Sequence one = first ? ws() : sep;
        one.push_back(*extra);
        one.push_back(tail);
        b_.add_alt(end, std::move(one));
      }
    }
  }
  for (size_t i = n; i-- > 0;) {
    for (int64_t c = 0; c <= k; ++c) {
      const int64_t next = hi < 0 ? std::min(c + 1, k) : c + 1;
      for (int first = 0; first < 2; ++first) {
        if (next <= k) {
          Sequence with = first ? ws() : sep;
          with.push_back(listed[i].first);
          with.push_back(b_.ref(at(i + 1, next, 0)));
          b_.add_alt(at(i, c, first), std::move(with));
        }
        if (!listed[i].second) b_.add_alt(at(i, c, first), {b_.ref(at(i + 1, c, first))});
      }
    }
  }
  KEEL_RETURN_IF_ERROR(b_.check_budget());
  return b_.ref(at(0, 0, 1));
}

// `contains` with minContains m (default 1) and maxContains M: arrays whose items all match
// `items`, with between m and M of them matching `contains` too. Left-linear over "items so far
// that match contains" (saturating at m when there is no maxContains).
Result<std::optional<Symbol>> SchemaCompiler::compile_contains(const Json& s, const std::string& ptr, int depth) {
  if (!s.contains("contains")) return std::optional<Symbol>();
  KEEL_ASSIGN_OR_RETURN(auto min_contains, count_of(s, "minContains", ptr));
  KEEL_ASSIGN_OR_RETURN(auto max_contains, count_of(s, "maxContains", ptr));
  const int64_t m = min_contains.value_or(1);
  const int64_t hi = max_contains.value_or(-1);
  if (m == 0 && hi < 0) return std::optional<Symbol>();  // every array has at least zero matches
  if (hi >= 0 && hi < m) return std::optional<Symbol>(b_.never("array"));
  const int64_t k = hi >= 0 ? hi : m;
  if (k > 64) return unsupported(hi >= 0 ? "maxContains" : "minContains", ptr, "a count above 64");
  for (const char* kw : {"prefixItems", "additionalItems", "minItems", "maxItems"})
    if (s.contains(kw)) return unsupported("contains", ptr, fmt::format("next to '{}'", kw));
  const Json items = s.contains("items") ? s["items"] : Json(true);
  if (items.is_array()) return unsupported("contains", ptr, "next to tuple 'items'");
  // Items that fail `contains` (only needed when the count is bounded above); without a maximum
  // any item may be a non-hit, since a hit counted as a miss only lowers the count.
  KEEL_ASSIGN_OR_RETURN(Symbol hit, compile(Json{{"allOf", Json::array({items, s["contains"]})}}, ptr + "/contains", depth + 1));
  Symbol miss;
  if (hi >= 0) {
    auto neg = negate_schema(s["contains"], ptr + "/contains", 0, root_);
    if (!neg.ok()) {
      if (neg.status().code() != ErrorCode::kUnsupported) return neg.status();
      return unsupported("maxContains", ptr, fmt::format("items failing 'contains' have no exact form ({})", neg.status().message()));
    }
    KEEL_ASSIGN_OR_RETURN(miss, compile(Json{{"allOf", Json::array({items, *neg})}}, ptr + "/contains", depth + 1));
  } else {
    KEEL_ASSIGN_OR_RETURN(miss, compile(items, ptr + "/items", depth + 1));
  }
  const Sequence sep = comma();
  std::vector<RuleId> t(static_cast<size_t>(k) + 1);  // t[c]: one or more items, c of them hits
  for (RuleId& r : t) r = b_.add_rule("contains");
  auto add = [&](RuleId to, std::optional<RuleId> from, Symbol item) {
    Sequence seq;
    if (from) {
      seq.push_back(b_.ref(*from));
      seq.insert(seq.end(), sep.begin(), sep.end());
    } else {
      seq = ws();
    }
    seq.push_back(item);
    b_.add_alt(to, std::move(seq));
  };
  add(t[0], std::nullopt, miss);
  if (k >= 1) add(t[1], std::nullopt, hit);
  for (size_t c = 0; c < t.size(); ++c) {
    add(t[c], t[c], miss);
    if (hi < 0) {
      add(t[std::min(c + 1, t.size() - 1)], t[c], hit);
    } else if (c + 1 < t.size()) {
      add(t[c + 1], t[c], hit);
    }
  }
  std::vector<Sequence> alts;
  if (m == 0) alts.push_back({});  // the empty array: zero matches
  for (int64_t c = m; c <= k; ++c) alts.push_back({b_.ref(t[static_cast<size_t>(c)])});
  Sequence arr{b_.byte('['), b_.choice(std::move(alts), "contains_count")};
  for (Symbol x : ws()) arr.push_back(x);
  arr.push_back(b_.byte(']'));
  return std::optional<Symbol>(b_.group(std::move(arr), "array"));
}

}  // namespace keel::grammar::detail
