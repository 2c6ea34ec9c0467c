// SharedClassifications: kernel-position classifications (mask_cache.h) shared across grammars of one
// vocabulary. A position's classification is a function of the sub-grammar reachable from its rule
// (and where in the rule the position is), not of the grammar around it; JSON Schemas repeat the same
// pieces (string bodies, numbers, date/uuid formats, common keys), so a schema seen for the first time
// mostly finds its expensive classifications (the full-trie walks of string bodies) already made.
// Keys are the canonical text of that sub-grammar (rules renumbered in reachability order, byte sets
// by content), compared exactly; positions whose sub-grammar is larger than max_key_bytes are not
// shared. Bounded by entry bytes (oldest dropped first). Thread-safe; owned per vocabulary
// (GrammarStore).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace keel::grammar {

struct PositionMask {
  std::vector<uint32_t> accepted_bits;  // bitmask [ceil(n_vocab / 32)] when dense, else empty
  std::vector<int32_t> accepted_ids;    // token ids, sorted, when sparse
  std::vector<uint32_t> uncertain;      // trie nodes whose subtrees' tokens are uncertain, ascending
  size_t bytes() const;
};

// The canonical text of position pos's sub-grammar, or nothing when it exceeds max_bytes.
std::optional<std::string> position_key(const CompiledGrammar& g, uint32_t pos, size_t max_bytes);

class SharedClassifications {
 public:
  explicit SharedClassifications(size_t budget_bytes = 64 << 20, size_t max_key_bytes = 4 << 10)
      : budget_(budget_bytes), max_key_bytes_(max_key_bytes) {}

  size_t max_key_bytes() const { return max_key_bytes_; }
  std::shared_ptr<const PositionMask> find(const std::string& key);
  void insert(std::string key, std::shared_ptr<const PositionMask> mask);
  uint64_t n_hits() const;

 private:
  size_t budget_, max_key_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const PositionMask>> map_;
  std::deque<const std::string*> order_;  // map_'s keys (nodes do not move), oldest first
  size_t bytes_ = 0;
  uint64_t n_hits_ = 0;
};

}  // namespace keel::grammar
