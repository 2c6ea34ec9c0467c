#include "grammar/grammar_store.h"

#include "base/check.h"

namespace keel::grammar {

GrammarStore::GrammarStore(std::shared_ptr<const VocabTrie> trie, size_t capacity)
    : trie_(std::move(trie)), shared_(std::make_shared<SharedClassifications>()), capacity_(capacity) {
  KEEL_CHECK(trie_ != nullptr && capacity_ > 0, "GrammarStore needs a vocabulary and a capacity > 0");
}

Result<std::shared_ptr<TokenMaskCache>> GrammarStore::get_or_compile(const GrammarSpec& spec) {
  const uint64_t key = spec.content_hash();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = map_.find(key); it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      ++n_hits_;
      return it->second.masks;
    }
    ++n_misses_;
  }
  KEEL_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> g, compile_grammar(spec));
  auto masks = std::make_shared<TokenMaskCache>(std::move(g), trie_, shared_);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(key); it != map_.end()) return it->second.masks;  // compiled meanwhile
  lru_.push_front(key);
  map_.emplace(key, Entry{.masks = masks, .lru_pos = lru_.begin()});
  while (map_.size() > capacity_) {
    map_.erase(lru_.back());
    lru_.pop_back();
  }
  return masks;
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
