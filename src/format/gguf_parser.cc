#include "format/gguf_parser.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "tensor/dtype.h"

namespace keel::format {
namespace {

constexpr uint32_t kMaxKnownType = static_cast<uint32_t>(GgufType::kFloat64);

// Smallest encoding of one value of `t`: bounds an element count before anything is allocated.
uint64_t min_encoded_bytes(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString: return 8;
    case GgufType::kArray: return 12;  // elem type + count
  }
  return 1;
}

Result<GgufType> check_type(uint32_t raw, std::string_view what) {
  if (raw > kMaxKnownType) {
    return make_error(ErrorCode::kCorruptFile, "{}: unknown GGUF value type {}", what, raw);
  }
  return static_cast<GgufType>(raw);
}

template <typename Raw, typename Stored>
Result<GgufValue> read_scalar(ByteCursor& cur, GgufType type, std::string_view what) {
  KEEL_ASSIGN_OR_RETURN(Raw raw, cur.read<Raw>(what));
  GgufValue v;
  v.type = type;
  v.value = static_cast<Stored>(raw);
  return v;
}

// Tensor infos counted and bounded before the loop; the smallest is name length + n_dims + type + offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
// Smallest key/value pair: key length + type tag + a one-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;

}  // namespace

Status GgufParser::parse(GgufFile& out) {
  out_ = &out;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  KEEL_RETURN_IF_ERROR(parse_header(n_tensors, n_kv));
  KEEL_RETURN_IF_ERROR(parse_metadata(n_kv));
  KEEL_RETURN_IF_ERROR(read_alignment());
  KEEL_RETURN_IF_ERROR(parse_tensor_infos(n_tensors));
  return place_data_section();
}

Status GgufParser::parse_header(uint64_t& n_tensors, uint64_t& n_kv) {
  KEEL_ASSIGN_OR_RETURN(std::string_view magic, cur_.read_bytes(4, "GGUF magic"));
  if (magic != "GGUF") {
    return make_error(ErrorCode::kCorruptFile, "not a GGUF file (magic bytes {:02x} {:02x} {:02x} {:02x})",
                      uint8_t(magic[0]), uint8_t(magic[1]), uint8_t(magic[2]), uint8_t(magic[3]));
  }
  KEEL_ASSIGN_OR_RETURN(uint32_t version, cur_.read<uint32_t>("GGUF version"));
  if (version != 2 && version != 3) {
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped == 2 || swapped == 3) {
      return make_error(ErrorCode::kUnsupported, "big-endian GGUF (version {}) is not supported", swapped);
    }
    return make_error(ErrorCode::kUnsupported, "GGUF version {} is not supported (only 2 and 3)", version);
  }
  out_->version_ = version;
  KEEL_ASSIGN_OR_RETURN(n_tensors, cur_.read<uint64_t>("tensor count"));
  KEEL_ASSIGN_OR_RETURN(n_kv, cur_.read<uint64_t>("metadata count"));
  if (n_kv > cur_.remaining() / kMinKvBytes) {
    return make_error(ErrorCode::kCorruptFile, "metadata count {} cannot fit in the {} bytes left", n_kv,
                      cur_.remaining());
  }
  if (n_tensors > cur_.remaining() / kMinTensorInfoBytes) {
    return make_error(ErrorCode::kCorruptFile, "tensor count {} cannot fit in the {} bytes left", n_tensors,
                      cur_.remaining());
  }
  return {};
}

Status GgufParser::parse_metadata(uint64_t n_kv) {
  out_->metadata_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string where = fmt::format("metadata #{}", i);
    KEEL_ASSIGN_OR_RETURN(std::string_view key, cur_.read_string(where + " key"));
    const std::string what = fmt::format("metadata '{}'", key);
    if (key.empty()) return make_error(ErrorCode::kCorruptFile, "{} has an empty key", where);
    if (out_->metadata_index_.contains(std::string(key))) {
      return make_error(ErrorCode::kCorruptFile, "{} appears twice", what);
    }
    KEEL_ASSIGN_OR_RETURN(uint32_t raw_type, cur_.read<uint32_t>(what));
    KEEL_ASSIGN_OR_RETURN(GgufType type, check_type(raw_type, what));
    KEEL_ASSIGN_OR_RETURN(GgufValue value, parse_value(type, 0, what));
    out_->metadata_index_.emplace(std::string(key), out_->metadata_.size());
    out_->metadata_.emplace_back(std::string(key), std::move(value));
  }
  return {};
}

