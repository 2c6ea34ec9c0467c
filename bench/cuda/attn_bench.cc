// keel_attn_bench: decode attention kernels alone (one layer, Llama-3-8B heads: 32 q heads, 8 kv heads,
// head_dim 128, bf16) at batch 1/64/256 x context 1k/4k/32k: achieved GB/s of K/V read against the
// 3.96 TB/s device-copy ceiling (shared/GPU.md), for the decode kernel (attention_decode.cu) and the
// CUDA-core kernel it replaces (attention.cu), both as planned by plan_attention for a graph step.
// Event-timed median of 50 launches after 5 warm-ups; the KV pool is at least 1 GiB and each launch reads
// a different part of it (rotated slot lists), so the 60 MB L2 holds none of a launch's K/V.
// Usage: keel_attn_bench [contiguous|shuffled]   (slot lists: runs of consecutive slots, or a random
// permutation of the pool: every row a separate access)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/kernels.cuh"

namespace {

using namespace keel::backend;
using namespace keel::backend::cuda;

constexpr double kCopyBytesPerS = 3.96e12;  // shared/GPU.md: 16-byte copy kernel, H200
constexpr int kHeads = 32, kKv = 8, kHd = 128;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <typename T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  check(cudaMalloc(&d, std::max<size_t>(1, v.size()) * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}

struct Run {
  double ms;
  double gbps;
};

// One (batch, context) point for one kernel choice; rotations of the slot lists cycle through the pool.
Run time_point(int bs, int ctx, bool decode_kernel, bool shuffled, int n_sm, void* k, void* v, int64_t pool_slots,
               const std::vector<int32_t>& perm, void* q, void* out, float* partials, unsigned* counters) {
  const int64_t per_launch = static_cast<int64_t>(bs) * ctx;
  const int n_rot = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(64, pool_slots / per_launch)));
  std::vector<std::vector<int32_t>> ctx_host(static_cast<size_t>(n_rot) * bs);
  std::vector<AttnSeq> seqs(static_cast<size_t>(bs));
  struct Staged {
    AttnItem* items;
    AttnSeqDev* seqs;
    int32_t* ctx;
  };
  std::vector<Staged> staged;
  AttentionPlan plan;
  for (int r = 0; r < n_rot; ++r) {
    std::vector<int32_t> all;
    all.reserve(static_cast<size_t>(per_launch));
    for (int s = 0; s < bs; ++s) {
      auto& c = ctx_host[static_cast<size_t>(r) * bs + s];
      c.resize(static_cast<size_t>(ctx));
      const int64_t first = (static_cast<int64_t>(r) * per_launch + static_cast<int64_t>(s) * ctx) % pool_slots;
      for (int j = 0; j < ctx; ++j) {
        const int64_t slot = (first + j) % pool_slots;
        c[static_cast<size_t>(j)] = shuffled ? perm[static_cast<size_t>(slot)] : static_cast<int32_t>(slot);
      }
      seqs[static_cast<size_t>(s)] = {.q_begin = s, .n_q = 1, .ctx_slots = c};
      all.insert(all.end(), c.begin(), c.end());
    }
    const AttentionParams p{.scale = 0.0883883f, .seqs = seqs};
    // bf16 = false plans the CUDA-core kernel's items (they do not depend on the dtype); it runs on bf16.
    plan_attention(p, kHeads, kKv, kHd, decode_kernel, n_sm, true, plan);
    int32_t* ctx_d = upload(all);
    std::vector<AttnSeqDev> sd(static_cast<size_t>(bs));
    for (int s = 0; s < bs; ++s) {
      sd[static_cast<size_t>(s)] = {.ctx = ctx_d + static_cast<int64_t>(s) * ctx, .q_begin = s, .n_q = 1,
                                    .n_ctx = ctx, .pad = 0};
    }
    staged.push_back({upload(plan.items), upload(sd), ctx_d});
  }
  AttnLaunch l{.q = q, .k_cache = k, .v_cache = v, .out = out, .items = nullptr, .seqs = nullptr,
               .n_items = static_cast<int>(plan.items.size()), .n_tokens = bs, .n_heads = kHeads, .n_kv = kKv,
               .head_dim = kHd, .scale = 0.0883883f, .n_splits = plan.grid_splits, .split_len = plan.split_len,
               .split_len_dev = nullptr, .partial_acc = partials,
               .partial_ml = partials + static_cast<size_t>(plan.grid_splits) * bs * kHeads * kHd,
               .split_counters = counters, .tensor_cores = false, .decode = plan.decode};
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  std::vector<float> ms;
  for (int rep = 0; rep < 55; ++rep) {
    const Staged& st = staged[static_cast<size_t>(rep % n_rot)];
    l.items = st.items;
    l.seqs = st.seqs;
    check(cudaEventRecord(e0, nullptr), "record");
    launch_attention(l, ActType::kBF16, nullptr);
    check(cudaEventRecord(e1, nullptr), "record");
    check(cudaEventSynchronize(e1), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
    if (rep >= 5) ms.push_back(t);
  }
  check(cudaGetLastError(), "attention");
  for (const Staged& st : staged) {
    cudaFree(st.items);
    cudaFree(st.seqs);
    cudaFree(st.ctx);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  const double bytes = static_cast<double>(per_launch) * kKv * kHd * 2 /*bf16*/ * 2 /*K and V*/;
  return {med, bytes / (med * 1e-3) / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
  const bool shuffled = argc > 1 && std::string(argv[1]) == "shuffled";
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  attention_set_smem_limits();
  const int64_t row_bytes = static_cast<int64_t>(kKv) * kHd * 2;
  const int64_t pool_slots = std::max<int64_t>(256LL * 32768, (1LL << 30) / row_bytes);  // >= 1 GiB per cache
  void *k = nullptr, *v = nullptr, *q = nullptr, *out = nullptr;
  float* partials = nullptr;
  check(cudaMalloc(&k, static_cast<size_t>(pool_slots * row_bytes)), "k");
  check(cudaMalloc(&v, static_cast<size_t>(pool_slots * row_bytes)), "v");
  check(cudaMemset(k, 0x3c, static_cast<size_t>(pool_slots * row_bytes)), "fill k");  // bf16 0x3c3c ~ 0.0115
  check(cudaMemset(v, 0x3d, static_cast<size_t>(pool_slots * row_bytes)), "fill v");
  check(cudaMalloc(&q, 256 * kHeads * kHd * 2), "q");
  check(cudaMemset(q, 0x3f, 256 * kHeads * kHd * 2), "fill q");
  check(cudaMalloc(&out, 256 * kHeads * kHd * 2), "out");
  const size_t partial_floats = static_cast<size_t>(64) * prop.multiProcessorCount * (kHd + 2);
  check(cudaMalloc(&partials, partial_floats * sizeof(float)), "partials");
  unsigned* counters = nullptr;  // the decode kernel's split counters: zeros, reset by the kernel itself
  check(cudaMalloc(&counters, sizeof(unsigned) * 64 * prop.multiProcessorCount), "counters");
  check(cudaMemset(counters, 0, sizeof(unsigned) * 64 * prop.multiProcessorCount), "zero counters");
  std::vector<int32_t> perm;
  if (shuffled) {
    perm.resize(static_cast<size_t>(pool_slots));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(7));
  }
  std::printf("decode attention, one layer, %d/%d heads, head_dim %d, bf16, %s slots, %s (%d SMs); GB/s of K/V read, "
              "%% of the %.2f TB/s copy ceiling\n",
              kHeads, kKv, kHd, shuffled ? "shuffled" : "contiguous", prop.name, prop.multiProcessorCount,
              kCopyBytesPerS / 1e12);
  std::printf("%5s %6s | %26s | %26s | %s\n", "batch", "ctx", "decode kernel", "CUDA-core kernel (before)", "speed-up");
  for (const int bs : {1, 64, 256}) {
    for (const int ctx : {1024, 4096, 32768}) {
      const Run a = time_point(bs, ctx, true, shuffled, prop.multiProcessorCount, k, v, pool_slots, perm, q, out,
                                 partials, counters);
      const Run b = time_point(bs, ctx, false, shuffled, prop.multiProcessorCount, k, v, pool_slots, perm, q, out,
                                 partials, counters);
      std::printf("%5d %6d | %8.3f ms %6.0f GB/s %3.0f%% | %8.3f ms %6.0f GB/s %3.0f%% | %.2fx\n", bs, ctx, a.ms, a.gbps,
                  100 * a.gbps * 1e9 / kCopyBytesPerS, b.ms, b.gbps, 100 * b.gbps * 1e9 / kCopyBytesPerS, b.ms / a.ms);
    }
  }
  return 0;
}
