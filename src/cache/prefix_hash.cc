#include "cache/prefix_hash.h"

#include <bit>
#include <cstring>

#include <xxhash.h>

namespace keel::cache {

static_assert(std::endian::native == std::endian::little, "prefix hashes are defined over little-endian token bytes");

uint64_t extend_prefix_hash(uint64_t prefix_hash, int32_t token) {
  unsigned char bytes[sizeof(token)];
  std::memcpy(bytes, &token, sizeof(token));
  return XXH3_64bits_withSeed(bytes, sizeof(bytes), prefix_hash);
}

uint64_t extend_prefix_hash(uint64_t prefix_hash, std::span<const int32_t> tokens) {
  for (int32_t t : tokens) prefix_hash = extend_prefix_hash(prefix_hash, t);
  return prefix_hash;
}

}  // namespace keel::cache
