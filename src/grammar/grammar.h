// Grammar IR: a context-free grammar over bytes. Every front end (JSON Schema, regex, GBNF) lowers to
// it through GrammarBuilder; CompiledGrammar (compiled_grammar.h) flattens it for the Earley matcher.
// Terminals are byte sets, so UTF-8 characters are sequences of terminals. Plain data: build on one
// thread, then share read-only.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace keel::grammar {

using ByteSet = std::bitset<256>;
using RuleId = uint32_t;

struct Symbol {
  enum class Kind : uint8_t { kBytes, kRule };
  Kind kind = Kind::kBytes;
  uint32_t index = 0;  // into Grammar::byte_sets (kBytes) or Grammar::rules (kRule)
  bool operator==(const Symbol&) const = default;
};

using Sequence = std::vector<Symbol>;

struct Rule {
  std::string name;
  std::vector<Sequence> alts;  // no alternatives: the rule matches nothing
};

// An object key that must be none of some names (SchemaCompiler::key_not_in): `key ::= '"' body`,
// beside `any_key ::= '"' json_char* '"'` (unreachable, name-independent). The position after the
// key's opening quote is classified from any_key's (shared across schemas) by taking out the tokens
// that spell a name and its closing quote (`closers`: each name's canonical JSON spelling + '"').
struct KeyComplement {
  RuleId key = 0;
  RuleId any_key = 0;
  std::vector<std::string> closers;
};

struct Grammar {
  std::vector<ByteSet> byte_sets;
  std::vector<Rule> rules;
  RuleId root = 0;
  std::vector<KeyComplement> key_complements;  // key_start.h

  size_t n_symbols() const;
  // GBNF-like text, for debugging and error messages.
  std::string to_string() const;
};

// Bounds on the size and time of one compilation; exceeding them is kResourceExhausted.
struct BuildLimits {
  size_t max_symbols = 2'000'000;
  int64_t max_compile_ms = 5'000;
};

// Appends rules and interns byte sets. Repetitions are built left-recursively so that Earley parsing
// of long repetitions stays linear. Once a limit is exceeded every call is a no-op and finish()
// returns the error.
class GrammarBuilder {
 public:
  explicit GrammarBuilder(BuildLimits limits = {});

  RuleId add_rule(std::string name);
  void add_alt(RuleId rule, Sequence seq);
  void add_key_complement(KeyComplement k) { g_.key_complements.push_back(std::move(k)); }
  const Rule& rule(RuleId id) const { return g_.rules[id]; }

  Symbol bytes(const ByteSet& set);
  Symbol byte(uint8_t b);
  Symbol ref(RuleId rule) const { return {Symbol::Kind::kRule, rule}; }
  Sequence literal(std::string_view text);

  // A rule matching exactly `seq` (or seq[0] itself when it is a single symbol).
  Symbol group(Sequence seq, std::string_view name = "group");
  Symbol choice(std::vector<Sequence> alts, std::string_view name = "choice");
  Symbol never(std::string_view name = "never");  // matches nothing
  Symbol empty();                                 // matches only the empty string
  Symbol optional(Sequence body);
  Symbol star(Sequence body);
  Symbol plus(Sequence body);
  // body repeated min..max times; max < 0 means unbounded.
  Symbol repeat(Sequence body, int64_t min, int64_t max);
  // 0..n copies of item.
  Symbol up_to(Symbol item, int64_t n);

  // Hash-consing for front ends that emit the same finished sub-grammar many times (character
  // classes): the symbol stored under `key`, or null. A stored symbol is shared, so its rules must be
  // complete when stored and never extended afterwards.
  const Symbol* memo(const std::string& key) const;
  Symbol memo(std::string key, Symbol sym);

  // A copy of the grammar built so far, rooted at `root` (rules still being built match less).
  Grammar snapshot(RuleId root) const;

  // Time/size budget; also checked by front ends inside their own loops.
  Status check_budget();
  Result<Grammar> finish(RuleId root);

 private:
  Grammar g_;
  BuildLimits limits_;
  int64_t deadline_us_ = 0;
  size_t n_symbols_ = 0;
  Status status_;
  std::unordered_map<ByteSet, uint32_t> byte_set_ids_;
  std::unordered_map<std::string, Symbol> memo_;
  int32_t empty_rule_ = -1;
};

}  // namespace keel::grammar
