#include "server/kv_wire.h"

#include <bit>
#include <cstring>

#include <nlohmann/json.hpp>

namespace keel::server {

static_assert(std::endian::native == std::endian::little, "the KV wire form is written in host order");

namespace {

using nlohmann::json;

constexpr size_t kMaxHeaderBytes = 4096;

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

Status field_mismatch(std::string_view name, const std::string& got, const std::string& want) {
  return make_error(ErrorCode::kInvalidArgument, "KV from another replica kind: {} is '{}', this replica's is '{}'",
                    name, got, want);
}

}  // namespace

std::string encode_kv(const KvIdentity& id, const sched::KvPrefix& p) {
  const json header = {{"model", id.model},         {"backend", id.backend},       {"kv_dtype", id.kv_dtype},
                       {"n_layers", id.n_layers},   {"n_kv_heads", id.n_kv_heads}, {"head_dim", id.head_dim},
                       {"n_vocab", id.n_vocab},     {"n_tokens", p.n_tokens()}};
  const std::string h = header.dump();
  std::string out;
  out.reserve(kKvWireMagic.size() + 4 + h.size() + p.tokens.size() * 4 + p.data.size() * 4);
  out.append(kKvWireMagic);
  put_u32(out, static_cast<uint32_t>(h.size()));
  out.append(h);
  out.append(reinterpret_cast<const char*>(p.tokens.data()), p.tokens.size() * sizeof(int32_t));
  out.append(reinterpret_cast<const char*>(p.data.data()), p.data.size() * sizeof(float));
  return out;
}

Result<sched::KvPrefix> decode_kv(std::string_view body, const KvIdentity& self, int64_t max_tokens) {
  auto bad = [](std::string_view what) { return make_error(ErrorCode::kInvalidArgument, "bad KV body: {}", what); };
  if (!body.starts_with(kKvWireMagic)) return bad("it does not start with KEELKV01");
  body.remove_prefix(kKvWireMagic.size());
  if (body.size() < 4) return bad("no header length");
  uint32_t h_len = 0;
  std::memcpy(&h_len, body.data(), 4);
  body.remove_prefix(4);
  if (h_len > kMaxHeaderBytes || h_len > body.size()) return bad("the header length is out of range");
  json h = json::parse(body.substr(0, h_len), nullptr, /*allow_exceptions=*/false);
  body.remove_prefix(h_len);
  if (!h.is_object()) return bad("the header is not a JSON object");
  auto text = [&](const char* k, std::string& out) {
    auto it = h.find(k);
    if (it == h.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  auto number = [&](const char* k, int64_t& out) {
    auto it = h.find(k);
    if (it == h.end() || !it->is_number_integer()) return false;
    out = it->get<int64_t>();
    return true;
  };
  KvIdentity got;
  int64_t n = 0;
  if (!text("model", got.model) || !text("backend", got.backend) || !text("kv_dtype", got.kv_dtype) ||
      !number("n_layers", got.n_layers) || !number("n_kv_heads", got.n_kv_heads) ||
      !number("head_dim", got.head_dim) || !number("n_vocab", got.n_vocab) || !number("n_tokens", n)) {
    return bad("the header lacks a field or has one of the wrong type");
  }
  if (got.model != self.model) return field_mismatch("the model fingerprint", got.model, self.model);
  if (got.backend != self.backend) return field_mismatch("the backend", got.backend, self.backend);
  if (got.kv_dtype != self.kv_dtype) return field_mismatch("the KV dtype", got.kv_dtype, self.kv_dtype);
  if (got != self) return bad("the model shape (layers, KV heads, head size or vocabulary) differs from this replica's");
  if (n < 0 || n > max_tokens) return bad("n_tokens is out of range");
  const auto per_token = static_cast<uint64_t>(self.floats_per_token());
  const uint64_t want = static_cast<uint64_t>(n) * (4 + per_token * 4);
  if (body.size() != want) return bad("the body's size does not match n_tokens");
  sched::KvPrefix p;
  p.tokens.resize(static_cast<size_t>(n));
  std::memcpy(p.tokens.data(), body.data(), p.tokens.size() * 4);
  body.remove_prefix(p.tokens.size() * 4);
  for (int32_t t : p.tokens) {
    if (t < 0 || t >= self.n_vocab) return bad("a token id is outside the vocabulary");
  }
  p.data.resize(static_cast<size_t>(static_cast<uint64_t>(n) * per_token));
  std::memcpy(p.data.data(), body.data(), p.data.size() * 4);
  return p;
}

Result<KvExportRequest> parse_kv_export_request(std::string_view body, int64_t n_vocab, int64_t max_tokens) {
  auto bad = [](std::string_view what) { return make_error(ErrorCode::kInvalidArgument, "{}", what); };
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return bad("the body must be a JSON object {\"tokens\": [ids], \"max_tokens\": n}");
  KvExportRequest out;
  for (const auto& [k, v] : j.items()) {
    if (k == "tokens") {
      if (!v.is_array()) return bad("'tokens' must be an array of token ids");
      if (static_cast<int64_t>(v.size()) > max_tokens) return bad("'tokens' has more ids than this server exports");
      out.tokens.reserve(v.size());
      for (const auto& t : v) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab) {
          return bad("'tokens' must hold token ids of this model's vocabulary");
        }
        out.tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
      }
    } else if (k == "max_tokens") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) return bad("'max_tokens' must be an integer >= 1");
      out.max_tokens = v.get<int64_t>();
    } else {
      return bad("unknown field '" + k + "'");
    }
  }
  if (!j.contains("tokens")) return bad("'tokens' is required");
  return out;
}

std::string kv_export_request_body(std::span<const int32_t> tokens) {
  return json{{"tokens", std::vector<int32_t>(tokens.begin(), tokens.end())}}.dump();
}

}  // namespace keel::server
