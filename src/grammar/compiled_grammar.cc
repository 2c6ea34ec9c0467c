#include "grammar/compiled_grammar.h"

namespace keel::grammar {

CompiledGrammar::CompiledGrammar(Grammar grammar) : grammar_(std::move(grammar)) {
  const uint32_t n_rules = static_cast<uint32_t>(grammar_.rules.size());
  start_rule_ = n_rules;
  alt_starts_.resize(n_rules + 1);
  symbols_.reserve(grammar_.n_symbols() + 2);
  for (uint32_t r = 0; r < n_rules; ++r) {
    for (const Sequence& seq : grammar_.rules[r].alts) {
      alt_starts_[r].push_back(static_cast<uint32_t>(symbols_.size()));
      for (const Symbol& s : seq) {
        symbols_.push_back({s.kind == Symbol::Kind::kBytes ? FlatSymbol::Kind::kBytes : FlatSymbol::Kind::kRule,
                            s.index});
      }
      symbols_.push_back({FlatSymbol::Kind::kEnd, r});
    }
  }
  alt_starts_[start_rule_].push_back(static_cast<uint32_t>(symbols_.size()));
  symbols_.push_back({FlatSymbol::Kind::kRule, grammar_.root});
  symbols_.push_back({FlatSymbol::Kind::kEnd, start_rule_});

  // Nullable rules by fixpoint: a rule is nullable when one alternative is all nullable rules.
  nullable_.assign(n_rules + 1, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r <= n_rules; ++r) {
      if (nullable_[r]) continue;
      for (uint32_t pos : alt_starts_[r]) {
        while (symbols_[pos].kind == FlatSymbol::Kind::kRule && nullable_[symbols_[pos].index]) ++pos;
        if (symbols_[pos].kind == FlatSymbol::Kind::kEnd) {
          nullable_[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
}

}  // namespace keel::grammar
