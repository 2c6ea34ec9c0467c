#include "grammar/grammar_store.h"

#include <algorithm>

#include "base/check.h"
#include "grammar/counter_prefill.h"

namespace keel::grammar {

GrammarStore::GrammarStore(std::shared_ptr<const VocabTrie> trie, size_t capacity, size_t max_bytes,
                           std::chrono::microseconds counter_budget)
    : trie_(std::move(trie)), shared_(std::make_shared<SharedClassifications>()), capacity_(capacity),
      max_bytes_(max_bytes), counter_budget_(counter_budget) {
  KEEL_CHECK(trie_ != nullptr && capacity_ > 0, "GrammarStore needs a vocabulary and a capacity > 0");
}

std::shared_ptr<TokenMaskCache> GrammarStore::hit_locked(uint64_t key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
  ++n_hits_;
  auto masks = it->second.masks;
  evict_locked(key);  // entries grow as they are used, so the byte bound is checked on hits too
  return masks;
}

std::shared_ptr<TokenMaskCache> GrammarStore::find(const GrammarSpec& spec) {
  const uint64_t key = spec.content_hash();
  std::lock_guard<std::mutex> lock(mu_);
  return hit_locked(key);
}

Result<std::shared_ptr<TokenMaskCache>> GrammarStore::get_or_compile(const GrammarSpec& spec) {
  const uint64_t key = spec.content_hash();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto masks = hit_locked(key)) return masks;
    ++n_misses_;
  }
  KEEL_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> g, compile_grammar(spec));
  auto masks = std::make_shared<TokenMaskCache>(std::move(g), trie_, shared_);
  if (counter_budget_.count() > 0) classify_counters_ahead(*masks, counter_budget_);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(key); it != map_.end()) return it->second.masks;  // compiled meanwhile
  lru_.push_front(key);
  map_.emplace(key, Entry{.masks = masks, .lru_pos = lru_.begin()});
  evict_locked(key);
  return masks;
}

void GrammarStore::evict_locked(uint64_t keep) {
  size_t bytes = 0;
  if (max_bytes_ > 0)
    for (const auto& [k, e] : map_) bytes += e.masks->memory_bytes();
  while (!lru_.empty() && (map_.size() > capacity_ || (max_bytes_ > 0 && bytes > max_bytes_))) {
    const uint64_t victim = lru_.back();
    if (victim == keep) break;  // the newest is the only one left over the bound
    auto it = map_.find(victim);
    // min: the entry may have grown since it was summed (a matcher walking on another thread).
    if (max_bytes_ > 0) bytes -= std::min(bytes, it->second.masks->memory_bytes());
    map_.erase(it);
    lru_.pop_back();
  }
}

size_t GrammarStore::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const auto& [k, e] : map_) bytes += e.masks->memory_bytes();
  return bytes;
}

size_t GrammarStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

uint64_t GrammarStore::n_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_hits_;
}

uint64_t GrammarStore::n_misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_misses_;
}

}  // namespace keel::grammar
