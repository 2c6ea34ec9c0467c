// Token-mask cache for one (grammar, vocabulary) pair. For every kernel position of the grammar (an
// item that started in an earlier column; all other items of a column are its predictions) it
// classifies each token once, with a parser seeded at that position and a walk over the vocabulary
// trie: accepted (the token fits inside the position's rule, whatever the context), rejected (it
// fails inside the rule) or uncertain (the rule can end within the token, so the outcome depends on
// the enclosing rules; the matcher checks those against its full parse). Positions are classified
// lazily on first use. Thread-safe: matchers on any thread share one cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

struct PositionMask {
  std::vector<uint32_t> accepted;   // bitmask [ceil(n_vocab / 32)]
  std::vector<int32_t> uncertain;   // token ids, sorted
};

class TokenMaskCache {
 public:
  TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const VocabTrie> trie);

  const CompiledGrammar& grammar() const { return *grammar_; }
  const VocabTrie& trie() const { return *trie_; }
  size_t n_mask_words() const { return (static_cast<size_t>(trie_->vocab().n_vocab()) + 31) / 32; }
  // The classification of kernel position `pos`; the reference stays valid for the cache's life.
  const PositionMask& get(uint32_t pos);
  // Bytes this cache holds, estimated from its containers: the compiled grammar's tables (fixed)
  // plus every classification made so far (grows as positions are first visited). Thread-safe.
  size_t memory_bytes() const { return grammar_bytes_ + mask_bytes_.load(std::memory_order_relaxed); }

 private:
  PositionMask classify(uint32_t pos) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const VocabTrie> trie_;
  std::mutex mu_;
  std::unordered_map<uint32_t, std::unique_ptr<PositionMask>> masks_;
  size_t grammar_bytes_ = 0;
  std::atomic<size_t> mask_bytes_{0};
};

}  // namespace keel::grammar
