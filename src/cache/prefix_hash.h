// The chained 64-bit prefix hash that names a cached prefix in the radix tree's change feed and in
// the router's approximate tree: h(empty) = 0, h(p + [t]) = XXH3_64bits_withSeed(le32(t), 4, h(p)).
// Chained per token, so the hash of every prefix of a span follows from its parent's hash and its
// tokens, whatever node boundaries the tree has. Pure functions: any thread.
// Python equivalent (router tests, tests/golden/cache/gen_prefix_hash.py):
//   h = xxhash.xxh3_64_intdigest(struct.pack('<i', t), seed=h)
#pragma once

#include <cstdint>
#include <span>

namespace keel::cache {

inline constexpr uint64_t kRootPrefixHash = 0;

uint64_t extend_prefix_hash(uint64_t prefix_hash, int32_t token);
uint64_t extend_prefix_hash(uint64_t prefix_hash, std::span<const int32_t> tokens);

}  // namespace keel::cache
