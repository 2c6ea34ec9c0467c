// A cached prefix's KV in transit between replicas (keel serve's /v1/kv/export and the pull of a
// routed request, docs/router.md "KV pulls"): the prefix's tokens and, for every layer, the K then V
// rows of each token as f32 (lossless from the f32, bf16 and f16 pools). The wire form and its checks
// are server/kv_wire.h; Scheduler::export_prefix and import_prefix move it out of and into the pool.
#pragma once

#include <cstdint>
#include <vector>

namespace keel::sched {

struct KvPrefix {
  std::vector<int32_t> tokens;  // [n] the prefix
  // [n_layers][2 (k, v)][n][n_kv_heads x head_dim], f32
  std::vector<float> data;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace keel::sched
