// CompiledGrammar: the grammar IR flattened for the Earley parser — every alternative laid out as a
// run of symbols ending in an End marker, nullable rules precomputed, a synthetic start rule on top.
// Vocabulary-independent; immutable once built, so one instance is shared by every matcher (and the
// GrammarCache) across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace keel::grammar {

// One flat grammar position: what stands after the dot.
struct FlatSymbol {
  enum class Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind;
  uint32_t index;  // byte set (kBytes), rule predicted (kRule), rule completed (kEnd)
};

class CompiledGrammar {
 public:
  explicit CompiledGrammar(Grammar grammar);

  const Grammar& grammar() const { return grammar_; }
  const FlatSymbol& symbol(uint32_t pos) const { return symbols_[pos]; }
  const ByteSet& byte_set(uint32_t id) const { return grammar_.byte_sets[id]; }
  // First flat position of each alternative of `rule`.
  const std::vector<uint32_t>& alt_starts(uint32_t rule) const { return alt_starts_[rule]; }
  bool nullable(uint32_t rule) const { return nullable_[rule] != 0; }
  // No byte string at all is in the language (an unsatisfiable schema, a regex of empty classes).
  bool language_empty() const { return !start_productive_; }
  uint32_t start_rule() const { return start_rule_; }
  uint32_t n_rules() const { return static_cast<uint32_t>(alt_starts_.size()); }
  uint32_t n_positions() const { return static_cast<uint32_t>(symbols_.size()); }

 private:
  std::vector<uint8_t> compute_productive(const std::vector<std::vector<uint32_t>>& used_in,
                                          const std::vector<uint32_t>& alt_rule) const;

  Grammar grammar_;
  std::vector<FlatSymbol> symbols_;
  std::vector<std::vector<uint32_t>> alt_starts_;  // [n_rules + 1]: the last one is the start rule
  std::vector<uint8_t> nullable_;
  bool start_productive_ = false;
  uint32_t start_rule_ = 0;
};

}  // namespace keel::grammar
