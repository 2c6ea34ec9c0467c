// Device memory for the CUDA backend. DevicePool: plain cudaMalloc (never managed memory) with freed
// blocks kept per rounded size for reuse. HostStaging: host spans (ids, positions, slots, plans) copied
// to the device through a pinned buffer, bump-allocated and reset at each synchronize (or, without
// waiting, at rotate(): two pinned halves take turns, so the host can stage step N+1 while step N's
// copies may still be queued; the device side is one buffer, its reuse ordered by the stream); a span staged
// earlier in the same epoch with the same address and contents is not copied again (the model passes
// the same positions/slots to every layer). Both are owned by CudaBackend and used by its one thread.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

namespace keel::backend::cuda {

class DevicePool : public std::enable_shared_from_this<DevicePool> {
 public:
  ~DevicePool();
  // At least n_bytes of device memory (256-byte aligned); returned to the pool when released.
  std::shared_ptr<void> allocate(size_t n_bytes);
  size_t bytes_in_use() const;

 private:
  void release(void* p, size_t rounded);
  mutable std::mutex mu_;  // Buffers may be destroyed on another thread than the model thread.
  std::multimap<size_t, void*> free_;
  size_t in_use_bytes_ = 0;
};

class HostStaging {
 public:
  explicit HostStaging(cudaStream_t stream) : stream_(stream) {}
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Makes room for an op's stagings (at most n_spans spans of n_bytes in all), waiting for the
  // copies in flight if the buffer must start over. Call before the op's first stage().
  void begin_op(size_t n_bytes, size_t n_spans);
  // Device copy of `bytes` (valid until the next reset()); the copy is queued on the stream.
  const void* stage(const void* host, size_t n_bytes);
  template <typename T>
  const T* stage(std::span<const T> s) {
    return static_cast<const T*>(stage(s.data(), s.size_bytes()));
  }
  // Whether the same bytes at the same address were staged since the last reset (no copy needed).
  bool holds(const void* host, size_t n_bytes) const;
  // Like stage(), placed from the end of the buffer down: spans whose size changes from step to step
  // (context slot lists) go there in graph steps, so the front offsets stay the same for a replay.
  const void* stage_tail(const void* host, size_t n_bytes);
  // Deferred (graph capture and replay): stage() queues no copies; flush() queues the front and the
  // tail region in two copies before the graph launch.
  void set_deferred(bool deferred) { deferred_ = deferred; }
  void flush();
  // Bytes asked for by begin_op since the last reset; reserve(): capacity for at least n bytes (waits
  // for the stream and starts over when it must grow).
  size_t requested() const { return requested_; }
  void reserve(size_t n_bytes);
  bool spilled() const { return spilled_; }  // a deferred step ran out of room (and started over)
  size_t used() const { return used_ + (capacity_ - tail_); }
  // Call after the stream has been synchronized: every staged copy has landed.
  void reset();
  // Starts a new epoch without synchronizing the stream: the other pinned half, once the copies queued
  // from it (two epochs ago) have landed (an event; normally long since).
  void rotate();

 private:
  struct Entry {
    size_t n_bytes;
    size_t offset;
  };
  void grow(size_t need);
  const void* stage_at(const void* host, size_t n_bytes, bool tail);
  cudaStream_t stream_;
  uint8_t* pinned_ = nullptr;  // the current half: half_[cur_]
  uint8_t* half_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};  // recorded when an epoch of that half ends
  int cur_ = 0;
  uint8_t* device_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;  // front: [0, used_)
  size_t tail_ = 0;  // tail: [tail_, capacity_)
  size_t requested_ = 0;
  bool deferred_ = false;
  bool spilled_ = false;
  std::unordered_map<const void*, Entry> memo_;  // by host address
};

}  // namespace keel::backend::cuda
