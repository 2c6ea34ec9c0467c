// Tenants and API keys, from a JSON file (docs/router.md):
//   {"tenants": [{"name": "acme", "pool": "acme", "region": "eu-west", "rate_per_s": 5, "burst": 10,
//                 "api_keys_sha256": ["<64 hex digits>", ...]}]}
// Keys are stored only as SHA-256 digests; a request's bearer key is hashed and looked up. Each key
// has its own token bucket (rate_per_s 0 = unlimited). A tenant's requests go only to replicas
// labelled with its pool. Immutable after load: any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "router/rate_limit.h"

namespace keel::router {

struct Tenant {
  std::string name;
  std::string pool;    // replicas labelled pool=<this>; "" = any replica
  std::string region;  // default region of its requests ("" = none)
  double rate_per_s = 0;
  double burst = 0;
};

struct KeyEntry {
  const Tenant* tenant = nullptr;
  std::unique_ptr<TokenBucket> bucket;  // null: unlimited
};

class TenantTable {
 public:
  static Result<std::unique_ptr<TenantTable>> parse(std::string_view json_text);
  static Result<std::unique_ptr<TenantTable>> load(const std::string& path);

  // The key's entry, or null when the key is unknown.
  KeyEntry* find_key(std::string_view api_key);
  int64_t n_tenants() const { return static_cast<int64_t>(tenants_.size()); }

 private:
  std::map<std::string, std::unique_ptr<Tenant>, std::less<>> tenants_;
  std::map<std::string, KeyEntry, std::less<>> keys_;  // SHA-256 hex -> entry
};

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace keel::router
