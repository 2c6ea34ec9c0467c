// StateTable: interned Earley column states and their memoised byte transitions, shared by every
// parser of one (grammar, vocabulary) mask cache. A column's state is the set of its non-predicted
// items (position, state of the origin column), hash-consed, so two columns with the same state accept
// exactly the same byte strings from there on (the closure of a column is a function of those items
// and of its origin columns). Inside a JSON string body, a number or a key literal the parser keeps
// returning to a handful of states, so walking the vocabulary trie becomes a table walk (next()) with
// the Earley parser consulted only on a miss. Bounded: past max_states new columns get kNone and
// every step from them goes through the parser (correct, but a walk of the vocabulary from such a
// column costs a parser step per trie node: ~60 ms at 128k tokens). The default bound is the most the
// 16-bit rows can name (65,533 states, ~34 MiB); rows are allocated 256 at a time as states appear and
// counted by memory_bytes(), which the GrammarStore's byte bound includes (docs/grammar.md, "The
// state bound").
// Thread-safe: intern() takes a mutex; next()/flags() are lock-free reads (acquire/release).
#pragma once

#include <atomic>
#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keel::grammar {

class CompiledGrammar;
class StateShapes;

class StateTable {
 public:
  using State = uint32_t;
  static constexpr State kNone = UINT32_MAX;        // not interned (table full): no memo
  static constexpr State kDead = UINT32_MAX - 1;    // the byte is rejected
  static constexpr State kUnknown = UINT32_MAX - 2; // transition not computed yet
  static constexpr uint8_t kCanEnd = 1, kSeedEnd = 2;

  static constexpr uint32_t kMaxStates = 0xFFFD;  // the row encoding's limit
  explicit StateTable(uint32_t max_states = kMaxStates);
  ~StateTable();
  StateTable(const StateTable&) = delete;
  StateTable& operator=(const StateTable&) = delete;

  // key: the column's sorted (pos << 32 | origin state) pairs, as bytes; a root column's key is its tag.
  State intern(std::string_view key, uint8_t flags);
  // The key s was interned with (stable while the table lives).
  std::string_view key(State s) const;
  // Runs shared between states of one shape (state_shapes.h): attached once, before the table is
  // shared, by the grammar's TokenMaskCache; nullptr for a bare table (runs found per state only).
  void attach_shapes(const CompiledGrammar& grammar);
  StateShapes* shapes() const { return shapes_.get(); }
  // Memoised transition (kUnknown when not computed yet); s must be a real state.
  State next(State s, uint8_t b) const {
    const uint16_t v = row(s).next[b].load(std::memory_order_acquire);
    return v < kRowUnknown ? v : v == kRowDead ? kDead : kUnknown;
  }
  void set_next(State s, uint8_t b, State n);
  uint8_t flags(State s) const { return flag_chunks_[s / kChunk][s % kChunk]; }
  // Plain run of s (StateWalker::plain_run) plus one; 0 when not known yet.
  uint8_t plain_run(State s) const { return row(s).plain_run.load(std::memory_order_relaxed); }
  void set_plain_run(State s, uint8_t v) { row(s).plain_run.store(v, std::memory_order_relaxed); }
  // Text run of s (StateWalker::text_run) plus one; 0 when not known yet.
  uint8_t text_run(State s) const { return row(s).text_run.load(std::memory_order_relaxed); }
  void set_text_run(State s, uint8_t v) { row(s).text_run.store(v, std::memory_order_relaxed); }
  // Whether every text string from s stays alive (StateWalker::text_live): 0 not known yet, 1 no,
  // 2 yes, 3 not known (a search cut off by its bound once; asked again later).
  uint8_t text_live(State s) const { return row(s).text_live.load(std::memory_order_relaxed); }
  void set_text_live(State s, uint8_t v) { row(s).text_live.store(v, std::memory_order_relaxed); }
  // Marks every byte outside `live` dead from s (once per state: the column's scannable bytes are known
  // as soon as the parser stands there, so later walks need no parser step to reject a byte).
  void fill_dead(State s, const std::bitset<256>& live);
  size_t size() const;
  // Bytes held: the rows allocated so far and the interned keys.
  size_t memory_bytes() const;

 private:
  static constexpr uint32_t kChunk = 256, kMaxChunks = 256;
  // Row encoding: state ids below kRowUnknown (so max_states <= 0xFFFD), then unknown and dead.
  static constexpr uint16_t kRowUnknown = kMaxStates, kRowDead = 0xFFFE;
  struct Row {
    std::atomic<uint16_t> next[256];
    std::atomic<uint8_t> plain_run{0};
    std::atomic<uint8_t> text_run{0};
    std::atomic<uint8_t> dead_filled{0};
    std::atomic<uint8_t> text_live{0};
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const;
  };
  const Row& row(State s) const { return chunks_[s / kChunk][s % kChunk]; }
  Row& row(State s) { return chunks_[s / kChunk][s % kChunk]; }

  uint32_t max_states_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, State, KeyHash, std::equal_to<>> ids_;
  Row* chunks_[kMaxChunks] = {};
  // Flags apart from the rows: a walk reads the flags of every state it reaches, and 256 states'
  // flags share four cache lines where the rows' would take one line each.
  uint8_t* flag_chunks_[kMaxChunks] = {};
  std::vector<std::unique_ptr<Row[]>> owned_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_flags_;
  std::vector<const std::string*> keys_;  // [state]: its key in ids_
  size_t key_bytes_ = 0;  // interned keys and their map nodes
  std::unique_ptr<StateShapes> shapes_;
};

}  // namespace keel::grammar
