// libFuzzer target for the router's request-body scanner (router/body_scan.h), which reads every client
// body the router proxies. Differential: nlohmann::json, an independent parser, is the reference. The
// first byte picks the body kind (chat, completion, native); the rest is the body.
//   - Validity: the scanner accepts exactly the JSON objects nlohmann accepts, nested at most 513 deep
//     (the scanner's limit). A body starting with a UTF-8 byte order mark is left out: nlohmann skips it,
//     the scanner rejects it (RFC 8259 allows either). nlohmann's lexer also ends the text at a NUL
//     byte; a NUL is never valid JSON (not whitespace, and a control character inside a string), so a
//     body holding one must be rejected. nlohmann rejects a number beyond a double's range (RFC 8259
//     lets a parser limit the range); the scanner, which keeps no numbers but integer ids, accepts it,
//     so such bodies are left out too.
//   - Fields: stream, n, seed and the prompt (ids or character-key text) as body_scan.h defines them,
//     computed here from nlohmann's DOM, equal the scanner's.
// Any mismatch aborts. Runs: scripts/fuzz.sh router_body_fuzz <seconds>.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "router/body_scan.h"

namespace {

using keel::router::BodyFields;
using keel::router::BodyKind;
using nlohmann::json;

// Levels of containers, the top one counted (the scanner accepts up to 513).
size_t depth_of(const json& j) {
  size_t d = 0;
  if (j.is_object() || j.is_array()) {
    for (const auto& v : j) d = std::max(d, depth_of(v));
    return d + 1;
  }
  return 0;
}

std::string string_or_empty(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The "text" of every object part whose "text" is a string, concatenated.
std::string part_texts(const json& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.is_object()) out += string_or_empty(p, "text");
  }
  return out;
}

int32_t as_id(const json& v) {
  return v.is_number_unsigned() ? static_cast<int32_t>(v.get<uint64_t>()) : static_cast<int32_t>(v.get<int64_t>());
}

// body_scan.h's fields, from the DOM.
BodyFields reference(const json& j, BodyKind kind) {
  BodyFields f;
  if (auto it = j.find("stream"); it != j.end()) f.stream = it->is_boolean() && it->get<bool>();
  if (auto it = j.find("n"); it != j.end()) f.single = it->is_number_integer() && *it == 1;
  if (auto it = j.find("seed"); it != j.end()) f.has_seed = !it->is_null();
  if (kind == BodyKind::kChat) {
    const auto it = j.find("messages");
    if (it == j.end() || !it->is_array()) return f;
    for (const auto& m : *it) {
      if (!m.is_object()) continue;
      std::string content;
      if (auto c = m.find("content"); c != m.end()) {
        if (c->is_string()) content = c->get<std::string>();
        if (c->is_array()) content = part_texts(*c);
      }
      f.prompt_text += string_or_empty(m, "role") + "\n" + content + "\n";
    }
    return f;
  }
  const auto it = j.find(kind == BodyKind::kCompletion ? "prompt" : "text");
  if (it == j.end()) return f;
  if (it->is_string()) f.prompt_text = it->get<std::string>();
  if (!it->is_array()) return f;
  if (!it->empty() && it->front().is_number_integer()) {
    f.prompt_is_ids = true;
    for (const auto& v : *it) {
      if (v.is_number_integer()) f.prompt_ids.push_back(as_id(v));
    }
    return f;
  }
  f.prompt_text = part_texts(*it);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const BodyKind kind = data[0] % 3 == 0   ? BodyKind::kChat
                        : data[0] % 3 == 1 ? BodyKind::kCompletion
                                           : BodyKind::kNative;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (body.starts_with("\xEF\xBB\xBF")) return 0;
  const auto scanned = keel::router::scan_body(body, kind);
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {  // parse_error, or out_of_range (406) for a number overflow
    if (std::string_view(e.what()).find("number overflow") != std::string_view::npos) return 0;
    j = json(json::value_t::discarded);
  }
  const bool valid =
      body.find('\0') == std::string_view::npos && !j.is_discarded() && j.is_object() && depth_of(j) <= 513;
  if (scanned.has_value() != valid) std::abort();
  if (!valid) return 0;
  const BodyFields want = reference(j, kind);
  if (scanned->stream != want.stream || scanned->single != want.single || scanned->has_seed != want.has_seed ||
      scanned->prompt_is_ids != want.prompt_is_ids || scanned->prompt_ids != want.prompt_ids ||
      scanned->prompt_text != want.prompt_text) {
    std::abort();
  }
  return 0;
}
