// keel_sample_bench: the device sampler (sampling.cu) alone at the Llama 3 vocabulary (128,256), batch 1
// and 64, on two kinds of logits rows: "flat" (N(0, 1): top-p's mass spread over most of the vocabulary)
// and "peaked" (N(0, 2) plus 40 tokens 6-14 above: a model's usual shape, top-p within a few hundred
// tokens). Each row kind and sampling setting is timed with the compact top-p path on and off
// (sample_set_topp_compact), in one run: event-timed median of 50 launches, and the tokens of the two
// paths compared (they must be equal).
// Usage: keel_sample_bench   (KEEL_SAMPLE_BENCH_ROWS=1 also times each row of the batches alone: a slow row
// is one that took the whole-row path)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/cuda/kernels.cuh"

namespace {

using namespace keel::backend::cuda;

constexpr int64_t kVocab = 128256;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

std::vector<float> make_rows(int rows, bool peaked, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, peaked ? 2.0f : 1.0f);
  std::vector<float> h(static_cast<size_t>(rows * kVocab));
  for (float& v : h) v = nd(rng);
  if (peaked) {
    for (int r = 0; r < rows; ++r) {
      for (int s = 0; s < 40; ++s) {
        h[static_cast<size_t>(r * kVocab) + rng() % kVocab] += 6.0f + static_cast<float>(s % 9);
      }
    }
  }
  return h;
}

struct Setting {
  const char* name;
  float t, top_p;
  int32_t top_k;
};

}  // namespace

int main() {
  const Setting settings[] = {{"greedy", 0.0f, 1.0f, 0}, {"T 0.7, top-p 0.9", 0.7f, 0.9f, 0},
                              {"T 1.0, top-p 0.95", 1.0f, 0.95f, 0}, {"T 0.7, top-k 50, top-p 0.9", 0.7f, 0.9f, 50}};
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  std::printf("| rows | batch | sampling | compact off (ms) | compact on (ms) | gain | same tokens |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  int failures = 0;
  for (bool peaked : {false, true}) {
    for (int batch : {1, 64}) {
      const std::vector<float> h = make_rows(batch, peaked, 42 + static_cast<uint64_t>(batch));
      float* logits = nullptr;
      check(cudaMalloc(&logits, h.size() * sizeof(float)), "logits");
      check(cudaMemcpy(logits, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
      SampleRowDev* rows_d = nullptr;
      int32_t *src_d = nullptr, *tok_d = nullptr;
      check(cudaMalloc(&rows_d, sizeof(SampleRowDev) * static_cast<size_t>(batch)), "rows");
      check(cudaMalloc(&src_d, sizeof(int32_t) * static_cast<size_t>(batch)), "src");
      check(cudaMalloc(&tok_d, sizeof(int32_t) * static_cast<size_t>(batch)), "tokens");
      const std::vector<int32_t> minus(static_cast<size_t>(batch), -1);
      check(cudaMemcpy(src_d, minus.data(), minus.size() * sizeof(int32_t), cudaMemcpyHostToDevice), "src");
      // Event-timed median of `iters` launches sampling rows [rows, rows + n).
      auto median_ms = [&](const SampleRowDev* rows, int n, int iters) {
        std::vector<float> times;
        for (int it = 0; it < iters; ++it) {
          check(cudaEventRecord(e0, s), "record");
          launch_sample(logits, nullptr, kVocab, rows, src_d, n, tok_d, s);
          check(cudaEventRecord(e1, s), "record");
          check(cudaEventSynchronize(e1), "sync");
          float t = 0;
          check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
          times.push_back(t);
        }
        std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
        return static_cast<double>(times[static_cast<size_t>(iters / 2)]);
      };
      for (const Setting& st : settings) {
        std::vector<SampleRowDev> rows(static_cast<size_t>(batch));
        for (int r = 0; r < batch; ++r) {
          rows[static_cast<size_t>(r)] = SampleRowDev{.logit_row = r, .temperature = st.t, .top_k = st.top_k,
                                                      .top_p = st.top_p, .min_p = 0.0f, .seed = 7u + static_cast<uint64_t>(r),
                                                      .position = 100, .repetition_penalty = 1.0f,
                                                      .frequency_penalty = 0.0f, .presence_penalty = 0.0f,
                                                      .mask_offset = -1, .proc_begin = 0, .n_proc = 0};
        }
        check(cudaMemcpy(rows_d, rows.data(), rows.size() * sizeof(SampleRowDev), cudaMemcpyHostToDevice), "rows");
        double ms[2] = {0, 0};
        std::vector<int32_t> toks[2];
        for (int on = 0; on < 2; ++on) {
          sample_set_topp_compact(on != 0);
          ms[on] = median_ms(rows_d, batch, 50);
          toks[on].resize(static_cast<size_t>(batch));
          check(cudaMemcpy(toks[on].data(), tok_d, toks[on].size() * sizeof(int32_t), cudaMemcpyDeviceToHost), "tokens");
        }
        if (batch > 1 && std::getenv("KEEL_SAMPLE_BENCH_ROWS") != nullptr) {  // each row alone, compact on
          sample_set_topp_compact(true);
          for (int r = 0; r < batch; ++r) {
            std::printf("  row %d: %.3f ms\n", r, median_ms(rows_d + r, 1, 5));
          }
        }
        const bool same = toks[0] == toks[1];
        failures += same ? 0 : 1;
        std::printf("| %s | %d | %s | %.3f | %.3f | %.2fx | %s |\n", peaked ? "peaked" : "flat", batch, st.name, ms[0],
                    ms[1], ms[0] / ms[1], same ? "yes" : "NO");
      }
      check(cudaFree(logits), "free");
      check(cudaFree(rows_d), "free");
      check(cudaFree(src_d), "free");
      check(cudaFree(tok_d), "free");
    }
  }
  return failures == 0 ? 0 : 1;
}
