#include "server/openai/json_fields.h"

#include <cmath>
#include <limits>

namespace keel::server::openai {

using nlohmann::json;

std::string_view json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::binary: return "binary";
    case json::value_t::discarded: return "invalid";
  }
  return "invalid";
}

// Nesting depth of the JSON text, counting brackets outside strings (the parser itself is iterative,
// but deep values are no request anyone sends and cost memory).
static bool depth_exceeds(std::string_view text, int32_t max_depth) {
  int32_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

ApiResult<json> parse_json_object(std::string_view body, int32_t max_depth) {
  if (depth_exceeds(body, max_depth)) {
    return ApiError{.status =
                        make_error(ErrorCode::kInvalidArgument, "request JSON nests deeper than {} levels", max_depth)};
  }
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    return ApiError{.status = make_error(ErrorCode::kInvalidArgument, "request body is not valid JSON: {}", e.what())};
  }
  if (!j.is_object()) {
    return ApiError{.status = make_error(ErrorCode::kInvalidArgument, "request body must be a JSON object, got {}",
                                         json_type_name(j))};
  }
  return j;
}

FieldReader::FieldReader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

std::string FieldReader::name(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

bool FieldReader::has(std::string_view key) {
  auto it = obj_.find(key);
  if (it == obj_.end()) return false;
  read_.emplace(key);
  return !it->is_null();
}

const json& FieldReader::at(std::string_view key) {
  read_.emplace(key);
  return obj_.find(key).value();
}

MaybeError FieldReader::read_bool(std::string_view key, bool& out) {
  if (!has(key)) return {};
  const json& v = at(key);
  if (!v.is_boolean()) return param_error(name(key), "must be a boolean, got {}", json_type_name(v));
  out = v.get<bool>();
  return {};
}

MaybeError FieldReader::read_string(std::string_view key, std::string& out) {
  if (!has(key)) return {};
  const json& v = at(key);
  if (!v.is_string()) return param_error(name(key), "must be a string, got {}", json_type_name(v));
  out = v.get<std::string>();
  return {};
}

MaybeError FieldReader::read_int(std::string_view key, int64_t lo, int64_t hi, int64_t& out) {
  if (!has(key)) return {};
  const json& v = at(key);
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo))) {
      return param_error(name(key), "must be in [{}, {}], got {}", lo, hi, u);
    }
    out = static_cast<int64_t>(u);
    return {};
  }
  if (!v.is_number_integer()) return param_error(name(key), "must be an integer, got {}", json_type_name(v));
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) return param_error(name(key), "must be in [{}, {}], got {}", lo, hi, x);
  out = x;
  return {};
}

MaybeError FieldReader::read_int(std::string_view key, int64_t lo, int64_t hi, int32_t& out) {
  int64_t wide = out;
  KEEL_API_TRY(read_int(key, lo, hi, wide));
  out = static_cast<int32_t>(wide);
  return {};
}

MaybeError FieldReader::read_number(std::string_view key, double lo, double hi, bool lo_open, float& out) {
  if (!has(key)) return {};
  const json& v = at(key);
  if (!v.is_number()) return param_error(name(key), "must be a number, got {}", json_type_name(v));
  double x = v.get<double>();
  bool below = lo_open ? !(x > lo) : !(x >= lo);
  if (!std::isfinite(x) || below || !(x <= hi)) {
    return param_error(name(key), "must be in {}{}, {}], got {}", lo_open ? "(" : "[", lo, hi, x);
  }
  out = static_cast<float>(x);
  return {};
}

MaybeError FieldReader::read_string_or_list(std::string_view key, size_t max_items, std::vector<std::string>& out) {
  if (!has(key)) return {};
  const json& v = at(key);
  out.clear();
  if (v.is_string()) {
    if (v.get_ref<const std::string&>().empty()) return param_error(name(key), "must not be an empty string");
    out.push_back(v.get<std::string>());
    return {};
  }
  if (!v.is_array()) return param_error(name(key), "must be a string or a list of strings, got {}", json_type_name(v));
  if (v.size() > max_items)
    return param_error(name(key), "has {} entries, at most {} are allowed", v.size(), max_items);
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      return param_error(fmt::format("{}[{}]", name(key), i), "must be a string, got {}", json_type_name(v[i]));
    if (v[i].get_ref<const std::string&>().empty())
      return param_error(fmt::format("{}[{}]", name(key), i), "must not be empty");
    out.push_back(v[i].get<std::string>());
  }
  return {};
}

MaybeError FieldReader::read_int_list(std::string_view key, int64_t lo, int64_t hi, size_t max_items,
                                      std::vector<int32_t>& out) {
  if (!has(key)) return {};
  const json& v = at(key);
  if (!v.is_array()) return param_error(name(key), "must be a list of integers, got {}", json_type_name(v));
  if (v.size() > max_items)
    return param_error(name(key), "has {} entries, at most {} are allowed", v.size(), max_items);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    std::string field = fmt::format("{}[{}]", name(key), i);
    if (!e.is_number_integer()) return param_error(field, "must be an integer, got {}", json_type_name(e));
    bool out_of_range = e.is_number_unsigned() ? (e.get<uint64_t>() > static_cast<uint64_t>(hi) ||
                                                  (lo > 0 && e.get<uint64_t>() < static_cast<uint64_t>(lo)))
                                               : (e.get<int64_t>() < lo || e.get<int64_t>() > hi);
    if (out_of_range) {
      return param_error(field, "must be in [{}, {}], got {}", lo, hi, e.dump());
    }
    out.push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return {};
}

MaybeError FieldReader::accept_only_default(std::string_view key, const json& default_value, std::string_view why) {
  if (!has(key)) return {};
  const json& v = at(key);
  if (v != default_value)
    return ApiError{.status = make_error(ErrorCode::kUnsupported, "{}: {}", name(key), why), .param = name(key)};
  return {};
}

void FieldReader::ignore(std::string_view key) { read_.emplace(key); }

MaybeError FieldReader::finish() const {
  for (const auto& [key, _] : obj_.items()) {
    if (!read_.contains(key)) return param_error(name(key), "unrecognized request argument");
  }
  return {};
}

}  // namespace keel::server::openai
