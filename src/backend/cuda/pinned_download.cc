#include "backend/cuda/pinned_download.h"

#include <algorithm>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

constexpr size_t kMinBytes = size_t{64} << 10;    // below this a direct copy costs about as much
constexpr size_t kChunkBytes = size_t{128} << 10;  // at least this much per chunk

}  // namespace

PinnedDownload::~PinnedDownload() {
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
  for (cudaEvent_t e : done_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

bool PinnedDownload::wanted(size_t n_bytes) {
  static const bool on = env_on("KEEL_CUDA_PINNED_COPY");
  return on && n_bytes >= kMinBytes;
}

void PinnedDownload::copy(void* dst, const void* src, size_t n_bytes, cudaStream_t stream) {
  if (n_bytes > cap_) {
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream));  // nothing of ours in flight into the old buffer
    if (pinned_ != nullptr) KEEL_CUDA_CHECK(cudaFreeHost(pinned_));
    pinned_ = nullptr;
    cap_ = std::max(n_bytes, 2 * cap_);
    KEEL_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned_), cap_));
  }
  if (done_[0] == nullptr) {
    for (cudaEvent_t& e : done_) KEEL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  const size_t n_chunks = std::clamp<size_t>(n_bytes / kChunkBytes, 1, kMaxChunks);
  const size_t chunk = (n_bytes / n_chunks + 15) / 16 * 16;
  const auto* s = static_cast<const char*>(src);
  for (size_t i = 0, off = 0; i < n_chunks; ++i, off += chunk) {
    const size_t len = std::min(chunk, n_bytes - off);
    KEEL_CUDA_CHECK(cudaMemcpyAsync(pinned_ + off, s + off, len, cudaMemcpyDeviceToHost, stream));
    KEEL_CUDA_CHECK(cudaEventRecord(done_[i], stream));
  }
  auto* d = static_cast<char*>(dst);
  for (size_t i = 0, off = 0; i < n_chunks; ++i, off += chunk) {
    KEEL_CUDA_CHECK(cudaEventSynchronize(done_[i]));
    std::memcpy(d + off, pinned_ + off, std::min(chunk, n_bytes - off));
  }
}

}  // namespace keel::backend::cuda
