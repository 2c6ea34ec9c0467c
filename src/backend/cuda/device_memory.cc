#include "backend/cuda/device_memory.h"

#include <cstring>

#include "backend/cuda/cuda_check.h"

namespace keel::backend::cuda {
namespace {

constexpr size_t kAlign = 256;

size_t round_size(size_t n) {
  constexpr size_t kSmall = size_t{1} << 20, kGranule = size_t{2} << 20;
  if (n <= kSmall) {  // small: powers of two, so scratch that grows reuses blocks
    size_t r = kAlign;
    while (r < n) r <<= 1;
    return r;
  }
  return (n + kGranule - 1) & ~(kGranule - 1);  // large: 2 MiB granularity (size_t: blocks pass 4 GiB)
}

}  // namespace

DevicePool::~DevicePool() {
  for (auto& [size, p] : free_) cudaFree(p);
}

std::shared_ptr<void> DevicePool::allocate(size_t n_bytes) {
  const size_t rounded = round_size(n_bytes == 0 ? 1 : n_bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it != free_.end()) {
      p = it->second;
      free_.erase(it);
    }
    in_use_bytes_ += rounded;
  }
  if (p == nullptr) {
    cudaError_t err = cudaMalloc(&p, rounded);
    if (err == cudaErrorMemoryAllocation) {  // give cached blocks back and try once more
      cudaGetLastError();
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [size, q] : free_) KEEL_CUDA_CHECK(cudaFree(q));
      free_.clear();
      err = cudaMalloc(&p, rounded);
    }
    KEEL_CHECK(err == cudaSuccess, "cudaMalloc of {} bytes: {}", rounded, cudaGetErrorString(err));
  }
  std::weak_ptr<DevicePool> pool = weak_from_this();
  return std::shared_ptr<void>(p, [pool, rounded](void* q) {
    if (auto live = pool.lock()) {
      live->release(q, rounded);
    } else {
      cudaFree(q);
    }
  });
}

void DevicePool::release(void* p, size_t rounded) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.emplace(rounded, p);
  in_use_bytes_ -= rounded;
}

size_t DevicePool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_bytes_;
}

HostStaging::~HostStaging() {
  for (int h = 0; h < 2; ++h) {
    if (half_[h] != nullptr) cudaFreeHost(half_[h]);
    if (done_[h] != nullptr) cudaEventDestroy(done_[h]);
  }
  if (device_ != nullptr) cudaFree(device_);
}

void HostStaging::grow(size_t need) {
  // Copies in flight read the old buffers: wait for them before freeing.
  KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  size_t cap = capacity_ == 0 ? (1u << 20) : capacity_;
  while (cap < need) cap *= 2;
  for (int h = 0; h < 2; ++h) {
    if (half_[h] != nullptr) KEEL_CUDA_CHECK(cudaFreeHost(half_[h]));
    KEEL_CUDA_CHECK(cudaMallocHost(&half_[h], cap));
    if (done_[h] == nullptr) KEEL_CUDA_CHECK(cudaEventCreateWithFlags(&done_[h], cudaEventDisableTiming));
  }
  pinned_ = half_[cur_];
  if (device_ != nullptr) KEEL_CUDA_CHECK(cudaFree(device_));
  KEEL_CUDA_CHECK(cudaMalloc(&device_, cap));
  capacity_ = cap;
  used_ = 0;
  tail_ = cap;
  memo_.clear();
}

bool HostStaging::holds(const void* host, size_t n_bytes) const {
  auto it = memo_.find(host);
  return it != memo_.end() && it->second.n_bytes == n_bytes &&
         std::memcmp(pinned_ + it->second.offset, host, n_bytes) == 0;
}

const void* HostStaging::stage_at(const void* host, size_t n_bytes, bool tail) {
  if (auto it = memo_.find(host); it != memo_.end()) {
    const Entry& e = it->second;
    if (e.n_bytes == n_bytes && std::memcmp(pinned_ + e.offset, host, n_bytes) == 0) return device_ + e.offset;
  }
  const size_t rounded = (n_bytes + 15) & ~size_t{15};
  KEEL_CHECK(used_ + rounded <= tail_, "staging: {} bytes past the room begin_op made", n_bytes);
  size_t offset = used_;
  if (tail) {
    tail_ -= rounded;
    offset = tail_;
  } else {
    used_ += rounded;
  }
  if (n_bytes > 0) {
    std::memcpy(pinned_ + offset, host, n_bytes);
    if (!deferred_) {
      KEEL_CUDA_CHECK(cudaMemcpyAsync(device_ + offset, pinned_ + offset, n_bytes, cudaMemcpyHostToDevice, stream_));
    }
  }
  memo_[host] = {n_bytes, offset};
  return device_ + offset;
}

const void* HostStaging::stage(const void* host, size_t n_bytes) { return stage_at(host, n_bytes, false); }

const void* HostStaging::stage_tail(const void* host, size_t n_bytes) { return stage_at(host, n_bytes, true); }

void HostStaging::flush() {
  if (used_ > 0) {
    KEEL_CUDA_CHECK(cudaMemcpyAsync(device_, pinned_, used_, cudaMemcpyHostToDevice, stream_));
  }
  if (tail_ < capacity_) {
    KEEL_CUDA_CHECK(
        cudaMemcpyAsync(device_ + tail_, pinned_ + tail_, capacity_ - tail_, cudaMemcpyHostToDevice, stream_));
  }
}

void HostStaging::reserve(size_t n_bytes) {
  if (n_bytes > capacity_) grow(n_bytes);
}

void HostStaging::begin_op(size_t n_bytes, size_t n_spans) {
  const size_t need = n_bytes + 16 * n_spans;
  requested_ += need;
  if (used_ + need <= tail_) return;
  spilled_ = spilled_ || deferred_;  // deferred stagings of this step are lost: the caller must not replay
  if (need <= capacity_) {  // full: wait for the queued copies, then start over
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    used_ = 0;
    tail_ = capacity_;
    memo_.clear();
  } else {
    grow(need);
  }
}

void HostStaging::rotate() {
  if (capacity_ == 0) return reset();
  KEEL_CUDA_CHECK(cudaEventRecord(done_[cur_], stream_));
  cur_ ^= 1;
  pinned_ = half_[cur_];
  KEEL_CUDA_CHECK(cudaEventSynchronize(done_[cur_]));  // never recorded: returns at once
  reset();
}

void HostStaging::reset() {
  used_ = 0;
  tail_ = capacity_;
  requested_ = 0;
  spilled_ = false;
  memo_.clear();
}

}  // namespace keel::backend::cuda
