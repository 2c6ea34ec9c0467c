#include "router/tenants.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace keel::router {

using nlohmann::json;

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

namespace {

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status bad(std::string_view what) { return make_error(ErrorCode::kInvalidArgument, "tenants config: {}", what); }

}  // namespace

Result<std::unique_ptr<TenantTable>> TenantTable::parse(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("tenants") || !j["tenants"].is_array()) return bad("needs a 'tenants' array");
  auto table = std::make_unique<TenantTable>();
  for (const json& t : j["tenants"]) {
    if (!t.is_object()) return bad("each tenant must be an object");
    for (const auto& [k, _] : t.items()) {
      if (k != "name" && k != "pool" && k != "region" && k != "rate_per_s" && k != "burst" && k != "api_keys_sha256") {
        return bad(fmt::format("unknown tenant field '{}'", k));
      }
    }
    auto tenant = std::make_unique<Tenant>();
    if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty()) {
      return bad("each tenant needs a non-empty string 'name'");
    }
    tenant->name = t["name"].get<std::string>();
    for (auto [field, dst] : {std::pair{"pool", &tenant->pool}, std::pair{"region", &tenant->region}}) {
      if (!t.contains(field)) continue;
      if (!t[field].is_string()) return bad(fmt::format("tenant '{}': '{}' must be a string", tenant->name, field));
      *dst = t[field].get<std::string>();
    }
    for (auto [field, dst] : {std::pair{"rate_per_s", &tenant->rate_per_s}, std::pair{"burst", &tenant->burst}}) {
      if (!t.contains(field)) continue;
      if (!t[field].is_number() || t[field].get<double>() < 0) {
        return bad(fmt::format("tenant '{}': '{}' must be a number >= 0", tenant->name, field));
      }
      *dst = t[field].get<double>();
    }
    if (tenant->rate_per_s > 0 && tenant->burst < 1) tenant->burst = std::max(1.0, tenant->rate_per_s);
    if (table->tenants_.contains(tenant->name)) return bad(fmt::format("tenant '{}' is listed twice", tenant->name));
    if (!t.contains("api_keys_sha256") || !t["api_keys_sha256"].is_array()) {
      return bad(fmt::format("tenant '{}' needs an 'api_keys_sha256' array", tenant->name));
    }
    for (const json& k : t["api_keys_sha256"]) {
      if (!k.is_string() || !is_sha256_hex(k.get<std::string>())) {
        return bad(fmt::format("tenant '{}': keys must be 64 lower-case hex digits (SHA-256)", tenant->name));
      }
      KeyEntry e{.tenant = tenant.get()};
      if (tenant->rate_per_s > 0) e.bucket = std::make_unique<TokenBucket>(tenant->rate_per_s, tenant->burst);
      if (!table->keys_.emplace(k.get<std::string>(), std::move(e)).second) {
        return bad("an API key digest is listed twice");
      }
    }
    table->tenants_.emplace(tenant->name, std::move(tenant));
  }
  return table;
}

Result<std::unique_ptr<TenantTable>> TenantTable::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open tenants config '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str());
}

KeyEntry* TenantTable::find_key(std::string_view api_key) {
  auto it = keys_.find(sha256_hex(api_key));
  return it == keys_.end() ? nullptr : &it->second;
}

}  // namespace keel::router
