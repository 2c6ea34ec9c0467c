// GrammarStore: the serving side of src/grammar/ for one model. It holds the vocabulary trie (built
// once per model) and an LRU of TokenMaskCaches keyed by the spec's content hash, so requests with
// the same schema share one compiled grammar and every token-mask classification made for it so far.
// The vocabulary is fixed per store, so the key needs nothing of it. Kernel-position classifications
// are also shared across the store's grammars (shared_classes.h): a new schema reuses the string-body,
// number and format classifications earlier schemas made. Compilation runs on the calling
// thread (the HTTP handler), bounded by the spec's BuildLimits; concurrent calls are safe.
// Bounded by entry count and by bytes (TokenMaskCache::memory_bytes, which grows as positions are
// classified): least recently used entries go first, except the one just returned. An evicted
// cache lives on while matchers of running requests hold it.
// On a miss the new grammar's counter positions (counter_prefill.h) are classified before it is
// returned, within counter_budget of wall time, so their cost is part of compiling, not of a mask.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/status.h"
#include "grammar/compile.h"
#include "grammar/mask_cache.h"
#include "grammar/shared_classes.h"
#include "grammar/vocab_trie.h"

namespace keel::grammar {

class GrammarStore {
 public:
  // Wall time a new grammar may spend classifying its counter positions ahead of use.
  static constexpr std::chrono::microseconds kCounterBudget{20'000};

  // max_bytes 0: no byte bound. counter_budget 0: no counter positions classified ahead.
  GrammarStore(std::shared_ptr<const VocabTrie> trie, size_t capacity, size_t max_bytes = 0,
               std::chrono::microseconds counter_budget = kCounterBudget);

  // The mask cache for spec over this store's vocabulary; compiles on a miss (outside the lock).
  // Compile errors are returned and not cached.
  Result<std::shared_ptr<TokenMaskCache>> get_or_compile(const GrammarSpec& spec);
  // The cached mask cache for spec (a hit), or null (not counted as a miss: get_or_compile does).
  std::shared_ptr<TokenMaskCache> find(const GrammarSpec& spec);

  const VocabTrie& trie() const { return *trie_; }
  size_t size() const;
  // Bytes held by the cached entries now.
  size_t memory_bytes() const;
  const SharedClassifications& shared_classifications() const { return *shared_; }
  uint64_t n_hits() const;
  uint64_t n_misses() const;

 private:
  using Lru = std::list<uint64_t>;  // most recent first
  struct Entry {
    std::shared_ptr<TokenMaskCache> masks;
    Lru::iterator lru_pos;
  };

  std::shared_ptr<const VocabTrie> trie_;
  std::shared_ptr<SharedClassifications> shared_;  // across this store's grammars
  size_t capacity_;
  size_t max_bytes_;
  std::chrono::microseconds counter_budget_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<uint64_t, Entry> map_;
  uint64_t n_hits_ = 0;
  uint64_t n_misses_ = 0;

  // The entry for key, made most recent and counted as a hit; null when absent. Under mu_.
  std::shared_ptr<TokenMaskCache> hit_locked(uint64_t key);
  // Drops least recently used entries (never `keep`) while over the count or byte bound. Under mu_.
  void evict_locked(uint64_t keep);
};

}  // namespace keel::grammar
