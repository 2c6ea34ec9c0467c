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
// Positions are classified lazily on first use, or found in the vocabulary's SharedClassifications. Thread-safe: matchers on any thread share one cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/shared_classes.h"
#include "grammar/state_table.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

class TokenMaskCache {
 public:
  // mask_budget_bytes bounds the finished masks kept per state (oldest dropped first). shared: the
  // vocabulary's cross-grammar classifications (shared_classes.h), or null. max_states bounds the
  // state table (state_table.h).
  TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const VocabTrie> trie,
                 std::shared_ptr<SharedClassifications> shared = nullptr, size_t mask_budget_bytes = 4 << 20,
                 uint32_t max_states = StateTable::kMaxStates);

  const CompiledGrammar& grammar() const { return *grammar_; }
  const VocabTrie& trie() const { return *trie_; }
  StateTable& states() { return states_; }
  size_t n_mask_words() const { return (static_cast<size_t>(trie_->vocab().n_vocab()) + 31) / 32; }
  // The classification of kernel position `pos`; the reference stays valid for the cache's life.
  const PositionMask& get(uint32_t pos);
  // Bytes this cache holds, estimated from its containers: the compiled grammar's tables (fixed)
  // plus every classification made so far (grows as positions are first visited), the finished
  // masks kept and the state table (grows with the states walks meet). Thread-safe.
  size_t memory_bytes() const {
    return grammar_bytes_ + mask_bytes_.load(std::memory_order_relaxed) + states_.memory_bytes();
  }

  // The finished mask of full-parse state s, if kept: copied into out (n_mask_words()).
  bool load_mask(StateTable::State s, std::span<uint32_t> out);
  void store_mask(StateTable::State s, std::span<const uint32_t> mask);

 private:
  PositionMask classify(uint32_t pos);

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const VocabTrie> trie_;
  StateTable states_;
  std::mutex mu_;
  std::shared_ptr<SharedClassifications> shared_;
  std::unordered_map<uint32_t, std::shared_ptr<const PositionMask>> masks_;
  size_t max_finished_;
  std::unordered_map<StateTable::State, std::vector<uint32_t>> finished_;
  std::deque<StateTable::State> finished_order_;  // oldest first
  size_t grammar_bytes_ = 0;
  std::atomic<size_t> mask_bytes_{0};  // classifications and finished masks held
};

}  // namespace keel::grammar
