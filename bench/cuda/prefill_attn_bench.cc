// keel_prefill_attn_bench: the prefill attention op alone (CudaBackend::attention, one layer,
// Llama-3-8B heads: 32 q heads, 8 kv heads, head_dim 128, bf16) on the shapes of the 8B benchmarks:
// prefill 8 x 2,048 (keel_cuda_bench's pf phase), 8 x 1,024 (keel serve's prompts), a 2,048-token
// chunk after a 2,048-token prefix, and a mixed serve step (7 prompts of 1,024 + 248 decode rows with
// 1,100 keys each). Each shape runs with the tensor-core kernel at 64, 128 and 256 query rows per block
// (attention_tc.h); the mixed step also with its decode rows on tensor-core items (as before session 6)
// or on the decode kernel (attention_plan.h); then mixed steps of 248, 56 and 16 decode rows in each mixed
// mode (0: decode rows unsplit after the tensor-core kernel, 1: split-KV, 2: split-KV on a second stream
// beside it) next to their prompts alone and their decode rows alone. Mean of 20 calls issued back to back after 3 warm-ups
// (device time per call); TFLOP/s counts the causal FLOPs (4 x head_dim per query head and visible key).
// Slots are runs of consecutive slots in a 128k-slot pool (537 MB per cache), random data.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/attention_plan.h"
#include "backend/cuda/attention_tc.h"

namespace {

using namespace keel;
using backend::AttnSeq;
using Clock = std::chrono::steady_clock;

constexpr int kHeads = 32, kKv = 8, kHd = 128;
constexpr int kPoolSlots = 1 << 17;

struct SeqShape {
  int n_past, n_q;
};

struct Case {
  const char* name;
  std::vector<SeqShape> seqs;
};

// Median ms of the attention op over `shapes` (slot runs laid out one after another in the pool).
double time_case(backend::Backend& gpu, const std::vector<SeqShape>& shapes, backend::Tensor& q,
                 backend::Tensor& k, backend::Tensor& v, backend::Tensor& out, double& flops) {
  std::vector<std::vector<int32_t>> ctx(shapes.size());
  std::vector<AttnSeq> seqs;
  int64_t next = 0;
  int q_begin = 0;
  flops = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const int n = shapes[s].n_past + shapes[s].n_q;
    ctx[s].resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ctx[s][static_cast<size_t>(i)] = static_cast<int32_t>((next + i) % kPoolSlots);
    next += n;
    seqs.push_back({.q_begin = q_begin, .n_q = shapes[s].n_q, .ctx_slots = ctx[s]});
    q_begin += shapes[s].n_q;
    for (int t = 0; t < shapes[s].n_q; ++t) flops += 4.0 * kHd * kHeads * (shapes[s].n_past + t + 1);
  }
  const backend::AttentionParams p{.scale = 0.0883883f, .seqs = seqs};
  backend::Tensor qv = q, ov = out;
  qv.shape = tensor::make_shape({q_begin, kHeads, kHd});
  ov.shape = qv.shape;
  // Back to back after 3 warm-ups: the host work of a call (plan, staging, checks) overlaps the device's
  // work on the one before, as in a forward pass, and spans staged by an earlier call with the same bytes
  // are reused (the staging memo), so this is the device time per call.
  for (int r = 0; r < 3; ++r) gpu.attention(qv, k, v, p, ov);
  gpu.synchronize();
  constexpr int kReps = 20;
  const auto t0 = Clock::now();
  for (int r = 0; r < kReps; ++r) gpu.attention(qv, k, v, p, ov);
  gpu.synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / kReps;
}

}  // namespace

