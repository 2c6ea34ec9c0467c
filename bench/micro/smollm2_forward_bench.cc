// Times the CPU backend on SmolLM2-135M's exact op sequence and shapes (30 layers, d=576, 9 heads /
// 3 kv heads of 64, ffn 1536, vocab 49152, Q4_1 layer weights, Q8_0 tied embedding / lm_head, f16 KV
// cache): a 512-token prompt, then 128 decode steps. Weights are random (speed does not depend on
// values), so the figures isolate the backend from model loading. Compare with llama.cpp on the
// real model and the same thread count (docs/cpu_backend.md).
//   smollm2_forward_bench [n_threads=2] [n_prompt=512] [n_decode=128] [repeats=3]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace {

using keel::backend::AttnSeq;
using keel::backend::Backend;
using keel::backend::Buffer;
using keel::backend::Tensor;
using keel::tensor::DType;
using keel::tensor::make_shape;

constexpr int64_t kLayers = 30, kDim = 576, kHeads = 9, kKvHeads = 3, kHeadDim = 64, kFfn = 1536, kVocab = 49152;

struct Layer {
  Buffer q, k, v, o, gate, up, down, attn_norm, ffn_norm;
};

Buffer random_weight(Backend& be, DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Buffer b = be.alloc(t, make_shape({rows, cols}));
  auto* p = static_cast<uint8_t*>(b.tensor().data);
  const size_t block = keel::tensor::dtype_info(t).block_bytes;
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < b.tensor().size_bytes(); ++i) p[i] = static_cast<uint8_t>(byte(rng));
  for (size_t i = 0; i < b.tensor().size_bytes(); i += block) {  // sane f16 scale (and min) per block
    const uint16_t d = 0x1c00, m = 0x9c00;  // 0.0039, -0.0039
    std::memcpy(p + i, &d, 2);
    if (t == DType::kQ4_1) std::memcpy(p + i + 2, &m, 2);
  }
  return b;
}

Buffer ones(Backend& be, int64_t n) {
  Buffer b = be.alloc(DType::kF32, make_shape({n}));
  std::vector<float> v(static_cast<size_t>(n), 1.0f);
  be.copy_from_host(v, b.tensor());
  return b;
}

struct Model {
  std::vector<Layer> layers;
  Buffer embd, out_norm, k_cache[kLayers], v_cache[kLayers];
  std::vector<float> inv_freq;
};

// Seconds spent per op kind, summed over calls (the CPU backend is synchronous).
std::map<std::string, double> g_op_seconds;

