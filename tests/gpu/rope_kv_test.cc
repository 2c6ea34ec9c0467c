// rope_write_kv (RoPE of q and k fused with the K/V pool write) against the CPU backend, whose
// rope_write_kv is Backend's default (rope, rope, write_kv), and bitwise against the GPU's own three
// separate ops. Fresh random inputs; pools start as random rows, so a row written at the wrong slot or
// left unwritten differs from the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "gpu_test_util.h"

namespace keel::gpu_test {
namespace {

using tensor::make_shape;

class RopeKvTest : public ActParamTest {};

INSTANTIATE_TEST_SUITE_P(Act, RopeKvTest, ::testing::Values(DType::kF32, DType::kBF16), act_name);

TEST_P(RopeKvTest, MatchesCpuAndSeparateOps) {
  Backend& cpu = *backends().cpu;
  Backend& gpu = *backends().gpu;
  for (auto style : {backend::RopeStyle::kNeox, backend::RopeStyle::kInterleaved}) {
    // (tokens, q heads, kv heads, head_dim, rotated dims, pool slots): Llama-3 decode, GQA prefill,
    // odd head counts, partial rotary (pass-through dims are copied too).
    for (auto [n, heads, kv, hd, rot, n_slots] :
         {std::tuple{1, 32, 8, 128, 128, 50}, {37, 8, 2, 64, 64, 300}, {5, 6, 3, 72, 72, 17}, {9, 4, 2, 64, 32, 64}}) {
      std::vector<float> inv_freq(static_cast<size_t>(rot / 2));
      for (int i = 0; i < rot / 2; ++i) inv_freq[static_cast<size_t>(i)] = std::pow(10000.0f, -2.0f * i / rot);
      std::vector<int32_t> pos(static_cast<size_t>(n)), slots(static_cast<size_t>(n_slots));
      for (auto& p : pos) p = static_cast<int32_t>(rng_() % 9000);
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng_);
      slots.resize(static_cast<size_t>(n));
      const backend::RopeParams rp{.style = style, .rot_dims = rot, .inv_freq = inv_freq, .attn_factor = 1.1f};
      const auto qs = make_shape({n, heads, hd}), ks = make_shape({n, kv, hd}), cs = make_shape({n_slots, kv, hd});
      const auto q = input(static_cast<size_t>(n * heads * hd)), k = input(static_cast<size_t>(n * kv * hd));
      const auto v = input(static_cast<size_t>(n * kv * hd));
      const auto kc0 = input(static_cast<size_t>(n_slots * kv * hd));
      const auto vc0 = input(static_cast<size_t>(n_slots * kv * hd));
      // Reference (CPU, f32), the fused GPU op, and the GPU's three separate ops.
      Buffer qc = make(cpu, DType::kF32, qs, q), kc = make(cpu, DType::kF32, ks, k), vc = make(cpu, DType::kF32, ks, v);
      Buffer kcc = make(cpu, DType::kF32, cs, kc0), vcc = make(cpu, DType::kF32, cs, vc0);
      Buffer qg = make(gpu, dt(), qs, q), kg = make(gpu, dt(), ks, k), vg = make(gpu, dt(), ks, v);
      Buffer kcg = make(gpu, dt(), cs, kc0), vcg = make(gpu, dt(), cs, vc0);
      Buffer qs2 = make(gpu, dt(), qs, q), ks2 = make(gpu, dt(), ks, k);
      Buffer kcs = make(gpu, dt(), cs, kc0), vcs = make(gpu, dt(), cs, vc0);
      cpu.rope_write_kv(qc.tensor(), kc.tensor(), vc.tensor(), pos, slots, rp, kcc.tensor(), vcc.tensor());
      gpu.rope_write_kv(qg.tensor(), kg.tensor(), vg.tensor(), pos, slots, rp, kcg.tensor(), vcg.tensor());
      gpu.rope(qs2.tensor(), pos, rp);
      gpu.rope(ks2.tensor(), pos, rp);
      gpu.write_kv(ks2.tensor(), vg.tensor(), slots, kcs.tensor(), vcs.tensor());
      const auto where = ::testing::Message() << n << "x" << heads << "/" << kv << "x" << hd << " rot " << rot
                                              << " neox " << (style == backend::RopeStyle::kNeox) << " seed " << seed_;
      EXPECT_LE(rel_err(read(gpu, qg.tensor()), read(cpu, qc.tensor())), tolerance(dt())) << "q " << where;
      EXPECT_LE(rel_err(read(gpu, kg.tensor()), read(cpu, kc.tensor())), tolerance(dt())) << "k " << where;
      EXPECT_LE(rel_err(read(gpu, kcg.tensor()), read(cpu, kcc.tensor())), tolerance(dt())) << "k pool " << where;
      EXPECT_EQ(read(gpu, vcg.tensor()), read(cpu, vcc.tensor())) << "v pool " << where;
      EXPECT_EQ(read(gpu, qg.tensor()), read(gpu, qs2.tensor())) << "q vs separate ops " << where;
      EXPECT_EQ(read(gpu, kcg.tensor()), read(gpu, kcs.tensor())) << "k pool vs separate ops " << where;
      EXPECT_EQ(read(gpu, vcg.tensor()), read(gpu, vcs.tensor())) << "v pool vs separate ops " << where;
    }
  }
}

}  // namespace
}  // namespace keel::gpu_test
