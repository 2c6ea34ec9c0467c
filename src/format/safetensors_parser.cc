#include "format/safetensors_parser.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "tensor/dtype.h"

namespace keel::format {
namespace {

using nlohmann::json;

struct Entry {
  std::string name;
  tensor::DType dtype;
  tensor::Shape shape;
  uint64_t begin;
  uint64_t end;
};

Status corrupt(const std::string& label, std::string_view what) {
  return make_error(ErrorCode::kCorruptFile, "{}: {}", label, what);
}

Result<uint64_t> offset_value(const json& v, const std::string& label, const std::string& name) {
  if (!v.is_number_unsigned()) {
    return corrupt(label, fmt::format("tensor '{}': data_offsets must be non-negative integers", name));
  }
  return v.get<uint64_t>();
}

Result<Entry> parse_entry(const std::string& name, const json& v, const std::string& label) {
  if (!v.is_object()) return corrupt(label, fmt::format("tensor '{}' is not a JSON object", name));
  const auto dtype_it = v.find("dtype");
  const auto shape_it = v.find("shape");
  const auto offsets_it = v.find("data_offsets");
  if (dtype_it == v.end() || shape_it == v.end() || offsets_it == v.end()) {
    return corrupt(label, fmt::format("tensor '{}' needs dtype, shape and data_offsets", name));
  }
  if (!dtype_it->is_string()) return corrupt(label, fmt::format("tensor '{}': dtype is not a string", name));
  const std::string dtype_name = dtype_it->get<std::string>();
  std::optional<tensor::DType> dtype = tensor::dtype_from_safetensors(dtype_name);
  if (!dtype) {
    return make_error(ErrorCode::kUnsupported, "{}: tensor '{}' has dtype {}, which keel does not read", label, name,
                      dtype_name);
  }
  Entry e{.name = name, .dtype = *dtype, .shape = {}, .begin = 0, .end = 0};
  if (!shape_it->is_array()) return corrupt(label, fmt::format("tensor '{}': shape is not an array", name));
  if (shape_it->size() > static_cast<size_t>(tensor::kMaxDims)) {
    return make_error(ErrorCode::kUnsupported, "{}: tensor '{}' has {} dimensions (keel reads at most {})", label, name,
                      shape_it->size(), tensor::kMaxDims);
  }
  int64_t numel = 1;
  for (const json& d : *shape_it) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, d.get<int64_t>(), &numel)) {
      return corrupt(
          label, fmt::format("tensor '{}': shape {} is not a list of sizes that fit int64", name, shape_it->dump()));
    }
    e.shape.dims[static_cast<size_t>(e.shape.rank++)] = d.get<int64_t>();
  }
  if (!offsets_it->is_array() || offsets_it->size() != 2) {
    return corrupt(label, fmt::format("tensor '{}': data_offsets must be [begin, end]", name));
  }
  KEEL_ASSIGN_OR_RETURN(e.begin, offset_value((*offsets_it)[0], label, name));
  KEEL_ASSIGN_OR_RETURN(e.end, offset_value((*offsets_it)[1], label, name));
  uint64_t want_bytes = 0;
  if (e.end < e.begin ||
      __builtin_mul_overflow(static_cast<uint64_t>(numel), tensor::dtype_info(e.dtype).block_bytes, &want_bytes) ||
      want_bytes != e.end - e.begin) {
    return corrupt(label, fmt::format("tensor '{}': data_offsets [{}, {}) do not hold {} {} elements", name, e.begin,
                                      e.end, numel, dtype_name));
  }
  return e;
}

Status parse_metadata(const json& v, const std::string& label, std::unordered_map<std::string, std::string>* out) {
  if (!v.is_object()) return corrupt(label, "__metadata__ is not a JSON object");
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) return corrupt(label, fmt::format("__metadata__ '{}' is not a string", key));
    if (out != nullptr) (*out)[key] = value.get<std::string>();
  }
  return {};
}

Status parse_header_json(const json& header, std::span<const uint8_t> data, const std::string& label,
                         std::vector<SafetensorsTensor>& out, std::unordered_map<std::string, std::string>* metadata) {
  if (!header.is_object()) return corrupt(label, "header is not a JSON object");
  std::vector<Entry> entries;
  entries.reserve(header.size());
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      KEEL_RETURN_IF_ERROR(parse_metadata(value, label, metadata));
      continue;
    }
    KEEL_ASSIGN_OR_RETURN(Entry e, parse_entry(name, value, label));
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::pair(a.begin, a.end) < std::pair(b.begin, b.end); });
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.end > data.size()) {
      return corrupt(label, fmt::format("tensor '{}' bytes [{}, {}) run past the end of the data ({} bytes)", e.name,
                                        e.begin, e.end, data.size()));
    }
    if (i > 0 && entries[i - 1].end > e.begin) {
      return corrupt(label, fmt::format("tensors '{}' and '{}' overlap", entries[i - 1].name, e.name));
    }
    out.push_back(SafetensorsTensor{
        .name = e.name,
        .view = tensor::TensorView{.dtype = e.dtype,
                                   .shape = e.shape,
                                   .data = data.data() + e.begin,
                                   .size_bytes = static_cast<size_t>(e.end - e.begin)},
    });
  }
  return {};
}

}  // namespace

Status SafetensorsParser::parse_file(std::span<const uint8_t> bytes, const std::string& label,
                                     std::vector<SafetensorsTensor>& out,
                                     std::unordered_map<std::string, std::string>* metadata) {
  if (bytes.size() < 8)
    return corrupt(label, fmt::format("{} bytes is too short for a safetensors file", bytes.size()));
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data(), 8);
  if (header_bytes > bytes.size() - 8) {
    return corrupt(
        label, fmt::format("header length {} runs past the end of the file ({} bytes)", header_bytes, bytes.size()));
  }
  if (header_bytes > kMaxHeaderBytes) {
    return make_error(ErrorCode::kUnsupported, "{}: header of {} bytes exceeds the {} byte limit", label, header_bytes,
                      kMaxHeaderBytes);
  }
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const std::span<const uint8_t> data = bytes.subspan(8 + static_cast<size_t>(header_bytes));
  // nlohmann reports malformed JSON and type mismatches by exception: they end here.
  try {
    const json header = json::parse(text, text + header_bytes);
    return parse_header_json(header, data, label, out, metadata);
  } catch (const json::exception& e) {
    return corrupt(label, fmt::format("header JSON: {}", e.what()));
  }
}

Result<std::unordered_map<std::string, std::string>> SafetensorsParser::parse_index(std::string_view json_text,
                                                                                    const std::string& label) {
  try {
    const json index = json::parse(json_text);
    if (!index.is_object() || !index.contains("weight_map") || !index.at("weight_map").is_object()) {
      return corrupt(label, "index has no weight_map object");
    }
    std::unordered_map<std::string, std::string> shards;
    for (const auto& [name, file] : index.at("weight_map").items()) {
      if (!file.is_string()) return corrupt(label, fmt::format("weight_map['{}'] is not a string", name));
      const std::string f = file.get<std::string>();
      // Shards live beside the index: no absolute paths, no climbing out of the folder.
      if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos) {
        return corrupt(label, fmt::format("weight_map['{}'] names '{}', not a file beside the index", name, f));
      }
      shards.emplace(name, f);
    }
    return shards;
  } catch (const json::exception& e) {
    return corrupt(label, fmt::format("index JSON: {}", e.what()));
  }
}

}  // namespace keel::format
