// GGUF reader (versions 2 and 3): header, every metadata value type (incl. nested arrays),
// tensor infos, alignment (`general.alignment`), and zero-copy tensor views into the mapped file.
// Everything is validated at open: offsets, sizes and counts are bounds-checked against the file,
// so a truncated or corrupt file is a Status (kCorruptFile), never a crash.
// Immutable after open: any thread may read it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/tensor_view.h"

namespace keel::format {

// GGUF's metadata value type tags (gguf spec numbering).
enum class GgufType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

struct GgufValue;
struct GgufArray {
  GgufType elem_type = GgufType::kUint8;
  std::vector<GgufValue> items;
};

struct GgufValue {
  GgufType type = GgufType::kUint8;
  // Integers of every width widen to int64_t/uint64_t, floats to double.
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<GgufArray>> value;
};

struct GgufTensorInfo {
  std::string name;
  tensor::DType dtype = tensor::DType::kF32;
  tensor::Shape shape;       // outermost first (reversed from GGUF's ne[])
  uint64_t offset = 0;       // relative to the start of the data section
  size_t size_bytes = 0;
};

class GgufFile {
 public:
  // Maps the file and parses it; the views stay valid while the GgufFile lives.
  static Result<GgufFile> open(const std::string& path);
  // Parses bytes the caller keeps alive (fuzzing, tests). Tensor data is bounds-checked too.
  static Result<GgufFile> parse(std::span<const uint8_t> bytes);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& path() const { return path_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: kNotFound if absent, kCorruptFile if present with an incompatible type.
  // get_int accepts any integer type (range-checked), get_float any integer or float type.
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  tensor::TensorView tensor_view(const GgufTensorInfo& info) const;

  // The bytes of the tensor data section (for page-in/prefetch and size accounting).
  std::span<const uint8_t> data_section() const { return data_; }

 private:
  std::shared_ptr<MappedFile> file_;  // null when parsed from caller-owned bytes
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
  std::span<const uint8_t> data_;

  friend class GgufParser;
};

}  // namespace keel::format
