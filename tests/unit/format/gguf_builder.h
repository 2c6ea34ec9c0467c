// Test helper: writes GGUF bytes field by field, so tests can build valid files and precise
// corruptions of them. Little-endian, as the GGUF spec requires. Test code only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"

namespace keel::format::test {

class GgufBuilder {
 public:
  std::vector<uint8_t> bytes;

  template <typename T>
  GgufBuilder& put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
  GgufBuilder& str(std::string_view s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  GgufBuilder& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
  GgufBuilder& key(std::string_view k, GgufType t) { return str(k).put<uint32_t>(static_cast<uint32_t>(t)); }
  GgufBuilder& kv_u32(std::string_view k, uint32_t v) { return key(k, GgufType::kUint32).put<uint32_t>(v); }
  GgufBuilder& kv_str(std::string_view k, std::string_view v) { return key(k, GgufType::kString).str(v); }
  // Tensor info: ne[] innermost first, as GGUF stores it.
  GgufBuilder& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t ggml_type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put<uint64_t>(d);
    return put<uint32_t>(ggml_type).put<uint64_t>(offset);
  }
  GgufBuilder& pad_to(uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  GgufBuilder& data(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  GgufBuilder& zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }

  Result<GgufFile> parse() const { return GgufFile::parse(bytes); }
};

}  // namespace keel::format::test
