// StateShapes: text runs (StateWalker::text_run) shared between states that take text alike.
// A state's *shape* is its key (items as position and origin state) with the origin of every item
// that text cannot finish replaced by kAnyOrigin (any column) — an item whose rest holds a byte set without
// a text byte (plain bytes and 80..FF), such as a string's closing quote — and every other origin
// by its own shape, when all the replaced origins are one state (the column before the string).
// Two states of one shape differ only in that column, whose items no text step reads (only an item
// finishing reads its origin's), so from each the same text steps lead to states of one shape again,
// alive or dead alike, and a text run found for one holds for the other: the same counted string
// under another key of an object meets its whole text chain (count_walk.cc) proved already. (Plain
// runs are not shared: searching one costs a parser step or two, about what a look-up here costs.)
// Owned by a StateTable (attach_shapes), per grammar; thread-safe (a mutex: looked up only where a
// run is not known for the state yet). Bounded by the table: at most one shape per state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace keel::grammar {

class CompiledGrammar;
class StateTable;

class StateShapes {
 public:
  explicit StateShapes(const CompiledGrammar& grammar);

  // The text run known for a state of s's shape, plus one as StateTable stores it; 0 when none is.
  uint8_t known(const StateTable& table, uint32_t s);
  // Records s's text run (plus one) for its shape; the longest found is kept (each is a lower bound).
  void note(const StateTable& table, uint32_t s, uint8_t value);
  // Bytes the shapes of states met so far hold (0 before any; the per-position marks are counted
  // with the grammar by TokenMaskCache).
  size_t memory_bytes() const;
  // Look-ups a run of another state of the same shape answered (tests check they happen).
  uint64_t hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }

 private:
  static constexpr uint32_t kUnset = UINT32_MAX, kNoShape = UINT32_MAX - 1, kNoAnchor = UINT32_MAX;
  // The origin written into a shape's key for an item text cannot finish (its column is never read).
  static constexpr uint32_t kAnyOrigin = UINT32_MAX;
  // s's shape id (kNoShape: two replaced origins differ, or nested too deep); mu_ held.
  uint32_t shape(const StateTable& table, uint32_t s, uint32_t depth);

  std::vector<uint8_t> blocked_;  // [position]: text cannot finish the item with the dot there
  mutable std::mutex mu_;
  std::vector<uint32_t> shape_of_, anchor_of_;     // [state]: its shape, the origin replaced (kNoAnchor)
  std::unordered_map<std::string, uint32_t> ids_;  // shape key (as StateTable keys) -> shape id
  std::vector<uint8_t> runs_;                      // [shape]: text run plus one, 0 unknown
  size_t key_bytes_ = 0;
  uint64_t hits_ = 0;
};

}  // namespace keel::grammar