// Usage: keel_prefill_attn_bench [ROWS]   (ROWS: only the first shape at that block size, for a profiler)
int main(int argc, char** argv) {
  const int only_rows = argc > 1 ? std::atoi(argv[1]) : 0;
  auto made = backend::create_backend("cuda", {.dtype = "bf16"});
  if (!made.ok()) {
    std::fprintf(stderr, "keel_prefill_attn_bench: %s\n", made.status().to_string().c_str());
    return 1;
  }
  backend::Backend& gpu = **made;
  constexpr int kMaxTokens = 16384;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> host(static_cast<size_t>(kPoolSlots) * kKv * kHd);
  for (float& x : host) x = u(rng);
  backend::Buffer k = gpu.alloc(tensor::DType::kBF16, tensor::make_shape({kPoolSlots, kKv, kHd}));
  backend::Buffer v = gpu.alloc(tensor::DType::kBF16, tensor::make_shape({kPoolSlots, kKv, kHd}));
  gpu.copy_from_host(host, k.tensor());
  std::reverse(host.begin(), host.end());
  gpu.copy_from_host(host, v.tensor());
  host.resize(static_cast<size_t>(kMaxTokens) * kHeads * kHd);
  backend::Buffer q = gpu.alloc(tensor::DType::kBF16, tensor::make_shape({kMaxTokens, kHeads, kHd}));
  backend::Buffer out = gpu.alloc(tensor::DType::kBF16, tensor::make_shape({kMaxTokens, kHeads, kHd}));
  gpu.copy_from_host(host, q.tensor());

  if (only_rows > 0) {
    backend::cuda::set_attention_tc_rows(only_rows);
    double flops = 0;
    const double ms = time_case(gpu, std::vector<SeqShape>(8, {0, 2048}), q.tensor(), k.tensor(), v.tensor(),
                                out.tensor(), flops);
    std::printf("prefill 8 x 2048, %d rows: %.3f ms (%.1f TFLOP/s)\n", only_rows, ms, flops / ms / 1e9);
    return 0;
  }
  std::vector<SeqShape> mixed(7, {0, 1024});
  mixed.insert(mixed.end(), 248, {1099, 1});
  const Case cases[] = {{"prefill 8 x 2048", std::vector<SeqShape>(8, {0, 2048})},
                        {"prefill 8 x 1024", std::vector<SeqShape>(8, {0, 1024})},
                        {"chunk 2048 after 2048", {{2048, 2048}}},
                        {"mixed 7 x 1024 + 248 decode", mixed}};
  std::printf("prefill attention op, one layer, %d/%d heads, head_dim %d, bf16; ms (TFLOP/s of causal FLOPs)\n",
              kHeads, kKv, kHd);
  std::printf("%-28s | %-22s | %-22s | %-22s | %-22s | %-22s\n", "case", "64 rows, mixed on tc", "64 rows",
              "128 rows", "256 rows", "128 rows, mixed on tc");
  std::printf("%-28s | %-22s |\n", "", "(before session 6)");
  const int default_rows = backend::cuda::attention_tc_rows();
  const int default_mode = backend::cuda::attention_mixed_mode();
  for (const Case& c : cases) {
    double flops = 0;
    auto run = [&](int rows, bool split) {
      backend::cuda::set_attention_tc_rows(rows);
      backend::cuda::set_attention_mixed_split(split);
      const double ms = time_case(gpu, c.seqs, q.tensor(), k.tensor(), v.tensor(), out.tensor(), flops);
      std::printf(" | %8.3f ms (%5.1f)   ", ms, flops / ms / 1e9);
    };
    std::printf("%-28s", c.name);
    run(64, false);
    for (const int rows : {64, 128, 256}) run(rows, true);
    if (c.seqs.size() > 8) run(128, false);  // the mixed step
    std::printf("\n");
  }
  // Mixed steps by mixed mode (tensor-core rows at the default), with their two parts alone.
  backend::cuda::set_attention_tc_rows(default_rows);
  backend::cuda::set_attention_mixed_split(true);
  std::printf("\nmixed steps (%d-row tensor-core blocks), ms per call: mode 0 unsplit after | 1 split-KV | 2 split-KV "
              "beside | prompts alone | decode rows alone\n", default_rows);
  for (const int n_dec : {248, 56, 16}) {
    std::vector<SeqShape> m(7, {0, 1024}), dec;
    m.insert(m.end(), static_cast<size_t>(n_dec), {1099, 1});
    dec.assign(static_cast<size_t>(n_dec), {1099, 1});
    double flops = 0;
    std::printf("7 x 1024 + %3d decode (1,100 keys)", n_dec);
    for (const int mode : {0, 1, 2}) {
      backend::cuda::set_attention_mixed_mode(mode);
      std::printf(" | %7.3f", time_case(gpu, m, q.tensor(), k.tensor(), v.tensor(), out.tensor(), flops));
    }
    backend::cuda::set_attention_mixed_mode(default_mode);
    std::printf(" | %7.3f", time_case(gpu, std::vector<SeqShape>(7, {0, 1024}), q.tensor(), k.tensor(), v.tensor(),
                                      out.tensor(), flops));
    std::printf(" | %7.3f\n", time_case(gpu, dec, q.tensor(), k.tensor(), v.tensor(), out.tensor(), flops));
  }
  return 0;
}