template <typename Fn>
void timed(const char* op, Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  g_op_seconds[op] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One forward over n new tokens at positions [pos0, pos0 + n); logits for the last token only.
void forward(Backend& be, Model& m, int64_t pos0, int64_t n) {
  auto f32 = [&](std::initializer_list<int64_t> dims) { return be.alloc(DType::kF32, make_shape(dims)); };
  Buffer x = f32({n, kDim}), h = f32({n, kDim}), q = f32({n, kHeads, kHeadDim}), k = f32({n, kKvHeads, kHeadDim});
  Buffer v = f32({n, kKvHeads, kHeadDim}), att = f32({n, kHeads, kHeadDim}), a = f32({n, kDim});
  Buffer g = f32({n, kFfn}), u = f32({n, kFfn}), last = f32({1, kDim}), logits = f32({1, kVocab});
  std::vector<int32_t> ids(static_cast<size_t>(n)), pos(static_cast<size_t>(n)), slots(static_cast<size_t>(pos0 + n));
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919) % kVocab), pos[i] = static_cast<int32_t>(pos0 + i);
  for (int64_t i = 0; i < pos0 + n; ++i) slots[i] = static_cast<int32_t>(i);
  const std::span<const int32_t> new_slots(slots.data() + pos0, static_cast<size_t>(n));
  const AttnSeq seq{0, static_cast<int32_t>(n), slots};
  const keel::backend::RopeParams rp{.style = keel::backend::RopeStyle::kNeox, .rot_dims = kHeadDim, .inv_freq = m.inv_freq};
  timed("embed", [&] { be.embed(m.embd.tensor(), ids, x.tensor()); });
  for (int64_t l = 0; l < kLayers; ++l) {
    Layer& L = m.layers[l];
    if (l == 0) {
      timed("rms_norm", [&] { be.rms_norm(x.tensor(), L.attn_norm.tensor(), 1e-5f, h.tensor()); });
    } else {
      timed("add_rms_norm", [&] { be.add_rms_norm(x.tensor(), a.tensor(), L.attn_norm.tensor(), 1e-5f, h.tensor()); });
    }
    Tensor q2 = q.tensor().reshaped(make_shape({n, kDim})), k2 = k.tensor().reshaped(make_shape({n, kKvHeads * kHeadDim}));
    Tensor v2 = v.tensor().reshaped(make_shape({n, kKvHeads * kHeadDim}));
    timed("matmul_q", [&] { be.matmul(h.tensor(), L.q.tensor(), nullptr, q2); });
    timed("matmul_k", [&] { be.matmul(h.tensor(), L.k.tensor(), nullptr, k2); });
    timed("matmul_v", [&] { be.matmul(h.tensor(), L.v.tensor(), nullptr, v2); });
    timed("rope", [&] { be.rope(q.tensor(), pos, rp); });
    timed("rope", [&] { be.rope(k.tensor(), pos, rp); });
    timed("write_kv", [&] { be.write_kv(k.tensor(), v.tensor(), new_slots, m.k_cache[l].tensor(), m.v_cache[l].tensor()); });
    timed("attention", [&] {
      be.attention(q.tensor(), m.k_cache[l].tensor(), m.v_cache[l].tensor(),
                   {.scale = 0.125f, .seqs = std::span<const AttnSeq>(&seq, 1)}, att.tensor());
    });
    timed("matmul_o", [&] { be.matmul(att.tensor().reshaped(make_shape({n, kDim})), L.o.tensor(), nullptr, a.tensor()); });
    timed("add_rms_norm", [&] { be.add_rms_norm(x.tensor(), a.tensor(), L.ffn_norm.tensor(), 1e-5f, h.tensor()); });
    timed("matmul_gate", [&] { be.matmul(h.tensor(), L.gate.tensor(), nullptr, g.tensor()); });
    timed("matmul_up", [&] { be.matmul(h.tensor(), L.up.tensor(), nullptr, u.tensor()); });
    timed("silu_mul", [&] { be.silu_mul(g.tensor(), u.tensor(), g.tensor()); });
    timed("matmul_down", [&] { be.matmul(g.tensor(), L.down.tensor(), nullptr, a.tensor()); });
  }
  timed("add", [&] { be.add(x.tensor(), a.tensor(), x.tensor()); });
  const int32_t row = static_cast<int32_t>(n - 1);
  timed("gather_rows", [&] { be.gather_rows(x.tensor(), std::span<const int32_t>(&row, 1), last.tensor()); });
  timed("rms_norm", [&] { be.rms_norm(last.tensor(), m.out_norm.tensor(), 1e-5f, last.tensor()); });
  timed("matmul_embd", [&] { be.matmul(last.tensor(), m.embd.tensor(), nullptr, logits.tensor()); });
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int n_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t n_prompt = argc > 2 ? std::atoll(argv[2]) : 512, n_decode = argc > 3 ? std::atoll(argv[3]) : 128;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 3;
  auto be_or = keel::backend::create_backend("cpu", {.n_threads = n_threads});
  if (!be_or.ok()) return std::fprintf(stderr, "%s\n", be_or.status().to_string().c_str()), 1;
  Backend& be = **be_or;
  std::mt19937 rng(1);
  Model m;
  for (int64_t l = 0; l < kLayers; ++l) {
    m.layers.push_back({random_weight(be, DType::kQ4_1, kDim, kDim, rng), random_weight(be, DType::kQ4_1, kKvHeads * kHeadDim, kDim, rng),
                        random_weight(be, DType::kQ4_1, kKvHeads * kHeadDim, kDim, rng), random_weight(be, DType::kQ4_1, kDim, kDim, rng),
                        random_weight(be, DType::kQ4_1, kFfn, kDim, rng), random_weight(be, DType::kQ4_1, kFfn, kDim, rng),
                        random_weight(be, DType::kQ4_1, kDim, kFfn, rng), ones(be, kDim), ones(be, kDim)});
    m.k_cache[l] = be.alloc(DType::kF16, make_shape({n_prompt + n_decode, kKvHeads, kHeadDim}));
    m.v_cache[l] = be.alloc(DType::kF16, make_shape({n_prompt + n_decode, kKvHeads, kHeadDim}));
  }
  m.embd = random_weight(be, DType::kQ8_0, kVocab, kDim, rng);
  m.out_norm = ones(be, kDim);
  for (int i = 0; i < kHeadDim / 2; ++i) m.inv_freq.push_back(std::pow(100000.0f, -2.0f * i / kHeadDim));
  std::printf("backend %s, %d threads\n", be.name().c_str(), n_threads);
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    forward(be, m, 0, n_prompt);
    const double tp = seconds_since(t0);
    if (std::getenv("KEEL_BENCH_BREAKDOWN")) {
      for (const auto& [op, sec] : g_op_seconds) std::printf("  prompt %-14s %8.2f ms\n", op.c_str(), 1e3 * sec);
    }
    g_op_seconds.clear();
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n_decode; ++i) forward(be, m, n_prompt + i, 1);
    const double td = seconds_since(t0);
    if (std::getenv("KEEL_BENCH_BREAKDOWN")) {
      for (const auto& [op, sec] : g_op_seconds) std::printf("  decode %-14s %8.3f ms/token\n", op.c_str(), 1e3 * sec / n_decode);
    }
    g_op_seconds.clear();
    std::printf("prompt %lld: %.1f tok/s   decode %lld after %lld: %.1f tok/s (%.2f ms/token)\n",
                static_cast<long long>(n_prompt), n_prompt / tp, static_cast<long long>(n_decode),
                static_cast<long long>(n_prompt), n_decode / td, 1e3 * td / n_decode);
  }
  return 0;
}
