// ChunkedDecoder: the body of an HTTP/1.1 response with `Transfer-Encoding: chunked`, cut out of the
// byte stream as it arrives (any split), for the peer links (peer_link.cc), which read their socket
// themselves. Chunk extensions and trailers are skipped. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace keel::router {

class ChunkedDecoder {
 public:
  enum class State { kOk, kDone, kError };
  // Calls on_data with each piece of chunk data in order; returns kDone after the last chunk and its
  // trailers (bytes after it are left alone), kError on a malformed size line or framing (and stays so).
  State feed(std::string_view bytes, const std::function<void(std::string_view)>& on_data);
  State state() const { return state_; }

 private:
  enum class Part { kSize, kExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kTrailerLf, kEnd };
  State fail() { return state_ = State::kError; }

  State state_ = State::kOk;
  Part part_ = Part::kSize;
  uint64_t size_ = 0;  // the chunk's size, then the bytes of it still to come
  int digits_ = 0;     // hex digits read of the size
  int64_t line_ = 0;   // bytes of the current extension or trailer line (bounded)
};

}  // namespace keel::router
