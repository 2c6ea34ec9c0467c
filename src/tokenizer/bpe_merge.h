// The BPE merge step shared by byte-level and SentencePiece BPE: a table of ranked merges
// (left id, right id) -> merged id, applied to a word lowest rank first, leftmost on ties, as HF
// tokenizers' Word::merge_all does. O(n log n) per word (linked list + priority queue).
// Filled once at load; const afterwards, so any thread may merge concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace keel::tokenizer {

class BpeMerges {
 public:
  // Adds a merge with the next rank (call in priority order). A pair seen before keeps its first rank.
  void add(int32_t left, int32_t right, int32_t merged);
  size_t size() const { return table_.size(); }

  // Merges `symbols` (token ids of the word's characters, in order) and appends the result to `out`.
  void merge(std::span<const int32_t> symbols, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  const Merge* find(int32_t left, int32_t right) const;

  std::unordered_map<uint64_t, Merge> table_;
};

}  // namespace keel::tokenizer
