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

  // Nullable rules by worklist: an alternative becomes nullable when its last non-nullable rule
  // reference does; alternatives with a terminal never are. Linear in the grammar size.
  nullable_.assign(n_rules + 1, 0);
  std::vector<uint32_t> pending;                         // per alternative: rule refs not yet nullable
  std::vector<uint32_t> alt_rule;                        // per alternative: its rule
  std::vector<std::vector<uint32_t>> used_in(n_rules + 1);  // rule -> alternatives referencing it
  std::vector<uint32_t> queue;
  for (uint32_t r = 0; r <= n_rules; ++r) {
    for (uint32_t pos : alt_starts_[r]) {
      const auto alt = static_cast<uint32_t>(pending.size());
      uint32_t n = 0;
      bool has_terminal = false;
      for (uint32_t p = pos; symbols_[p].kind != FlatSymbol::Kind::kEnd; ++p) {
        if (symbols_[p].kind == FlatSymbol::Kind::kBytes) {
          has_terminal = true;
        } else {
          ++n;
          used_in[symbols_[p].index].push_back(alt);
        }
      }
      pending.push_back(has_terminal ? UINT32_MAX : n);
      alt_rule.push_back(r);
      if (n == 0 && !has_terminal && !nullable_[r]) {
        nullable_[r] = 1;
        queue.push_back(r);
      }
    }
  }
  while (!queue.empty()) {
    uint32_t r = queue.back();
    queue.pop_back();
    for (uint32_t alt : used_in[r]) {
      if (pending[alt] == UINT32_MAX || --pending[alt] != 0 || nullable_[alt_rule[alt]]) continue;
      nullable_[alt_rule[alt]] = 1;
      queue.push_back(alt_rule[alt]);
    }
  }
  start_productive_ = compute_productive(used_in, alt_rule)[start_rule_] != 0;
}

// Productive rules (deriving some byte string), by the same worklist: an alternative is productive
// once all its rule references are, unless one of its byte sets is empty.
std::vector<uint8_t> CompiledGrammar::compute_productive(const std::vector<std::vector<uint32_t>>& used_in,
                                                         const std::vector<uint32_t>& alt_rule) const {
  const auto n_rules = static_cast<uint32_t>(alt_starts_.size());
  std::vector<uint8_t> productive(n_rules, 0);
  std::vector<uint32_t> pending, queue;
  for (uint32_t r = 0; r < n_rules; ++r) {
    for (uint32_t pos : alt_starts_[r]) {
      uint32_t n = 0;
      bool dead = false;
      for (uint32_t p = pos; symbols_[p].kind != FlatSymbol::Kind::kEnd; ++p) {
        if (symbols_[p].kind == FlatSymbol::Kind::kBytes) {
          dead = dead || grammar_.byte_sets[symbols_[p].index].none();
        } else {
          ++n;
        }
      }
      pending.push_back(dead ? UINT32_MAX : n);
      if (n == 0 && !dead && !productive[r]) {
        productive[r] = 1;
        queue.push_back(r);
      }
    }
  }
  while (!queue.empty()) {
    uint32_t r = queue.back();
    queue.pop_back();
    for (uint32_t alt : used_in[r]) {
      if (pending[alt] == UINT32_MAX || --pending[alt] != 0 || productive[alt_rule[alt]]) continue;
      productive[alt_rule[alt]] = 1;
      queue.push_back(alt_rule[alt]);
    }
  }
  return productive;
}

}  // namespace keel::grammar
