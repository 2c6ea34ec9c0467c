// Read-only memory map of a whole file (model weights, tokenizer files). Start-up maps instead of
// copying, so weights page in on first touch and are shared by the page cache. Move-only; the
// mapping lives until the object dies. Any thread may read the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace keel {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_bytes_}; }
  const uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
  std::string path_;
};

// Reads a whole (small) file into a string: configs, tokenizer.json, templates.
Result<std::string> read_text_file(const std::string& path);

}  // namespace keel
