#include "router/chunked_decoder.h"

#include <algorithm>

namespace keel::router {

namespace {

constexpr int kMaxSizeDigits = 15;       // < 2^60: no overflow
constexpr int64_t kMaxLineBytes = 4096;  // a chunk extension or trailer line

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

ChunkedDecoder::State ChunkedDecoder::feed(std::string_view bytes,
                                           const std::function<void(std::string_view)>& on_data) {
  size_t i = 0;
  while (i < bytes.size() && state_ == State::kOk) {
    const char c = bytes[i];
    switch (part_) {
      case Part::kSize: {
        const int v = hex_value(c);
        if (v >= 0) {
          if (++digits_ > kMaxSizeDigits) return fail();
          size_ = size_ * 16 + static_cast<uint64_t>(v);
        } else if (digits_ == 0) {
          return fail();
        } else if (c == ';' || c == ' ' || c == '\t') {
          part_ = Part::kExtension;
          line_ = 0;
        } else if (c == '\r') {
          part_ = Part::kSizeLf;
        } else {
          return fail();
        }
        ++i;
        break;
      }
      case Part::kExtension:
        if (c == '\r') {
          part_ = Part::kSizeLf;
        } else if (++line_ > kMaxLineBytes) {
          return fail();
        }
        ++i;
        break;
      case Part::kSizeLf:
        if (c != '\n') return fail();
        ++i;
        digits_ = 0;
        if (size_ == 0) {
          part_ = Part::kTrailer;
          line_ = 0;
        } else {
          part_ = Part::kData;
        }
        break;
      case Part::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(size_, bytes.size() - i));
        on_data(bytes.substr(i, n));
        i += n;
        size_ -= n;
        if (size_ == 0) part_ = Part::kDataCr;
        break;
      }
      case Part::kDataCr:
        if (c != '\r') return fail();
        part_ = Part::kDataLf;
        ++i;
        break;
      case Part::kDataLf:
        if (c != '\n') return fail();
        part_ = Part::kSize;
        ++i;
        break;
      case Part::kTrailer:  // trailer lines until an empty one
        if (c == '\r') {
          part_ = Part::kTrailerLf;
        } else if (++line_ > kMaxLineBytes) {
          return fail();
        }
        ++i;
        break;
      case Part::kTrailerLf:
        if (c != '\n') return fail();
        ++i;
        if (line_ == 0) {
          part_ = Part::kEnd;
          return state_ = State::kDone;
        }
        part_ = Part::kTrailer;
        line_ = 0;
        break;
      case Part::kEnd: return state_ = State::kDone;
    }
  }
  return state_;
}

}  // namespace keel::router
