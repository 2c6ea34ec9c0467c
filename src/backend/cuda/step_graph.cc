#include "backend/cuda/step_graph.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"

namespace keel::backend::cuda {
namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

float median(std::vector<float> v) {
  if (v.empty()) return 0.0f;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

int64_t graph_bucket(int64_t n) {
  if (n <= 0 || n > kMaxGraphTokens) return 0;
  if (n <= 8) return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(n)));
  return (n + 15) / 16 * 16;
}

StepGraph::~StepGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

StepTimer::StepTimer(cudaStream_t stream) : enabled_(env_is("KEEL_CUDA_STEP_TIMES", "1")), stream_(stream) {
  if (!enabled_) return;
  for (auto& pair : ev_) {
    for (auto& e : pair) KEEL_CUDA_CHECK(cudaEventCreate(&e));
  }
}

StepTimer::~StepTimer() {
  if (!enabled_) return;
  report();
  for (auto& pair : ev_) {
    for (auto& e : pair) cudaEventDestroy(e);
  }
}

void StepTimer::begin(const std::string& phase) {
  begun_ = Clock::now();
  if (phase != phase_) {
    report();
    phase_ = phase;
    n_ = 0;
  }
  KEEL_CUDA_CHECK(cudaEventRecord(ev_[n_ % 3][0], stream_));
  if (n_ >= 2) {
    // Step n-2 and the start of step n-1, measured one step late so that timing never waits for the
    // stream (overlap scheduling queues step n before step n-1 ends). The GPU reached the start of
    // step n-1 right after step n-2's sampled tokens, which the host has read by now, so this wait is
    // nothing. (end of n-2 -> start of n-1) is the time the GPU had nothing of this stream to run.
    const int64_t a = (n_ - 2) % 3, b = (n_ - 1) % 3;
    KEEL_CUDA_CHECK(cudaEventSynchronize(ev_[b][0]));
    float busy = 0, gap = 0;
    KEEL_CUDA_CHECK(cudaEventElapsedTime(&busy, ev_[a][0], ev_[a][1]));
    KEEL_CUDA_CHECK(cudaEventElapsedTime(&gap, ev_[a][1], ev_[b][0]));
    busy_ms_.push_back(busy);
    gap_ms_.push_back(gap);
  }
  ++n_;
}

void StepTimer::restart() {
  if (n_ > 0) KEEL_CUDA_CHECK(cudaEventRecord(ev_[(n_ - 1) % 3][0], stream_));
  host_ms_.push_back(static_cast<float>(ms_since(begun_)));
}

void StepTimer::end() {
  if (n_ > 0) KEEL_CUDA_CHECK(cudaEventRecord(ev_[(n_ - 1) % 3][1], stream_));
}

void StepTimer::note(const std::string& line) {
  if (enabled_) notes_.push_back(line);
}

void StepTimer::report() {
  for (const std::string& n : notes_) std::fprintf(stderr, "[cuda steps] %s\n", n.c_str());
  notes_.clear();
  if (!busy_ms_.empty()) {
    const float b = median(busy_ms_), g = median(gap_ms_);
    double gap_sum = 0, busy_sum = 0;
    for (size_t i = 0; i < gap_ms_.size(); ++i) {
      gap_sum += gap_ms_[i];
      busy_sum += busy_ms_[i];
    }
    std::fprintf(stderr,
                 "[cuda steps] %s: %zu steps, GPU time per step median %.3f ms (mean %.3f ms), GPU idle between "
                 "steps median %.3f ms (mean %.3f ms), idle %.1f%% of the GPU's wall time\n",
                 phase_.c_str(), busy_ms_.size(), b, busy_sum / static_cast<double>(busy_ms_.size()), g,
                 gap_sum / static_cast<double>(gap_ms_.size()), 100.0 * gap_sum / (gap_sum + busy_sum));
  }
  if (!host_ms_.empty()) {
    std::fprintf(stderr, "[cuda steps] %s: host time from the step's start to its graph launch median %.3f ms\n",
                 phase_.c_str(), median(host_ms_));
  }
  host_ms_.clear();
  busy_ms_.clear();
  gap_ms_.clear();
}

int64_t CudaBackend::step_graph_bucket(int64_t n_tokens) const {
  if (prof_->enabled() || env_is("KEEL_CUDA_GRAPHS", "0")) return 0;
  return graph_bucket(n_tokens);
}

void CudaBackend::run_step(int64_t graph_key, const std::function<void()>& issue) {
  // Spans staged before the step (the last sampling's rows): start the step in a fresh epoch without
  // waiting for the stream, so the host queues this step while the previous one runs (overlap).
  if (staging_->used() != 0) staging_->rotate();
  if (timer_->enabled()) {  // the phase also says where the previous step was sampled
    timer_->begin((graph_key > 0 ? "graph n=" + std::to_string(graph_key) : std::string("eager")) +
                  (sampled_on_device_ ? ", sampling on the device" : ""));
  }
  sampled_on_device_ = false;
  if (graph_key > 0) {
    graph_plan_ = true;
    replay_or_capture(graph_key, issue);
    graph_plan_ = false;
  } else {
    issue();
  }
  if (timer_->enabled()) timer_->end();
}

void CudaBackend::replay_or_capture(int64_t key, const std::function<void()>& issue) {
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    sig_.clear();
    mode_ = GraphMode::kCheck;
    staging_->set_deferred(true);
    issue();
    staging_->set_deferred(false);
    mode_ = GraphMode::kEager;
    if (!staging_->spilled() && sig_ == it->second.sig()) {
      // The replay check above was host work: the step's GPU work starts with the copies below.
      if (timer_->enabled()) timer_->restart();
      staging_->flush();
      KEEL_CUDA_CHECK(cudaGraphLaunch(it->second.exec(), stream_));
      return;
    }
    timer_->note("graph n=" + std::to_string(key) + ": launch arguments changed, captured again");
    graphs_.erase(it);
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    staging_->reset();
  }
  // First use of this key: run the step eagerly (its results), then capture the same ops for the next.
  const auto t0 = Clock::now();
  issue();
  KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const double eager_ms = ms_since(t0);
  staging_->reserve(2 * staging_->requested() + 4096);  // a capture must never wait for the stream
  staging_->reset();
  const auto t1 = Clock::now();
  sig_.clear();
  mode_ = GraphMode::kCapture;
  staging_->set_deferred(true);
  cudaGraph_t graph = nullptr;
  KEEL_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  issue();
  KEEL_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  staging_->set_deferred(false);
  mode_ = GraphMode::kEager;
  const double capture_ms = ms_since(t1);
  const auto t2 = Clock::now();
  size_t n_nodes = 0;
  KEEL_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n_nodes));
  cudaGraphExec_t exec = nullptr;
  KEEL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  KEEL_CUDA_CHECK(cudaGraphDestroy(graph));
  const double inst_ms = ms_since(t2);
  const bool ok = !staging_->spilled();
  staging_->reset();
  StepGraph g(exec, std::move(sig_));
  sig_.clear();
  if (ok) graphs_.emplace(key, std::move(g));
  capture_ms_total_ += capture_ms + inst_ms;
  timer_->note("graph n=" + std::to_string(key) + ": " + std::to_string(n_nodes) + " nodes, eager step " +
               std::to_string(eager_ms) + " ms, capture " + std::to_string(capture_ms) + " ms, instantiate " +
               std::to_string(inst_ms) + " ms");
}

}  // namespace keel::backend::cuda
