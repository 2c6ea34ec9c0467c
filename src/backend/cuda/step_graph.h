// Decode-step CUDA graphs and step timing for CudaBackend (run_step, step_graph_bucket).
// A step's ops are captured once per padded token count (the graph key) and replayed after that. A
// replay still runs the ops' host side (checks, plans, host spans written into the pinned staging
// buffer) but launches nothing: each op appends its launch arguments (device pointers, shapes) to a
// signature, and the graph is launched only when the signature equals the captured one, after one
// copy of the staged spans; otherwise the step runs eagerly and is captured again. Kernels read the
// spans (positions, slots, attention plans) from fixed device addresses, so the graph stays valid.
// StepTimer (KEEL_CUDA_STEP_TIMES=1): CUDA events around every step on the stream (its forward and,
// when it follows, its sampling) give the GPU time of a step and the GPU idle time between steps,
// printed per phase on stderr. Read one step late, so timing never makes the host wait for the GPU.
#pragma once

#include <cuda_runtime.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace keel::backend::cuda {

// One launch argument as a signature word.
template <typename T>
uint64_t sig_word(const T& v) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uintptr_t>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::bit_cast<uint32_t>(static_cast<float>(v));
  } else {
    return static_cast<uint64_t>(v);
  }
}

// Padded token count of a decode step of n tokens run as a graph (powers of two up to 8, then
// multiples of 16 up to kMaxGraphTokens), 0 above that.
inline constexpr int64_t kMaxGraphTokens = 256;
int64_t graph_bucket(int64_t n);

// An instantiated graph and the launch signature it was captured with. Move-only.
class StepGraph {
 public:
  StepGraph(cudaGraphExec_t exec, std::vector<uint64_t> sig) : exec_(exec), sig_(std::move(sig)) {}
  StepGraph(StepGraph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)), sig_(std::move(o.sig_)) {}
  StepGraph& operator=(StepGraph&&) = delete;
  StepGraph(const StepGraph&) = delete;
  ~StepGraph();
  cudaGraphExec_t exec() const { return exec_; }
  const std::vector<uint64_t>& sig() const { return sig_; }

 private:
  cudaGraphExec_t exec_;
  std::vector<uint64_t> sig_;
};

class StepTimer {
 public:
  explicit StepTimer(cudaStream_t stream);  // enabled by KEEL_CUDA_STEP_TIMES=1
  ~StepTimer();                             // prints the last phase
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  bool enabled() const { return enabled_; }
  // Around the work of one step on the stream. A new phase name prints the previous phase's summary.
  // restart() moves the step's start (a graph replay: after the host's launch-argument check);
  // end() may be called again (after the step's sampling) to move the step's end.
  void begin(const std::string& phase);
  void restart();
  void end();
  void note(const std::string& line);  // printed with the phase summary (e.g. capture times)

 private:
  void report();
  bool enabled_ = false;
  cudaStream_t stream_;
  cudaEvent_t ev_[3][2] = {};  // [step % 3][start, end]
  int64_t n_ = 0;              // steps begun in this phase
  std::string phase_;
  std::vector<float> busy_ms_, gap_ms_;
  std::vector<float> host_ms_;                   // graph replays: host time from begin() to restart()
  std::chrono::steady_clock::time_point begun_;  // the last begin()
  std::vector<std::string> notes_;
};

}  // namespace keel::backend::cuda
