// Token-mask cache for one (grammar, vocabulary) pair, shared by every matcher of that grammar.
//  - Per kernel position of the grammar (an item that started in an earlier column; all other items
//    of a column are its predictions) each token is classified once, with a parser seeded at that
//    position walking the vocabulary trie: accepted (the token fits inside the position's rule,
//    whatever the context), rejected (it fails inside the rule) or uncertain (the rule can end within
//    the token, so the outcome depends on the enclosing rules; the matcher checks those against its
//    full parse; stored as trie subtrees, so "the rule may end before the token starts" costs one
//    pruned trie walk, not a check per token). Accepted sets are stored as a bitset or a sorted id list, whichever is smaller.
//  - A StateTable (state_table.h) of interned parser columns and their byte transitions, so trie
//    walks (classification and the matcher's uncertain-token checks) are table walks.
//  - Finished masks per full-parse state: a matcher standing in a state seen before (the same place
//    in a string body, the same key position of an object) copies the mask. Bounded (mask_budget).
//  - Masks by first byte (GrammarMatcher::fill_by_first_byte): per state t that most first bytes of
//    a column led to, that column's mask and the state each first byte led to; and per (state, trie
//    node of depth 1) the tokens below the node a parse takes from that state, as preorder ranges.
//    Each new column of a key being typed leads to one "other key" state under every character no
//    name continues with, so its mask is a stored one with a few subtrees swapped. Bounded
//    (mask_budget and kSubtreeBudget, oldest dropped).
// Positions are classified lazily on first use (by a seeded parser from a few spare ones the cache
// keeps, EarleyParser::reseed), or found in the vocabulary's SharedClassifications. Thread-safe:
// matchers on any thread share one cache.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "grammar/fifo_map.h"
#include "grammar/shared_classes.h"
#include "grammar/state_table.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

// Accepted trie-token ranges of one classification, gathered in the trie's preorder (a walk accepts
// whole subtrees, whose tokens are contiguous, so neighbouring ranges merge), then stored as a
// PositionMask's accepted set: the trie's tokens with the gaps cleared when most are taken, a bitset
// when at least a word's worth, else sorted ids.
class AcceptedRanges {
 public:
  void add(uint32_t begin, uint32_t end) {
    if (begin == end) return;
    n_ += end - begin;
    if (!ranges_.empty() && ranges_.back().second == begin) {
      ranges_.back().second = end;
    } else {
      ranges_.emplace_back(begin, end);
    }
  }
  void store(const VocabTrie& trie, size_t n_words, PositionMask& out) const;

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;  // ascending [begin, end) trie token indices
  size_t n_ = 0;
};

