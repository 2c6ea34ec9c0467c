// Thompson NFA of a regular expression over character classes (regex_length.cc builds it), shared
// by regex_length.cc (pattern x length counter) and regex_keys.cc (determinised for complements).
// Internal to src/grammar/.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "grammar/char_class.h"

namespace keel::grammar::regex_detail {

struct Nfa {
  struct Edge {
    int cls;  // index into classes, -1 = epsilon
    int to;
  };
  std::vector<std::vector<Edge>> out;
  std::vector<CharClass> classes;

  int add_state() {
    out.emplace_back();
    return static_cast<int>(out.size() - 1);
  }
  void eps(int from, int to) { out[static_cast<size_t>(from)].push_back({-1, to}); }
  void edge(int from, const CharClass& c, int to) {
    classes.push_back(c);
    out[static_cast<size_t>(from)].push_back({static_cast<int>(classes.size() - 1), to});
  }
};

// The whole pattern from state 0 to the returned final state; `search`: JSON Schema semantics
// (ends without ^ / $ padded with any-character loops). Capped in size (kUnsupported).
Result<std::pair<Nfa, int>> pattern_nfa(std::string_view pattern, bool search);

}  // namespace keel::grammar::regex_detail
