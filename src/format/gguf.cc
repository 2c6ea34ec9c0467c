#include "format/gguf.h"

#include <limits>
#include <utility>

#include "format/gguf_parser.h"

namespace keel::format {
namespace {

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64: return true;
    case GgufType::kFloat32:
    case GgufType::kFloat64:
    case GgufType::kBool:
    case GgufType::kString:
    case GgufType::kArray: return false;
  }
  return false;
}

bool is_float(GgufType t) { return t == GgufType::kFloat32 || t == GgufType::kFloat64; }

Status wrong_type(std::string_view key, GgufType got, std::string_view want) {
  return make_error(ErrorCode::kCorruptFile, "metadata '{}' has type tag {}, expected {}", key,
                    static_cast<uint32_t>(got), want);
}

// Widens an integer value to int64_t; unsigned values above INT64_MAX are out of range.
Result<int64_t> to_int(const GgufValue& v, std::string_view key) {
  if (!is_integer(v.type)) return wrong_type(key, v.type, "an integer");
  if (const auto* u = std::get_if<uint64_t>(&v.value)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return make_error(ErrorCode::kOutOfRange, "metadata '{}' = {} does not fit in int64", key, *u);
    }
    return static_cast<int64_t>(*u);
  }
  return std::get<int64_t>(v.value);
}

Result<double> to_float(const GgufValue& v, std::string_view key) {
  if (is_float(v.type)) return std::get<double>(v.value);
  if (!is_integer(v.type)) return wrong_type(key, v.type, "a number");
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return static_cast<double>(*u);
  return static_cast<double>(std::get<int64_t>(v.value));
}

}  // namespace

Result<GgufFile> GgufFile::open(const std::string& path) {
  KEEL_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  GgufFile out;
  Status st = GgufParser(file->bytes()).parse(out);
  if (!st.ok()) return st.with_context(fmt::format("reading {}", path));
  out.file_ = std::move(file);
  out.path_ = path;
  return out;
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes) {
  GgufFile out;
  KEEL_RETURN_IF_ERROR(GgufParser(bytes).parse(out));
  return out;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return make_error(ErrorCode::kNotFound, "metadata '{}' is missing", key);
  if (v->type != GgufType::kString) return wrong_type(key, v->type, "a string");
  return std::get<std::string>(v->value);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return make_error(ErrorCode::kNotFound, "metadata '{}' is missing", key);
  return to_int(*v, key);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return make_error(ErrorCode::kNotFound, "metadata '{}' is missing", key);
  return to_float(*v, key);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return make_error(ErrorCode::kNotFound, "metadata '{}' is missing", key);
  if (v->type != GgufType::kBool) return wrong_type(key, v->type, "a bool");
  return std::get<bool>(v->value);
}

namespace {

Result<const GgufArray*> find_array(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return make_error(ErrorCode::kNotFound, "metadata '{}' is missing", key);
  if (v->type != GgufType::kArray) return wrong_type(key, v->type, "an array");
  return static_cast<const GgufArray*>(std::get<std::shared_ptr<GgufArray>>(v->value).get());
}

}  // namespace

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  KEEL_ASSIGN_OR_RETURN(const GgufArray* arr, find_array(*this, key));
  if (arr->elem_type != GgufType::kString) return wrong_type(key, arr->elem_type, "an array of strings");
  std::vector<std::string> out;
  out.reserve(arr->items.size());
  for (const GgufValue& item : arr->items) out.push_back(std::get<std::string>(item.value));
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  KEEL_ASSIGN_OR_RETURN(const GgufArray* arr, find_array(*this, key));
  if (!is_integer(arr->elem_type)) return wrong_type(key, arr->elem_type, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(arr->items.size());
  for (const GgufValue& item : arr->items) {
    KEEL_ASSIGN_OR_RETURN(int64_t x, to_int(item, key));
    out.push_back(x);
  }
  return out;
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  KEEL_ASSIGN_OR_RETURN(const GgufArray* arr, find_array(*this, key));
  if (!is_integer(arr->elem_type) && !is_float(arr->elem_type)) {
    return wrong_type(key, arr->elem_type, "an array of numbers");
  }
  std::vector<float> out;
  out.reserve(arr->items.size());
  for (const GgufValue& item : arr->items) {
    KEEL_ASSIGN_OR_RETURN(double x, to_float(item, key));
    out.push_back(static_cast<float>(x));
  }
  return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

tensor::TensorView GgufFile::tensor_view(const GgufTensorInfo& info) const {
  // Offsets and sizes were bounds-checked against the data section when the file was parsed.
  return tensor::TensorView{
      .dtype = info.dtype,
      .shape = info.shape,
      .data = data_.data() + info.offset,
      .size_bytes = info.size_bytes,
  };
}

}  // namespace keel::format