class TokenMaskCache {
 public:
  // mask_budget_bytes bounds the finished masks kept per state (oldest dropped first). shared: the
  // vocabulary's cross-grammar classifications (shared_classes.h), or null (a private store: the
  // grammar's own positions with one key still share). max_states bounds the state table.
  TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const VocabTrie> trie,
                 std::shared_ptr<SharedClassifications> shared = nullptr, size_t mask_budget_bytes = 4 << 20,
                 uint32_t max_states = StateTable::kMaxStates);

  const CompiledGrammar& grammar() const { return *grammar_; }
  const VocabTrie& trie() const { return *trie_; }
  StateTable& states() { return states_; }
  size_t n_mask_words() const { return (static_cast<size_t>(trie_->vocab().n_vocab()) + 31) / 32; }
  // The classification of kernel position `pos`; the reference stays valid for the cache's life.
  const PositionMask& get(uint32_t pos);
  // The store get() looks classifications up in (the vocabulary's, or this cache's own).
  SharedClassifications& shared_classifications() { return *shared_; }
  // Whether get(pos) has been called before (its classification is held here).
  bool classified(uint32_t pos);
  // Holds `mask` as pos's classification unless it has one: made ahead by a run walk for a position
  // whose sub-grammar is too large for a shared key (repeat_runs.h).
  void put(uint32_t pos, std::shared_ptr<const PositionMask> mask);
  // Bytes this cache holds, estimated from its containers: the compiled grammar's tables (fixed)
  // plus every classification made so far (grows as positions are first visited), the finished
  // and first-byte masks and subtree ranges kept and the state table (grows with the states walks
  // meet). Thread-safe.
  size_t memory_bytes() const {
    return grammar_bytes_ + mask_bytes_.load(std::memory_order_relaxed) + states_.memory_bytes();
  }

  // The finished mask of full-parse state s, if kept: written into out's first n_mask_words() words
  // (all of them: no clear needed before).
  bool load_mask(StateTable::State s, std::span<uint32_t> out);
  void store_mask(StateTable::State s, std::span<const uint32_t> mask);

  // Trie-token preorder ranges [b, e) accepted below first-level trie node `node` (its own token
  // included) from state s, the state reached at that node; null if not kept.
  using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
  std::shared_ptr<const Ranges> load_subtree(StateTable::State s, uint32_t node);
  void store_subtree(StateTable::State s, uint32_t node, std::shared_ptr<const Ranges> ranges);
  static constexpr size_t kSubtreeBudget = 16 << 20;
  struct FirstByteMask {
    std::array<StateTable::State, 256> at;  // the state each first byte led to (kDead: none)
    std::vector<uint32_t> bits;             // n_mask_words(): the trie tokens taken (no EOS)
  };
  std::shared_ptr<const FirstByteMask> load_first_byte(StateTable::State t);
  void store_first_byte(StateTable::State t, std::shared_ptr<const FirstByteMask> mask);
  // Notes column `from`, whose first bytes lead mostly to t; returns how many other columns did
  // before (a column noted again right after itself does not count).
  uint32_t note_first_byte_target(StateTable::State t, StateTable::State from);
  // Masks filled by first byte so far (GrammarMatcher::fill_by_first_byte), for tests and stats.
  uint64_t first_byte_masks() const { return first_byte_masks_.load(std::memory_order_relaxed); }
  void count_first_byte_mask() { first_byte_masks_.fetch_add(1, std::memory_order_relaxed); }

 private:
  PositionMask classify(uint32_t pos);
  // A parser seeded at pos: a spare one reseeded (set-up without allocating the grammar-sized
  // arrays), or a new one; given back after the classification.
  std::unique_ptr<EarleyParser> take_parser(uint32_t pos);
  void give_back(std::unique_ptr<EarleyParser> parser);
  // A FifoMap insert's bytes into mask_bytes_.
  void count(FifoChange c) {
    mask_bytes_.fetch_add(c.added, std::memory_order_relaxed);
    mask_bytes_.fetch_sub(c.dropped, std::memory_order_relaxed);
  }

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const VocabTrie> trie_;
  StateTable states_;
  std::mutex mu_;
  std::shared_ptr<SharedClassifications> shared_;
  std::unordered_map<uint32_t, std::shared_ptr<const PositionMask>> masks_;
  size_t max_finished_;
  // Oldest dropped first: finished masks up to max_finished_ of them, first-byte masks up to 4x that,
  // subtree ranges up to kSubtreeBudget bytes.
  FifoMap<StateTable::State, std::vector<uint32_t>> finished_;
  FifoMap<uint64_t, std::shared_ptr<const Ranges>> subtrees_;  // state << 32 | node
  FifoMap<StateTable::State, std::shared_ptr<const FirstByteMask>> first_byte_;
  std::unordered_map<StateTable::State, std::pair<StateTable::State, uint32_t>> first_byte_targets_;  // last column, count
  // Key starts classified from any key's classification (key_start.h): position -> (any key's
  // position, the closers to take out).
  std::unordered_map<uint32_t, std::pair<uint32_t, const std::vector<std::string>*>> key_starts_;
  std::vector<std::unique_ptr<EarleyParser>> spare_parsers_;  // at most kMaxSpareParsers
  static constexpr size_t kMaxSpareParsers = 4;
  size_t grammar_bytes_ = 0;
  std::atomic<size_t> mask_bytes_{0};  // classifications, finished and first-byte masks, subtree ranges held
  std::atomic<uint64_t> first_byte_masks_{0};
};

}  // namespace keel::grammar
