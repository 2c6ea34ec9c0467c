// Bounded cache of pre-token -> token ids for the BPE tokenizers: most words of real text repeat,
// and a hit skips the merge loop. Sharded, mutex-guarded: any thread may look up and insert. Once a
// shard is full it is cleared (cheap, and keeps memory bounded under adversarial input).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace keel::tokenizer {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;       // longer words are not cached
  static constexpr size_t kEntriesPerShard = 4096;  // 16 shards: at most 65,536 words

  // Appends the cached ids of `word` to `out` and returns true, or returns false on a miss.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, std::span<const int32_t> ids) const;

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>> words;
  };
  Shard& shard_for(std::string_view word) const;

  mutable std::array<Shard, 16> shards_;
};

}  // namespace keel::tokenizer