Result<GgufValue> GgufParser::parse_value(GgufType type, int depth, std::string_view what) {
  switch (type) {
    case GgufType::kUint8: return read_scalar<uint8_t, uint64_t>(cur_, type, what);
    case GgufType::kInt8: return read_scalar<int8_t, int64_t>(cur_, type, what);
    case GgufType::kUint16: return read_scalar<uint16_t, uint64_t>(cur_, type, what);
    case GgufType::kInt16: return read_scalar<int16_t, int64_t>(cur_, type, what);
    case GgufType::kUint32: return read_scalar<uint32_t, uint64_t>(cur_, type, what);
    case GgufType::kInt32: return read_scalar<int32_t, int64_t>(cur_, type, what);
    case GgufType::kUint64: return read_scalar<uint64_t, uint64_t>(cur_, type, what);
    case GgufType::kInt64: return read_scalar<int64_t, int64_t>(cur_, type, what);
    case GgufType::kFloat32: return read_scalar<float, double>(cur_, type, what);
    case GgufType::kFloat64: return read_scalar<double, double>(cur_, type, what);
    case GgufType::kBool: {
      const size_t at = cur_.pos();
      KEEL_ASSIGN_OR_RETURN(uint8_t raw, cur_.read<uint8_t>(what));
      if (raw > 1) return make_error(ErrorCode::kCorruptFile, "{} at byte {}: bool byte is {}", what, at, raw);
      GgufValue v;
      v.type = type;
      v.value = raw == 1;
      return v;
    }
    case GgufType::kString: {
      KEEL_ASSIGN_OR_RETURN(std::string_view s, cur_.read_string(what));
      GgufValue v;
      v.type = type;
      v.value = std::string(s);
      return v;
    }
    case GgufType::kArray: return parse_array(depth + 1, what);
  }
  return make_error(ErrorCode::kCorruptFile, "{}: unknown GGUF value type", what);
}

Result<GgufValue> GgufParser::parse_array(int depth, std::string_view what) {
  if (depth > kMaxArrayDepth) {
    return make_error(ErrorCode::kCorruptFile, "{}: arrays nested deeper than {}", what, kMaxArrayDepth);
  }
  KEEL_ASSIGN_OR_RETURN(uint32_t raw_elem, cur_.read<uint32_t>(what));
  KEEL_ASSIGN_OR_RETURN(GgufType elem, check_type(raw_elem, what));
  const size_t count_at = cur_.pos();
  KEEL_ASSIGN_OR_RETURN(uint64_t n, cur_.read<uint64_t>(what));
  if (n > cur_.remaining() / min_encoded_bytes(elem)) {
    return make_error(ErrorCode::kCorruptFile, "{} at byte {}: array of {} elements cannot fit in the {} bytes left",
                      what, count_at, n, cur_.remaining());
  }
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = elem;
  arr->items.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    KEEL_ASSIGN_OR_RETURN(GgufValue item, parse_value(elem, depth, what));
    arr->items.push_back(std::move(item));
  }
  GgufValue v;
  v.type = GgufType::kArray;
  v.value = std::move(arr);
  return v;
}

Status GgufParser::read_alignment() {
  const GgufValue* v = out_->find("general.alignment");
  if (v == nullptr) return {};
  if (v->type != GgufType::kUint32) {
    return make_error(ErrorCode::kCorruptFile, "general.alignment must be a uint32 (type tag {})",
                      static_cast<uint32_t>(v->type));
  }
  const uint64_t a = std::get<uint64_t>(v->value);
  if (a == 0 || !std::has_single_bit(a)) {
    return make_error(ErrorCode::kCorruptFile, "general.alignment {} is not a power of two", a);
  }
  out_->alignment_ = a;
  return {};
}

Status GgufParser::parse_tensor_infos(uint64_t n_tensors) {
  out_->tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    KEEL_ASSIGN_OR_RETURN(GgufTensorInfo info, parse_tensor_info(i));
    if (out_->tensor_index_.contains(info.name)) {
      return make_error(ErrorCode::kCorruptFile, "tensor '{}' appears twice", info.name);
    }
    out_->tensor_index_.emplace(info.name, out_->tensors_.size());
    out_->tensors_.push_back(std::move(info));
  }
  return {};
}

