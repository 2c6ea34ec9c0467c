// keel_gemv_bench: the decode GEMV (gemv.cu) alone on the Llama-3-8B projection shapes at 1 token (and 2,
// 4, 8): GB/s of weights streamed against the 3.96 TB/s device-copy ceiling (shared/GPU.md). Each shape
// gets enough weight copies to fill >= 512 MiB and each launch reads the next copy, so the 60 MB L2
// holds none of a launch's weights. Two timings: event-timed median of single launches (launch and
// ramp included, as in an eager step) and a CUDA graph of 64 launches back to back (per launch, as in a
// decode-step graph: the gaps between graph nodes included).
// Usage: keel_gemv_bench
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cuda/kernels.cuh"

namespace {

using namespace keel::backend::cuda;

constexpr double kCopyBytesPerS = 3.96e12;  // shared/GPU.md: 16-byte copy kernel, H200

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Shape {
  const char* name;
  int64_t k;
  std::vector<int64_t> m;  // segments sharing x (one launch)
};

void run(const Shape& sh, int n, void* x, void* out) {
  int64_t m_total = 0;
  for (int64_t m : sh.m) m_total += m;
  const size_t bytes = static_cast<size_t>(m_total * sh.k) * 2;
  const int copies = static_cast<int>(std::max<size_t>(2, ((size_t{512} << 20) + bytes - 1) / bytes));
  void* w = nullptr;
  check(cudaMalloc(&w, bytes * static_cast<size_t>(copies)), "weights");
  check(cudaMemset(w, 0x3c, bytes * static_cast<size_t>(copies)), "fill");
  auto group = [&](int c) {
    GemvGroup g{};
    auto* base = static_cast<char*>(w) + bytes * static_cast<size_t>(c);
    int64_t row = 0;
    for (size_t s = 0; s < sh.m.size(); ++s) {
      g.w[s] = base + static_cast<size_t>(row * sh.k) * 2;
      g.bias[s] = nullptr;
      g.out[s] = static_cast<char*>(out) + static_cast<size_t>(row * n) * 2;
      g.m[s] = sh.m[s];
      row += sh.m[s];
    }
    g.n_seg = static_cast<int>(sh.m.size());
    return g;
  };
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  std::vector<float> ms;
  for (int rep = 0; rep < 55; ++rep) {
    check(cudaEventRecord(e0, s), "record");
    launch_gemv_group(x, group(rep % copies), n, sh.k, ActType::kBF16, s);
    check(cudaEventRecord(e1, s), "record");
    check(cudaEventSynchronize(e1), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
    if (rep >= 5) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double single = ms[ms.size() / 2];
  constexpr int kLaunches = 64;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < kLaunches; ++i) launch_gemv_group(x, group(i % copies), n, sh.k, ActType::kBF16, s);
  check(cudaStreamEndCapture(s, &graph), "end capture");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  std::vector<float> gms;
  for (int rep = 0; rep < 12; ++rep) {
    check(cudaEventRecord(e0, s), "record");
    check(cudaGraphLaunch(exec, s), "graph launch");
    check(cudaEventRecord(e1, s), "record");
    check(cudaEventSynchronize(e1), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
    if (rep >= 2) gms.push_back(t / kLaunches);
  }
  std::sort(gms.begin(), gms.end());
  const double graphed = gms[gms.size() / 2];
  check(cudaGetLastError(), "gemv");
  const double floor_us = static_cast<double>(bytes) / kCopyBytesPerS * 1e6;
  std::printf("%-9s n=%d %6lld x %5lld %7.1f MB | single %7.2f us %5.2f TB/s | graph %7.2f us %5.2f TB/s %3.0f%% | "
              "floor %6.2f us\n",
              sh.name, n, static_cast<long long>(m_total), static_cast<long long>(sh.k), bytes / 1e6, single * 1e3,
              bytes / (single * 1e-3) / 1e12, graphed * 1e3, bytes / (graphed * 1e-3) / 1e12,
              100 * bytes / (graphed * 1e-3) / kCopyBytesPerS, floor_us);
  check(cudaGraphExecDestroy(exec), "destroy");
  check(cudaGraphDestroy(graph), "destroy");
  check(cudaEventDestroy(e0), "destroy");
  check(cudaEventDestroy(e1), "destroy");
  check(cudaStreamDestroy(s), "destroy");
  check(cudaFree(w), "free");
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  std::printf("decode GEMV (gemv.cu), bf16 weights, Llama-3-8B shapes, %s (%d SMs); %% of the %.2f TB/s copy ceiling\n",
              prop.name, prop.multiProcessorCount, kCopyBytesPerS / 1e12);
  const std::vector<Shape> shapes = {{"qkv", 4096, {4096, 1024, 1024}},
                                     {"o", 4096, {4096}},
                                     {"gate/up", 4096, {14336, 14336}},
                                     {"down", 14336, {4096}},
                                     {"lm_head", 4096, {128256}}};
  void *x = nullptr, *out = nullptr;
  check(cudaMalloc(&x, 8 * 14336 * 2), "x");
  check(cudaMemset(x, 0x3c, 8 * 14336 * 2), "fill x");
  check(cudaMalloc(&out, 8 * 128256 * 4), "out");
  for (int n : {1, 2, 4, 8}) {
    for (const Shape& sh : shapes) run(sh, n, x, out);
  }
  return 0;
}
