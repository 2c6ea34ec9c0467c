// The wire form of a cached prefix's KV (sched/kv_prefix.h) between keel serve replicas: what POST
// /v1/kv/export answers and what a routed request's pull reads (docs/router.md "KV pulls").
//   "KEELKV01"  u32 header length  header (JSON)  int32 tokens [n]  f32 data [n_layers][2][n][width]
// all little-endian. The header names the replica's KvIdentity and n_tokens. decode_kv checks every
// byte count and field against the reader's own identity, so KV from other weights, another
// backend or pool dtype, or a truncated or padded body is refused, never imported.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sched/kv_prefix.h"

namespace keel::server {

struct KvIdentity {
  std::string model;     // model/fingerprint.h
  std::string backend;   // "cpu" | "cuda"
  std::string kv_dtype;  // the KV pool's dtype
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_vocab = 0;

  int64_t floats_per_token() const { return n_layers * 2 * n_kv_heads * head_dim; }
  friend bool operator==(const KvIdentity&, const KvIdentity&) = default;
};

inline constexpr std::string_view kKvWireMagic = "KEELKV01";
inline constexpr std::string_view kKvWireContentType = "application/x-keel-kv";

std::string encode_kv(const KvIdentity& id, const sched::KvPrefix& p);

// kInvalidArgument naming the first problem: bad magic or lengths, a header that is not the JSON
// object above, an identity field that differs from `self`, more than max_tokens tokens, token ids
// outside [0, n_vocab), or a data size other than n x floats_per_token.
Result<sched::KvPrefix> decode_kv(std::string_view body, const KvIdentity& self, int64_t max_tokens);

// POST /v1/kv/export's body: {"tokens": [ids], "max_tokens": n (optional)}. kInvalidArgument for
// anything else, ids outside [0, n_vocab) or more than max_tokens ids (a longer prompt is cut to its
// first max_tokens by the caller, not sent whole).
struct KvExportRequest {
  std::vector<int32_t> tokens;
  int64_t max_tokens = 0;  // 0 = the server's limit
};
Result<KvExportRequest> parse_kv_export_request(std::string_view body, int64_t n_vocab, int64_t max_tokens);
std::string kv_export_request_body(std::span<const int32_t> tokens);

}  // namespace keel::server
