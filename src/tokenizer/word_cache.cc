#include "tokenizer/word_cache.h"

#include <functional>

namespace keel::tokenizer {

WordCache::Shard& WordCache::shard_for(std::string_view word) const {
  return shards_[std::hash<std::string_view>{}(word) % shards_.size()];
}

bool WordCache::lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& s = shard_for(word);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.words.find(std::string(word));
  if (it == s.words.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, std::span<const int32_t> ids) const {
  if (word.size() > kMaxWordBytes) return;
  Shard& s = shard_for(word);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.words.size() >= kEntriesPerShard) s.words.clear();
  s.words.try_emplace(std::string(word), ids.begin(), ids.end());
}

}  // namespace keel::tokenizer
