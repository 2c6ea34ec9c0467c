// keel_cuda_bench: whole-model forward timings on the cuda backend with dummy weights (any HF
// config.json): batch-1 decode, prefill of B x L tokens, batched decode. Compares against the
// bandwidth roofline (weight bytes / measured HBM bandwidth) and the GEMM ceiling (2 * params * tokens
// / measured bf16 GEMM rate), both passed in from shared/GPU.md's measurements.
// Usage: keel_cuda_bench CONFIG_DIR [decode_ctx=512] [prefill_batch=8] [prefill_len=2048] [batch=64]
//                        [phases=d1,pf,dB,dS,dO] [batch_ctx=1024]   (d1: batch-1 decode, pf: prefill, dB:
//                        batched decode at batch_ctx cached tokens, dS: decode steps of 1 and batch sequences
//                        sampled on the device vs logits to the host, dO: the same greedy steps back to back,
//                        synchronous vs overlapped (docs/scheduler.md))
// Decode phases run twice: eagerly (KEEL_CUDA_GRAPHS=0) and as CUDA graph replays; the first graph
// step of a batch size (eager step + capture + instantiate) is timed on its own.
// With KEEL_CUDA_PROFILE=1 the backend prints per-op GPU time at exit (run one phase for a breakdown;
// profiling turns graphs off). With KEEL_CUDA_STEP_TIMES=1 it prints each decode phase's GPU time per
// step and GPU idle time between steps, and each graph capture's time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "model/model.h"

