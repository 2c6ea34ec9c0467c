#include "backend/cuda/op_profile.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "base/clock.h"

namespace keel::backend::cuda {

OpProfile::OpProfile(cudaStream_t stream) : stream_(stream) {
  const char* env = std::getenv("KEEL_CUDA_PROFILE");
  enabled_ = env != nullptr && std::strcmp(env, "0") != 0 && env[0] != '\0';
}

OpProfile::~OpProfile() {
  if (!enabled_) return;
  cudaStreamSynchronize(stream_);
  collect();
  print();
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

cudaEvent_t OpProfile::event() {
  if (free_.empty()) {
    cudaEvent_t e;
    KEEL_CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
  cudaEvent_t e = free_.back();
  free_.pop_back();
  return e;
}

void OpProfile::begin(const char* name) {
  if (step_start_us_ < 0) step_start_us_ = now_us();
  Pending p{name, event(), event()};
  KEEL_CUDA_CHECK(cudaEventRecord(p.start, stream_));
  pending_.push_back(p);
}

void OpProfile::end() { KEEL_CUDA_CHECK(cudaEventRecord(pending_.back().stop, stream_)); }

void OpProfile::collect() {
  if (!enabled_ || pending_.empty()) return;
  for (const Pending& p : pending_) {
    float ms = 0;
    KEEL_CUDA_CHECK(cudaEventElapsedTime(&ms, p.start, p.stop));
    Total& t = totals_[p.name];
    t.ms += ms;
    ++t.calls;
    free_.push_back(p.start);
    free_.push_back(p.stop);
  }
  pending_.clear();
  wall_ms_ += static_cast<double>(now_us() - step_start_us_) / 1e3;
  ++n_steps_;
  step_start_us_ = -1;
}

void OpProfile::print() const {
  double gpu_ms = 0;
  for (const auto& [name, t] : totals_) gpu_ms += t.ms;
  std::fprintf(stderr, "keel cuda profile: %lld syncs, GPU busy in ops %.2f ms of %.2f ms wall (%.0f%%)\n",
               static_cast<long long>(n_steps_), gpu_ms, wall_ms_, wall_ms_ > 0 ? 100 * gpu_ms / wall_ms_ : 0.0);
  for (const auto& [name, t] : totals_) {
    std::fprintf(stderr, "  %-14s %8lld calls %10.2f ms %8.1f us/call %5.1f%%\n", name.c_str(),
                 static_cast<long long>(t.calls), t.ms, 1e3 * t.ms / static_cast<double>(t.calls),
                 gpu_ms > 0 ? 100 * t.ms / gpu_ms : 0.0);
  }
}

}  // namespace keel::backend::cuda
