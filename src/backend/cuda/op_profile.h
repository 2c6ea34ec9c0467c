// OpProfile: optional per-op GPU timing for the CUDA backend (KEEL_CUDA_PROFILE=1 in the environment).
// Each op is bracketed by CUDA events; at every synchronize() the elapsed times are added up per op
// name, with the wall time from the first op after the last sync, so GPU-busy vs host-bound steps show.
// The table goes to stderr when the backend is destroyed. Owned by CudaBackend; its thread only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace keel::backend::cuda {

class OpProfile {
 public:
  explicit OpProfile(cudaStream_t stream);
  ~OpProfile();
  bool enabled() const { return enabled_; }
  void begin(const char* name);
  void end();
  void collect();  // after the stream was synchronized

 private:
  struct Pending {
    const char* name;
    cudaEvent_t start, stop;
  };
  struct Total {
    double ms = 0;
    int64_t calls = 0;
  };
  cudaEvent_t event();
  void print() const;

  cudaStream_t stream_;
  bool enabled_ = false;
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> free_;
  std::map<std::string, Total> totals_;
  int64_t step_start_us_ = -1;
  double wall_ms_ = 0;
  int64_t n_steps_ = 0;
};

// Brackets one op when profiling is on.
class ScopedOp {
 public:
  ScopedOp(OpProfile& p, const char* name) : p_(p) {
    if (p_.enabled()) p_.begin(name);
  }
  ~ScopedOp() {
    if (p_.enabled()) p_.end();
  }
  ScopedOp(const ScopedOp&) = delete;
  ScopedOp& operator=(const ScopedOp&) = delete;

 private:
  OpProfile& p_;
};

}  // namespace keel::backend::cuda