namespace {

using keel::model::Batch;
using keel::model::BatchSeq;
using Clock = std::chrono::steady_clock;

constexpr double kHbmBytesPerS = 3.9e12;  // shared/GPU.md: 16-byte copy kernel, H200
constexpr double kGemmFlopPerS = 854e12;  // shared/GPU.md: cuBLAS bf16 8192^3, H200

// n_seqs sequences, each with `ctx` tokens already cached (slots seq * stride + [0, ctx)) and n_q new.
Batch make_batch(int n_seqs, int ctx, int n_q, int stride) {
  Batch b;
  for (int s = 0; s < n_seqs; ++s) {
    BatchSeq seq{.q_begin = static_cast<int32_t>(b.tokens.size()), .n_q = n_q, .ctx_slots = {}};
    for (int i = 0; i < ctx + n_q; ++i) seq.ctx_slots.push_back(s * stride + i);
    for (int i = ctx; i < ctx + n_q; ++i) {
      b.tokens.push_back((s * 7919 + i * 31) % 1000);
      b.positions.push_back(i);
      b.slots.push_back(s * stride + i);
    }
    b.logit_rows.push_back(static_cast<int32_t>(b.tokens.size()) - 1);
    b.seqs.push_back(std::move(seq));
  }
  return b;
}

// Median seconds of `reps` decode steps of b with the logits sampled on the device (forward_on_device
// + Backend::sample_rows; only token ids come back) at temperature t (0: greedy) and top_p.
double time_forward_sampled(keel::model::Model& m, keel::model::KvStorage& kv, const Batch& b, int reps, float t,
                            float top_p) {
  std::vector<keel::backend::DeviceSampleRow> rows;
  for (size_t r = 0; r < b.logit_rows.size(); ++r) {
    rows.push_back({.logit_row = static_cast<int32_t>(r), .temperature = t, .top_p = top_p, .seed = 7 + r});
  }
  std::vector<int32_t> tokens(rows.size());
  std::vector<double> times;
  for (int r = 0; r < reps + 2; ++r) {
    const auto t0 = Clock::now();
    auto lg = m.forward_on_device(b, kv);
    if (!lg.ok()) {
      std::fprintf(stderr, "forward: %s\n", lg.status().to_string().c_str());
      std::exit(1);
    }
    for (auto& row : rows) row.position = r;
    m.backend().sample_rows(*lg, {.rows = rows}, tokens);
    if (r >= 2) times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Seconds per step of `reps` greedy decode steps of b sampled on the device, back to back (after 2
// untimed): synchronous (forward, sample_rows and wait for the ids) or overlapped as keel serve does it
// (the next forward is queued with its ids taken on the device from the last sampling, Batch::
// from_sampled, then the last sampling's ids are read, then this step's sampling is queued).
double time_decode_loop(keel::model::Model& m, keel::model::KvStorage& kv, const Batch& b, int reps, bool overlap) {
  keel::backend::Backend& be = m.backend();
  std::vector<keel::backend::DeviceSampleRow> rows;
  for (size_t r = 0; r < b.logit_rows.size(); ++r) rows.push_back({.logit_row = static_cast<int32_t>(r), .temperature = 0});
  Batch fed = b;  // every sequence's next input is its own last sampled token
  for (size_t i = 0; i < fed.tokens.size(); ++i) fed.from_sampled.push_back(static_cast<int32_t>(i));
  std::vector<int32_t> tokens(rows.size());
  auto t0 = Clock::now();
  for (int r = 0; r < reps + 2; ++r) {
    if (r == 2) t0 = Clock::now();
    auto lg = m.forward_on_device(overlap && r > 0 ? fed : b, kv);
    if (!lg.ok()) {
      std::fprintf(stderr, "forward: %s\n", lg.status().to_string().c_str());
      std::exit(1);
    }
    if (!overlap) {
      be.sample_rows(*lg, {.rows = rows}, tokens);
      continue;
    }
    if (r > 0) be.wait_sampled(tokens);
    be.sample_rows_async(*lg, {.rows = rows});
  }
  if (overlap) be.wait_sampled(tokens);
  be.synchronize();
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

// Median seconds of `reps` forwards of b (after `warm` untimed ones).
double time_forward(keel::model::Model& m, keel::model::KvStorage& kv, const Batch& b, int reps, int warm = 2) {
  std::vector<float> logits(b.logit_rows.size() * static_cast<size_t>(m.config().vocab_size));
  std::vector<double> t;
  for (int r = 0; r < reps + warm; ++r) {
    const auto t0 = Clock::now();
    if (auto st = m.forward(b, kv, logits); !st.ok()) {
      std::fprintf(stderr, "forward: %s\n", st.to_string().c_str());
      std::exit(1);
    }
    if (r >= warm) t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());  // 2 warm-ups
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG_DIR [decode_ctx] [prefill_batch] [prefill_len] [batch]\n", argv[0]);
    return 2;
  }
  const int decode_ctx = argc > 2 ? std::atoi(argv[2]) : 512;
  const int pf_batch = argc > 3 ? std::atoi(argv[3]) : 8;
  const int pf_len = argc > 4 ? std::atoi(argv[4]) : 2048;
  const int batch = argc > 5 ? std::atoi(argv[5]) : 64;
  const std::string phases = argc > 6 ? argv[6] : "d1,pf,dB,dS,dO";
  const int batch_ctx = argc > 7 ? std::atoi(argv[7]) : 1024;
  const auto t0 = Clock::now();
  auto loaded = keel::model::load_model({.path = argv[1], .backend = "cuda", .dummy_weights = true});
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().to_string().c_str());
    return 1;
  }
  keel::model::Model& m = **loaded;
  const auto& c = m.config();
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double q_dim = static_cast<double>(c.n_heads * c.head_dim),
               kv_dim = static_cast<double>(c.n_kv_heads * c.head_dim);
  const double params =
      static_cast<double>(c.n_layers) * static_cast<double>(c.d_model) * (2 * q_dim + 2 * kv_dim + 3.0 * c.ffn_dim) +
      (c.tied_embeddings ? 1.0 : 2.0) * static_cast<double>(c.vocab_size * c.d_model);
  std::printf("model: %d layers, d %lld, params %.2f B, dummy load %.1f s\n", static_cast<int>(c.n_layers),
              static_cast<long long>(c.d_model), params / 1e9, load_s);
  const int stride = std::max({decode_ctx + 64, pf_len, batch_ctx + 64, 1024 + 64});
  auto kv = m.make_kv_storage(static_cast<int64_t>(stride) * std::max(pf_batch, batch)).value();

  // Batch-1 decode roofline: every weight byte once per step (shared/GPU.md's 16.06 GB for 8B); the
  // embedding table is only gathered, so the bytes a step must read are that minus the table.
  const double all_bytes = params * 2;
  const double step_bytes = all_bytes - (c.tied_embeddings ? 0.0 : 2.0 * static_cast<double>(c.vocab_size * c.d_model));
  // Decode: eager, then graphs (first step at this size captures: timed alone).
  const auto decode = [&](const Batch& b, int reps, bool graphs, double* first_s) {
    setenv("KEEL_CUDA_GRAPHS", graphs ? "1" : "0", 1);
    if (first_s != nullptr) *first_s = time_forward(m, kv, b, 1, 0);
    return time_forward(m, kv, b, reps);
  };
  if (phases.find("d1") != std::string::npos) {
    const Batch b = make_batch(1, decode_ctx, 1, stride);
    double first = 0;
    for (const bool graphs : {false, true}) {
      const double t1 = decode(b, 50, graphs, graphs ? &first : nullptr);
      std::printf(
          "decode bs=1 ctx=%d %s: %.3f ms/step, %.1f tok/s; roofline %.1f tok/s all weights (%.0f%%), %.1f tok/s "
          "without the embedding table\n",
          decode_ctx, graphs ? "graph" : "eager", t1 * 1e3, 1 / t1, kHbmBytesPerS / all_bytes,
          100 * all_bytes / kHbmBytesPerS / t1, kHbmBytesPerS / step_bytes);
    }
    std::printf("decode bs=1 first graph step (eager step + capture + instantiate): %.1f ms\n", first * 1e3);
  }
  if (phases.find("pf") != std::string::npos) {
    const double tp = time_forward(m, kv, make_batch(pf_batch, 0, pf_len, stride), 3);
    const double pf_tokens = static_cast<double>(pf_batch) * pf_len;
    // Layer GEMMs only (the LM head runs on the last token of each sequence; attention FLOPs not counted).
    const double layer_params = params - (c.tied_embeddings ? 1.0 : 2.0) * static_cast<double>(c.vocab_size * c.d_model);
    const double gemm_s = 2 * layer_params * pf_tokens / kGemmFlopPerS;
    std::printf("prefill %dx%d: %.1f ms, %.0f tok/s, GEMM ceiling %.0f tok/s (%.0f%%)\n", pf_batch, pf_len, tp * 1e3,
                pf_tokens / tp, pf_tokens / gemm_s, 100 * gemm_s / tp);
  }
  if (phases.find("dB") != std::string::npos) {
    const Batch b = make_batch(batch, batch_ctx, 1, stride);
    double first = 0;
    for (const bool graphs : {false, true}) {
      const double tb = decode(b, 20, graphs, graphs ? &first : nullptr);
      std::printf("decode bs=%d ctx=%d %s: %.3f ms/step, %.0f tok/s\n", batch, batch_ctx, graphs ? "graph" : "eager",
                  tb * 1e3, batch / tb);
    }
    std::printf("decode bs=%d first graph step (eager step + capture + instantiate): %.1f ms\n", batch, first * 1e3);
  }
  // Decode steps (graphs) with sampling on the device instead of the logits copied to the host.
  if (phases.find("dS") != std::string::npos) {
    setenv("KEEL_CUDA_GRAPHS", "1", 1);
    for (const int n : {1, batch}) {
      const Batch b = make_batch(n, batch_ctx, 1, stride);
      for (const auto& [t, p] : {std::pair{0.0f, 1.0f}, std::pair{0.7f, 0.9f}}) {
        const double ts = time_forward_sampled(m, kv, b, 20, t, p);
        const double th = time_forward(m, kv, b, 20);
        std::printf("decode bs=%d ctx=%d graph, sampled on the device (T %.1f, top_p %.1f): %.3f ms/step, %.0f tok/s "
                    "(logits to the host: %.3f ms/step)\n", n, batch_ctx, t, p, ts * 1e3, n / ts, th * 1e3);
      }
    }
  }
  // Decode steps (graphs, greedy, sampled on the device) back to back, synchronous vs overlapped.
  if (phases.find("dO") != std::string::npos) {
    setenv("KEEL_CUDA_GRAPHS", "1", 1);
    for (const int n : {1, batch}) {
      const Batch b = make_batch(n, batch_ctx, 1, stride);
      for (const bool overlap : {false, true}) {
        const double ts = time_decode_loop(m, kv, b, 100, overlap);
        std::printf("decode bs=%d ctx=%d graph, sampled on the device, %s: %.3f ms/step, %.0f tok/s\n", n, batch_ctx,
                    overlap ? "overlapped" : "synchronous", ts * 1e3, n / ts);
      }
    }
  }
  return 0;
}
