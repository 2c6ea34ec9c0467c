// Helpers shared by the grammar tests that run the JSON Schema corpora (MaskBench, the official
// JSON-Schema-Test-Suite) from ../shared/data: loading, reordering instance keys into the order the
// schema lists its properties (keel emits properties in schema order), byte-level acceptance, and
// `accepts_some_spelling`: whether the grammar accepts ANY compact serialisation of an instance
// (every key order, every spelling of each number), found by a depth-first search over the parser.
#pragma once

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"

namespace keel::grammar::test {

using Json = nlohmann::ordered_json;

inline std::string shared_data_dir() {
  if (const char* env = std::getenv("KEEL_SHARED_DATA")) return env;
  return keel::test::source_dir() + "/../shared/data";
}

inline Json load_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

// First position of every property name in any "properties" of the schema, in document order.
inline void collect_property_order(const Json& s, std::unordered_map<std::string, size_t>& order) {
  if (s.is_object()) {
    if (s.contains("properties") && s["properties"].is_object())
      for (auto& [k, v] : s["properties"].items()) order.try_emplace(k, order.size());
    if (s.contains("required") && s["required"].is_array())
      for (const Json& r : s["required"])
        if (r.is_string()) order.try_emplace(r.get<std::string>(), order.size());
    for (auto& [k, v] : s.items()) collect_property_order(v, order);
  } else if (s.is_array()) {
    for (const Json& v : s) collect_property_order(v, order);
  }
}

inline Json reorder_keys(const Json& v, const std::unordered_map<std::string, size_t>& order) {
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& x : v) out.push_back(reorder_keys(x, order));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<std::pair<std::string, const Json*>> items;
  for (auto& [k, x] : v.items()) items.emplace_back(k, &x);
  std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
    auto ia = order.find(a.first), ib = order.find(b.first);
    size_t ka = ia == order.end() ? SIZE_MAX : ia->second, kb = ib == order.end() ? SIZE_MAX : ib->second;
    return ka < kb;
  });
  Json out = Json::object();
  for (auto& [k, x] : items) out[k] = reorder_keys(*x, order);
  return out;
}

inline std::string compact(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

inline bool accepts(const CompiledGrammar& g, std::string_view text) {
  EarleyParser p(g);
  return p.push_bytes(text) && p.can_end();
}

}  // namespace keel::grammar::test

namespace keel::grammar::test {

// The texts of the same number: as dumped, without exponent, and, when integral, without or with a
// ".0" fraction ("1.256e-06" -> "0.000001256"; "1.0" -> "1"; "3" -> "3.0"). All denote one value.
inline std::vector<std::string> number_spellings(const std::string& t) {
  std::vector<std::string> out{t};
  size_t i = 0;
  std::string sign;
  if (i < t.size() && t[i] == '-') sign = "-", ++i;
  std::string digits;
  long point = -1, exp = 0;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      point = static_cast<long>(digits.size());
    } else {
      digits += t[i];
    }
  }
  if (point < 0) point = static_cast<long>(digits.size());
  if (i < t.size()) exp = std::stol(t.substr(i + 1));
  if (exp > 400 || exp < -400) return out;
  point += exp;
  while (point < 1) digits.insert(digits.begin(), '0'), ++point;
  while (static_cast<long>(digits.size()) < point) digits += '0';
  std::string int_part = digits.substr(0, static_cast<size_t>(point)), frac = digits.substr(static_cast<size_t>(point));
  int_part.erase(0, std::min(int_part.find_first_not_of('0'), int_part.size() - 1));
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  const std::string plain = sign + int_part + (frac.empty() ? "" : "." + frac);
  for (const std::string& s : {plain, frac.empty() ? plain + ".0" : std::string()})
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  return out;
}

// Depth-first search for a compact serialisation of an instance that the parser accepts: object
// keys in any order (the given order first), numbers in any spelling of number_spellings. Every
// step either extends the parser's input or is undone, so the search is exact up to `budget` steps;
// `exhausted` tells when it ran out (then "not accepted" only covers the orders tried).
class SpellingSearch {
 public:
  // `space`: written after every '{' '[' ',' ':' and before every '}' ']' (" " gives the
  // `json.dumps` look, "" compact JSON).
  SpellingSearch(const CompiledGrammar& g, const std::unordered_map<std::string, size_t>& order, long budget,
                 std::string space = "")
      : p_(g), order_(order), budget_(budget), sp_(std::move(space)) {}

  bool accepts(const Json& v) { return emit(v, [&] { return p_.can_end(); }); }
  bool exhausted() const { return budget_ < 0; }

 private:
  using Cont = std::function<bool()>;

  bool push_then(const std::string& text, const Cont& k) {
    if (!p_.push_bytes(text)) return false;
    if (k()) return true;
    p_.pop_bytes(text.size());
    return false;
  }

  bool emit(const Json& v, const Cont& k) {
    if (--budget_ < 0) return false;
    if (v.is_number()) {
      for (const std::string& s : number_spellings(compact(v)))
        if (push_then(s, k)) return true;
      return false;
    }
    if (v.is_array()) {
      return push_then("[" + sp_, [&] { return elements(v, 0, k); });
    }
    if (!v.is_object()) return push_then(compact(v), k);
    std::vector<std::string> keys;
    for (auto& [key, x] : v.items()) keys.push_back(key);
    std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      auto ia = order_.find(a), ib = order_.find(b);
      return (ia == order_.end() ? SIZE_MAX : ia->second) < (ib == order_.end() ? SIZE_MAX : ib->second);
    });
    std::vector<bool> used(keys.size());
    return push_then("{" + sp_, [&] { return members(v, keys, used, 0, k); });
  }

  bool elements(const Json& arr, size_t i, const Cont& k) {
    if (i == arr.size()) return push_then(i == 0 ? "]" : sp_ + "]", k);
    return push_then(i == 0 ? "" : "," + sp_, [&] { return emit(arr[i], [&] { return elements(arr, i + 1, k); }); });
  }

  bool members(const Json& obj, const std::vector<std::string>& keys, std::vector<bool>& used, size_t n,
               const Cont& k) {
    if (n == keys.size()) return push_then(n == 0 ? "}" : sp_ + "}", k);
    for (size_t i = 0; i < keys.size() && budget_ >= 0; ++i) {
      if (used[i]) continue;
      used[i] = true;
      const std::string head = (n == 0 ? "" : "," + sp_) + compact(Json(keys[i])) + ":" + sp_;
      const bool ok = push_then(head, [&] { return emit(obj[keys[i]], [&] { return members(obj, keys, used, n + 1, k); }); });
      used[i] = false;
      if (ok) return true;
    }
    return false;
  }

  EarleyParser p_;
  const std::unordered_map<std::string, size_t>& order_;
  long budget_;
  std::string sp_;
};

}  // namespace keel::grammar::test
