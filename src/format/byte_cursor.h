// A bounds-checked little-endian reader over caller-owned bytes, used by the GGUF parser. Every
// read checks the remaining length first and returns kCorruptFile naming the field and the byte
// offset, so parsers never read past the end of a truncated file. One parser thread owns a cursor.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

#include "base/status.h"

namespace keel::format {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t pos() const { return pos_; }
  size_t size_bytes() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }

  // Reads one trivially copyable little-endian value; `what` names the field in errors.
  template <typename T>
  Result<T> read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // Reads a view of n bytes (no copy); the view lives as long as the underlying bytes.
  Result<std::string_view> read_bytes(uint64_t n, std::string_view what) {
    if (n > remaining()) return truncated(what, n);
    std::string_view v(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return v;
  }

  // GGUF string: uint64 length, then that many bytes (UTF-8 by the spec, not checked here).
  Result<std::string_view> read_string(std::string_view what) {
    const size_t start = pos_;
    KEEL_ASSIGN_OR_RETURN(uint64_t n, read<uint64_t>(what));
    if (n > remaining()) {
      pos_ = start;
      return make_error(ErrorCode::kCorruptFile,
                        "{} at byte {}: string length {} runs past the end of the data ({} bytes left)", what, start, n,
                        remaining());
    }
    return read_bytes(n, what);
  }

 private:
  Status truncated(std::string_view what, uint64_t need) const {
    return make_error(ErrorCode::kCorruptFile, "{} at byte {}: need {} bytes, only {} left (truncated file?)", what,
                      pos_, need, remaining());
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace keel::format
