#include "router/prefix_key.h"

#include <xxhash.h>

#include "cache/prefix_hash.h"

namespace keel::router {

uint64_t extend_token_hash(uint64_t prefix_hash, int32_t token) {
  return cache::extend_prefix_hash(prefix_hash, token);
}

void append_token_hashes(uint64_t prefix_hash, std::span<const int32_t> tokens, std::vector<uint64_t>& out) {
  out.reserve(out.size() + tokens.size());
  for (int32_t t : tokens) {
    prefix_hash = extend_token_hash(prefix_hash, t);
    out.push_back(prefix_hash);
  }
}

std::vector<uint64_t> token_prefix_hashes(std::span<const int32_t> tokens) {
  std::vector<uint64_t> out;
  append_token_hashes(0, tokens, out);
  return out;
}

std::vector<uint64_t> char_prefix_hashes(std::string_view text, int32_t block_bytes) {
  std::vector<uint64_t> out;
  if (block_bytes < 1) return out;
  uint64_t h = 0;
  for (size_t at = 0; at < text.size(); at += static_cast<size_t>(block_bytes)) {
    size_t n = std::min(text.size() - at, static_cast<size_t>(block_bytes));
    h = XXH3_64bits_withSeed(text.data() + at, n, h);
    out.push_back(h);
  }
  return out;
}

}  // namespace keel::router
