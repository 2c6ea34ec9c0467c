// Parses GGUF bytes into a GgufFile (gguf.h): header, metadata, tensor infos, data section.
// Internal to format/: GgufFile::open/parse are the public entry points. A parser is used once,
// by one thread, over bytes that outlive the GgufFile it fills.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "format/byte_cursor.h"
#include "format/gguf.h"

namespace keel::format {

class GgufParser {
 public:
  // Nested arrays deeper than this are rejected (the spec allows nesting; real files use none).
  static constexpr int kMaxArrayDepth = 8;

  explicit GgufParser(std::span<const uint8_t> bytes) : bytes_(bytes), cur_(bytes) {}

  // Fills `out` (metadata, tensors, data section); `out` is left partially filled on error.
  Status parse(GgufFile& out);

 private:
  Status parse_header(uint64_t& n_tensors, uint64_t& n_kv);
  Status parse_metadata(uint64_t n_kv);
  Result<GgufValue> parse_value(GgufType type, int depth, std::string_view key);
  Result<GgufValue> parse_array(int depth, std::string_view key);
  Status read_alignment();
  Status parse_tensor_infos(uint64_t n_tensors);
  Result<GgufTensorInfo> parse_tensor_info(uint64_t index);
  Status place_data_section();

  std::span<const uint8_t> bytes_;
  ByteCursor cur_;
  GgufFile* out_ = nullptr;
};

}  // namespace keel::format
