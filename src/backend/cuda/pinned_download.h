// PinnedDownload: device -> pageable host copies of large buffers (the logits rows a forward returns)
// through a pinned buffer, in chunks: every chunk's DMA is queued at once, and the host copies chunk i
// out of the pinned buffer while the later chunks are still in flight. A plain cudaMemcpy into pageable
// memory goes through the driver's own staging (synchronous, smaller chunks). KEEL_CUDA_PINNED_COPY=0
// turns it off (A/B runs). Used by CudaBackend::copy_to_host on its one thread.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace keel::backend::cuda {

class PinnedDownload {
 public:
  PinnedDownload() = default;
  ~PinnedDownload();
  PinnedDownload(const PinnedDownload&) = delete;
  PinnedDownload& operator=(const PinnedDownload&) = delete;

  // Copies may take this path (large enough to gain, and switched on).
  static bool wanted(size_t n_bytes);
  // dst[0, n_bytes) = src[0, n_bytes) after the work queued on `stream`; returns when dst holds it.
  void copy(void* dst, const void* src, size_t n_bytes, cudaStream_t stream);

 private:
  static constexpr int kMaxChunks = 8;
  char* pinned_ = nullptr;
  size_t cap_ = 0;
  cudaEvent_t done_[kMaxChunks] = {};
};

}  // namespace keel::backend::cuda
