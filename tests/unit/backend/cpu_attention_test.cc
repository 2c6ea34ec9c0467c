// CPU attention vs a naive double-precision softmax reference: GQA, several sequences with different
// context lengths in one call, cached prefixes plus new chunks, scattered KV slots, f32 and f16
// caches, every kernel table this CPU runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "base/thread_pool.h"
#include "unit/backend/cpu_test_util.h"

namespace keel::backend::cpu {
namespace {

struct SeqSpec {
  int32_t n_past;  // cached tokens
  int32_t n_q;     // new tokens
};

// Reference: for each new token, softmax over its visible keys (read as the cache stores them).
std::vector<float> ref_attention(const std::vector<float>& q, const std::vector<float>& kc, const std::vector<float>& vc,
                                 const std::vector<AttnSeq>& seqs, int64_t n_heads, int64_t n_kv, int64_t hd,
                                 float scale, int64_t n_tokens) {
  std::vector<float> out(static_cast<size_t>(n_tokens * n_heads * hd), 0.0f);
  for (const AttnSeq& s : seqs) {
    const int64_t n_ctx = static_cast<int64_t>(s.ctx_slots.size());
    for (int64_t t = 0; t < s.n_q; ++t) {
      const int64_t n_vis = n_ctx - s.n_q + t + 1;
      for (int64_t h = 0; h < n_heads; ++h) {
        const int64_t kvh = h / (n_heads / n_kv);
        const float* qv = q.data() + ((s.q_begin + t) * n_heads + h) * hd;
        std::vector<double> sc(static_cast<size_t>(n_vis));
        for (int64_t j = 0; j < n_vis; ++j) {
          const float* kv = kc.data() + (s.ctx_slots[j] * n_kv + kvh) * hd;
          double d = 0.0;
          for (int64_t e = 0; e < hd; ++e) d += static_cast<double>(qv[e]) * kv[e];
          sc[j] = d * scale;
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double z = 0.0;
        for (double& v : sc) z += (v = std::exp(v - mx));
        float* o = out.data() + ((s.q_begin + t) * n_heads + h) * hd;
        for (int64_t e = 0; e < hd; ++e) {
          double acc = 0.0;
          for (int64_t j = 0; j < n_vis; ++j) acc += sc[j] * vc[(s.ctx_slots[j] * n_kv + kvh) * hd + e];
          o[e] = static_cast<float>(acc / z);
        }
      }
    }
  }
  return out;
}

void run_case(const Kernels& kern, DType cache_dtype, const std::vector<SeqSpec>& specs, int64_t n_heads,
              int64_t n_kv, int64_t hd, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t n_tokens = 0, n_slots = 0;
  for (const SeqSpec& s : specs) {
    n_tokens += s.n_q;
    n_slots += s.n_past + s.n_q;
  }
  n_slots += 5;  // unused slots
  std::vector<int32_t> perm(static_cast<size_t>(n_slots));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);  // each sequence's slots are scattered over the pool
  std::vector<std::vector<int32_t>> slots;
  std::vector<AttnSeq> seqs;
  int32_t q_begin = 0;
  size_t next = 0;
  for (const SeqSpec& s : specs) {
    slots.emplace_back(perm.begin() + static_cast<int64_t>(next), perm.begin() + static_cast<int64_t>(next + s.n_past + s.n_q));
    next += static_cast<size_t>(s.n_past + s.n_q);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    seqs.push_back({q_begin, specs[i].n_q, slots[i]});
    q_begin += specs[i].n_q;
  }
  std::vector<float> q = test::random_floats(rng, static_cast<size_t>(n_tokens * n_heads * hd), -2.0f, 2.0f);
  std::vector<float> kc = test::random_floats(rng, static_cast<size_t>(n_slots * n_kv * hd), -2.0f, 2.0f);
  std::vector<float> vc = test::random_floats(rng, kc.size());
  std::vector<uint8_t> kh(kc.size() * 2), vh(kc.size() * 2);
  if (cache_dtype == DType::kF16) {  // the reference reads what the f16 cache holds
    for (size_t i = 0; i < kc.size(); ++i) {
      const uint16_t a = f32_to_fp16(kc[i]), b = f32_to_fp16(vc[i]);
      std::memcpy(kh.data() + 2 * i, &a, 2);
      std::memcpy(vh.data() + 2 * i, &b, 2);
      kc[i] = fp16_to_f32(a);
      vc[i] = fp16_to_f32(b);
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> out(q.size(), -9.0f);
  ThreadPool pool(2);
  Workspace ws(2);
  OpContext c{&pool, &kern, &ws};
  Tensor kt = cache_dtype == DType::kF16 ? test::view(kh, DType::kF16, {n_slots, n_kv, hd}) : test::view(kc, {n_slots, n_kv, hd});
  Tensor vt = cache_dtype == DType::kF16 ? test::view(vh, DType::kF16, {n_slots, n_kv, hd}) : test::view(vc, {n_slots, n_kv, hd});
  Tensor ot = test::view(out, {n_tokens, n_heads, hd});
  attention(c, test::view(q, {n_tokens, n_heads, hd}), kt, vt, {.scale = scale, .seqs = seqs}, ot);
  const std::vector<float> want = ref_attention(q, kc, vc, seqs, n_heads, n_kv, hd, scale, n_tokens);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], want[i], 2e-5f * (1.0f + std::fabs(want[i])))
        << kern.name << " " << tensor::dtype_name(cache_dtype) << " element " << i;
  }
}

std::vector<const Kernels*> all_tables() {
  std::vector<const Kernels*> t{&scalar_kernels()};
  if (const Kernels* k = avx2_kernels()) t.push_back(k);
  if (const Kernels* k = avx512_kernels()) t.push_back(k);
  return t;
}

TEST(CpuAttention, MixedPrefillAndDecodeWithGqa) {
  // Decode after a long prefix, a fresh prefill, a cached prefix plus a new chunk, a 1-token prompt.
  const std::vector<SeqSpec> specs = {{150, 1}, {0, 19}, {70, 13}, {0, 1}};
  uint32_t seed = 7;
  for (const Kernels* k : all_tables()) {
    for (DType dt : {DType::kF32, DType::kF16}) {
      run_case(*k, dt, specs, /*n_heads=*/9, /*n_kv=*/3, /*hd=*/64, seed++);
      run_case(*k, dt, specs, /*n_heads=*/4, /*n_kv=*/4, /*hd=*/24, seed++);  // MHA, odd head_dim
    }
  }
}

TEST(CpuAttention, SingleDecodeSplitsGroupsAcrossThreads) {
  for (const Kernels* k : all_tables()) {
    run_case(*k, DType::kF16, {{517, 1}}, 9, 3, 64, 12);
    run_case(*k, DType::kF32, {{40, 1}, {9, 2}}, 8, 2, 16, 13);
  }
}

TEST(CpuAttention, LongPrefillCrossesManyKeyTiles) {
  for (const Kernels* k : all_tables()) run_case(*k, DType::kF16, {{3, 200}}, 8, 2, 32, 11);
}

}  // namespace
}  // namespace keel::backend::cpu
