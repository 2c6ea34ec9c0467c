// Prefix keys: the chained 64-bit hashes that name every prefix of a request's prompt, so "which
// replica holds the longest prefix" is a set lookup. Token keys use the same definition as the
// replica's radix-cache feed: they are computed by cache/prefix_hash.h itself (the one pure header the
// router takes from cache/), so the router and the replicas cannot drift apart. Character keys
// hash fixed-size byte blocks the same way, for when no tokenizer is loaded. Pure: any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace keel::router {

uint64_t extend_token_hash(uint64_t prefix_hash, int32_t token);

// [n] hash of tokens[0, i + 1) for each i.
std::vector<uint64_t> token_prefix_hashes(std::span<const int32_t> tokens);
// Same, continuing from `prefix_hash` (the hash of what precedes `tokens`).
void append_token_hashes(uint64_t prefix_hash, std::span<const int32_t> tokens, std::vector<uint64_t>& out);

// [ceil(n / block_bytes)] hash of text[0, min(n, (i + 1) * block_bytes)) for each i: a partial last
// block counts, so two prompts that differ only in their tail still share their full blocks.
std::vector<uint64_t> char_prefix_hashes(std::string_view text, int32_t block_bytes);

}  // namespace keel::router
