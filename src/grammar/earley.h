// Byte-level Earley recognizer over a CompiledGrammar. One column per byte consumed; rollback pops
// columns. Nullable rules follow Aycock & Horspool (predicting a nullable rule also steps over it),
// so completions never look into the column being built; finished columns keep an index of the items
// waiting on each rule. A seeded parser starts from one grammar position (a kernel item, origin
// abstracted away) instead of the start rule; the token-mask cache (mask_cache.h) uses it to
// classify tokens per position.
// With a StateTable every column is also interned as a state (state()), which is what lets token
// walks memoise byte transitions (state_table.h).
// Not thread-safe: one parser per matcher / per mask computation.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/state_table.h"

namespace keel::grammar {

struct EarleyItem {
  uint32_t pos;     // flat position of the dot (CompiledGrammar::symbol)
  uint32_t origin;  // column where the item's rule started
};

class EarleyParser {
 public:
  explicit EarleyParser(const CompiledGrammar& g, StateTable* states = nullptr);
  EarleyParser(const CompiledGrammar& g, uint32_t seed_pos, StateTable* states = nullptr);

  // Starts over as a parser seeded at seed_pos (as the seeded constructor does), keeping the
  // buffers: a parser reused across classifications allocates no grammar-sized arrays again.
  void reseed(uint32_t seed_pos);

  // Consumes one byte; false (state unchanged) if no item can scan it.
  bool push_byte(uint8_t b);
  // All-or-nothing: on failure the bytes already pushed are popped again.
  bool push_bytes(std::string_view bytes);
  void pop_bytes(size_t n);
  size_t n_bytes() const { return flags_.size() - 1 - base_; }

  // The start rule is complete over everything consumed (the grammar allows ending here).
  bool can_end() const { return flags_.back() & kCanEnd; }
  // Seeded parser: the seed's rule completed at the last byte (the parent would take over here).
  bool seed_completed() const { return flags_.back() & kSeedEnd; }
  // StateTable flags of the last column (kCanEnd, kSeedEnd).
  uint8_t flags() const { return flags_.back(); }
  // The last column's interned state; StateTable::kNone without a table or when the table is full.
  StateTable::State state() const { return col_state_.back(); }
  // Bytes some item of the last column can scan.
  ByteSet next_bytes() const;
  // The bytes that every item of the last column treats as it treats b (each item's byte set holds
  // all of them or none), b included: pushing any of them builds the same next column.
  ByteSet equivalent_bytes(uint8_t b) const;
  // Distinct positions of the last column's kernel items (started in an earlier column, dot before
  // a symbol): every other item of the column descends from one of them by prediction. In the first
  // column, the start rule's positions.
  void kernel_positions(std::vector<uint32_t>& out) const;

 private:
  static constexpr uint8_t kCanEnd = StateTable::kCanEnd, kSeedEnd = StateTable::kSeedEnd;

  class ItemSet {
   public:
    void clear();
    bool insert(uint64_t key);

   private:
    void grow();
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> gens_;
    uint32_t gen_ = 1;
    size_t count_ = 0;
  };

  void seed(uint32_t seed_pos);
  void begin_column();
  void add(uint32_t pos, uint32_t origin);
  void close_column(size_t first_item);
  void complete(uint32_t rule, uint32_t origin);
  StateTable::State intern_column();

  const CompiledGrammar& g_;
  std::vector<EarleyItem> items_;
  std::vector<uint32_t> col_begin_;  // [n_columns + 1] into items_
  std::vector<uint8_t> flags_;       // [n_columns]
  // Per finished column: (rule, item index) of items whose dot is before that rule, sorted.
  std::vector<std::pair<uint32_t, uint32_t>> waiting_;
  std::vector<uint32_t> waiting_begin_;  // [n_columns + 1] into waiting_
  std::vector<uint32_t> predicted_;      // [n_rules + 1]: stamp of the column that predicted the rule
  std::vector<uint32_t> pos_seen_;       // [n_positions]: stamp of the column holding (pos, that column)
  uint32_t stamp_ = 0;                   // bumped per column built
  uint32_t cur_col_ = 0;                 // column being built
  uint32_t base_ = 0;                    // columns before the first byte (1 for a seeded parser)
  ItemSet seen_;
  StateTable* states_;
  std::vector<StateTable::State> col_state_;  // [n_columns]
  std::vector<uint64_t> key_;                 // scratch for intern_column
};

}  // namespace keel::grammar
