// Fuzzes what a replica reads from another in a KV pull (server/kv_wire.h) and what it is asked in one:
// first byte 0 = a KV body (decode_kv against a fixed identity), 1 = an export request's JSON, 2 = a
// source URL (parse_http_origin). Nothing may crash, throw or leak; what decodes must be consistent
// with the identity and re-encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/http/fetch.h"
#include "server/kv_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace keel::server;
  const KvIdentity self{.model = "0123456789abcdef", .backend = "cpu", .kv_dtype = "f32",
                        .n_layers = 2, .n_kv_heads = 1, .head_dim = 2, .n_vocab = 100};
  switch (data[0] % 3) {
    case 0: {
      auto p = decode_kv(in, self, 64);
      if (!p.ok()) break;
      const auto& v = p.value();
      if (v.n_tokens() > 64 || static_cast<int64_t>(v.data.size()) != v.n_tokens() * self.floats_per_token()) std::abort();
      for (int32_t t : v.tokens) {
        if (t < 0 || t >= self.n_vocab) std::abort();
      }
      auto again = decode_kv(encode_kv(self, v), self, 64);
      if (!again.ok() || again.value().tokens != v.tokens) std::abort();
      break;
    }
    case 1: {
      auto r = parse_kv_export_request(in, 100, 32);
      if (!r.ok()) break;
      if (r.value().tokens.size() > 32 || r.value().max_tokens < 0) std::abort();
      for (int32_t t : r.value().tokens) {
        if (t < 0 || t >= 100) std::abort();
      }
      break;
    }
    default: {
      auto o = http::parse_http_origin(in);
      if (o.ok() && (o.value().host.empty() || o.value().port == 0)) std::abort();
      break;
    }
  }
  return 0;
}