Result<GgufTensorInfo> GgufParser::parse_tensor_info(uint64_t index) {
  GgufTensorInfo info;
  KEEL_ASSIGN_OR_RETURN(std::string_view name, cur_.read_string(fmt::format("tensor #{} name", index)));
  info.name = std::string(name);
  const std::string what = fmt::format("tensor '{}'", info.name);
  KEEL_ASSIGN_OR_RETURN(uint32_t n_dims, cur_.read<uint32_t>(what));
  if (n_dims > static_cast<uint32_t>(tensor::kMaxDims)) {
    return make_error(ErrorCode::kCorruptFile, "{} has {} dimensions (at most {})", what, n_dims, tensor::kMaxDims);
  }
  // ne[] is innermost first; keel's Shape is outermost first.
  info.shape.rank = static_cast<int>(n_dims);
  // The product of the non-zero dimensions must fit: a zero dimension would otherwise hide an overflow from
  // this check while Shape::numel(), multiplying in its own order, still overflows before reaching it.
  int64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    KEEL_ASSIGN_OR_RETURN(uint64_t ne, cur_.read<uint64_t>(what));
    if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (ne != 0 && __builtin_mul_overflow(numel, static_cast<int64_t>(ne), &numel))) {
      return make_error(ErrorCode::kCorruptFile, "{}: dimension {} = {} overflows the element count", what, d, ne);
    }
    info.shape.dims[n_dims - 1 - d] = static_cast<int64_t>(ne);
  }
  KEEL_ASSIGN_OR_RETURN(uint32_t ggml_type, cur_.read<uint32_t>(what));
  std::optional<tensor::DType> dtype = tensor::dtype_from_ggml_type(ggml_type);
  if (!dtype) {
    return make_error(ErrorCode::kUnsupported, "{} has ggml type {} ({}), which keel does not read", what, ggml_type,
                      tensor::ggml_type_name(ggml_type));
  }
  info.dtype = *dtype;
  KEEL_ASSIGN_OR_RETURN(info.offset, cur_.read<uint64_t>(what));
  const int64_t row_len = info.shape.row_len();
  const int64_t block = tensor::block_size(info.dtype);
  if (row_len % block != 0) {
    return make_error(ErrorCode::kCorruptFile, "{}: innermost dimension {} is not a multiple of {}'s block size {}",
                      what, row_len, tensor::dtype_name(info.dtype), block);
  }
  // row_size_bytes() would wrap silently on a hostile row length, so multiply with checks here.
  uint64_t row_bytes = 0;
  uint64_t size = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(row_len / block), tensor::dtype_info(info.dtype).block_bytes,
                             &row_bytes) ||
      __builtin_mul_overflow(static_cast<uint64_t>(info.shape.n_rows()), row_bytes, &size)) {
    return make_error(ErrorCode::kCorruptFile, "{}: byte size overflows", what);
  }
  info.size_bytes = static_cast<size_t>(size);
  if (info.offset % out_->alignment_ != 0) {
    return make_error(ErrorCode::kCorruptFile, "{}: offset {} is not a multiple of the alignment {}", what, info.offset,
                      out_->alignment_);
  }
  return info;
}

Status GgufParser::place_data_section() {
  const uint64_t infos_end = cur_.pos();
  const uint64_t data_start = (infos_end + out_->alignment_ - 1) / out_->alignment_ * out_->alignment_;
  const uint64_t data_size = data_start <= bytes_.size() ? bytes_.size() - data_start : 0;
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(out_->tensors_.size());
  for (const GgufTensorInfo& t : out_->tensors_) {
    if (t.offset > data_size || t.size_bytes > data_size - t.offset) {
      return make_error(ErrorCode::kCorruptFile,
                        "tensor '{}' bytes [{}, {}) run past the end of the data section ({} bytes at file offset {})",
                        t.name, t.offset, t.offset + t.size_bytes, data_size, data_start);
    }
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
    return std::pair(a->offset, a->size_bytes) < std::pair(b->offset, b->size_bytes);
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& prev = *by_offset[i - 1];
    if (prev.offset + prev.size_bytes > by_offset[i]->offset) {
      return make_error(ErrorCode::kCorruptFile, "tensors '{}' and '{}' overlap", prev.name, by_offset[i]->name);
    }
  }
  // A file without tensor data may end before the padding that would start the data section.
  if (data_start <= bytes_.size()) out_->data_ = bytes_.subspan(static_cast<size_t>(data_start));
  return {};
}

}  // namespace keel::format
