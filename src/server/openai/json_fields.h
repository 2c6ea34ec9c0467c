// Typed, strict readers for the fields of a JSON request object: each read checks the type and
// range and fails with an ApiError naming the field (with its path, "messages[1].role"); missing or
// null fields keep the caller's default. finish() rejects any field nobody read, so a typo is a 400,
// not a silently ignored parameter. Used by request_parse.cc and native_generate.cc; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai/errors.h"

namespace keel::server::openai {

using MaybeError = std::optional<ApiError>;

// Returns from the enclosing function (which returns an ApiResult or MaybeError) on error.
#define KEEL_API_TRY(expr)                          \
  do {                                              \
    if (auto keel_err_ = (expr)) return *keel_err_; \
  } while (0)

// Parses a request body: valid UTF-8 JSON, nesting at most max_depth, top level an object.
ApiResult<nlohmann::json> parse_json_object(std::string_view body, int32_t max_depth);

class FieldReader {
 public:
  // `obj` must be a JSON object; `path` prefixes field names in errors ("" at the top level).
  FieldReader(const nlohmann::json& obj, std::string path = "");

  std::string name(std::string_view key) const;  // path-qualified field name
  // True if present and not null; marks the field as read.
  bool has(std::string_view key);
  // The field (marks it read). Only after has() returned true.
  const nlohmann::json& at(std::string_view key);

  MaybeError read_bool(std::string_view key, bool& out);
  MaybeError read_string(std::string_view key, std::string& out);
  // Integers only (10.0 is rejected), within [lo, hi].
  MaybeError read_int(std::string_view key, int64_t lo, int64_t hi, int64_t& out);
  MaybeError read_int(std::string_view key, int64_t lo, int64_t hi, int32_t& out);
  // Any finite number within [lo, hi] (or (lo, hi] when lo_open).
  MaybeError read_number(std::string_view key, double lo, double hi, bool lo_open, float& out);
  // A string, or a list of 1..max_items strings; each non-empty.
  MaybeError read_string_or_list(std::string_view key, size_t max_items, std::vector<std::string>& out);
  // A list of integers in [lo, hi], at most max_items.
  MaybeError read_int_list(std::string_view key, int64_t lo, int64_t hi, size_t max_items, std::vector<int32_t>& out);

  // A field present (even null) whose value must equal the default (`echo: false`); rejected otherwise.
  MaybeError accept_only_default(std::string_view key, const nlohmann::json& default_value, std::string_view why);
  // Marks fields accepted but ignored (documented in docs/api.md).
  void ignore(std::string_view key);

  // The first field that was present but never read, as a 400 "unrecognized request argument".
  MaybeError finish() const;

 private:
  const nlohmann::json& obj_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

// JSON type name for messages ("string", "number", "object", ...).
std::string_view json_type_name(const nlohmann::json& v);

}  // namespace keel::server::openai
