// safetensors reader: one file or a sharded set (`model.safetensors.index.json`). The JSON header
// is validated (dtype, shape, offsets inside the data, no overlaps, size == numel * dtype size),
// tensors are zero-copy views into the mapped files. Immutable after open: any thread may read.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/tensor_view.h"

namespace keel::format {

struct SafetensorsTensor {
  std::string name;
  tensor::TensorView view;
};

class SafetensorsSet {
 public:
  // `path` is a .safetensors file, an index .json, or a folder holding either
  // (model.safetensors.index.json preferred, else model.safetensors, else the only *.safetensors).
  static Result<SafetensorsSet> open(const std::string& path);
  // Parses one file's bytes that the caller keeps alive (fuzzing, tests).
  static Result<SafetensorsSet> parse(std::span<const uint8_t> bytes);

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const tensor::TensorView* find(std::string_view name) const;
  // __metadata__ string pairs of the first file.
  const std::unordered_map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<std::string, std::string> metadata_;

  friend class SafetensorsParser;
};

}  // namespace keel::format
