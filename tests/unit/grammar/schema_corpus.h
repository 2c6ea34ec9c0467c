// Helpers shared by the grammar tests that run the JSON Schema corpora (MaskBench, the official
// JSON-Schema-Test-Suite) from ../shared/data: loading, reordering instance keys into the order the
// schema lists its properties (keel emits properties in schema order), and byte-level acceptance.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>

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
