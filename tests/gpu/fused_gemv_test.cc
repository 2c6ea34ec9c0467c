// The fused decode ops (Backend::norm_matmul_group, norm_gate_up_silu, norm_qkv_rope_kv; cuda: the
// pre-norm inside the GEMV, SiLU-mul or RoPE + the KV-pool write as its epilogue) against the CPU backend (whose ops are the defaults: the separate
// ops) on fresh random inputs, bf16 and f32 activations, outputs poisoned with NaN first; and against
// the GPU's own separate ops: the residual bitwise, h within the dtype's bound (the fused kernel sums
// the squares in another order), and the outputs bitwise equal to the GPU's matmul_group (+ silu_mul,
// + rope_write_kv) of the h the fused op wrote (so the GEMV really used that h). Each case runs the op twice in a row
// (the second time on the updated residual): the last-block counter must have been reset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu_test_util.h"

namespace keel::gpu_test {
namespace {

using tensor::make_shape;

std::unique_ptr<Backend> make_f32(const char* name) {
  auto r = backend::create_backend(name, {.dtype = "f32"});
  if (!r.ok()) {
    std::fprintf(stderr, "fused tests: %s\n", r.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

class FusedGemvTest : public ActParamTest {
 protected:
  Backend& gpu() {
    static std::unique_ptr<Backend> f32 = make_f32("cuda");
    return dt() == DType::kBF16 ? *backends().gpu : *f32;
  }
  Backend& cpu() {
    static std::unique_ptr<Backend> f32 = make_f32("cpu");
    return dt() == DType::kBF16 ? *backends().cpu : *f32;
  }
  // A matrix weight [m, k] on the GPU in the mode's dtype (bf16 or f32) and on the CPU as f32.
  std::pair<Buffer, Buffer> weight(int64_t m, int64_t k) {
    const auto w = input(static_cast<size_t>(m * k), 0.1f);
    const auto bits = to_bf16_bits(w);
    const tensor::TensorView view = dt() == DType::kBF16
                                        ? tensor::TensorView{DType::kBF16, make_shape({m, k}), bits.data(), bits.size() * 2}
                                        : tensor::TensorView{DType::kF32, make_shape({m, k}), w.data(), w.size() * 4};
    return {gpu().upload_weight(view).value(), make(cpu(), DType::kF32, make_shape({m, k}), w)};
  }
};

INSTANTIATE_TEST_SUITE_P(Act, FusedGemvTest, ::testing::Values(DType::kF32, DType::kBF16), act_name);

// The pre-norm's operands on one backend: residual, add, norm weight, h.
struct NormBufs {
  Buffer r, a, w, h;
  Backend::PreNorm pre(bool with_add, float eps) {
    return {.residual = &r.tensor(), .add = with_add ? &a.tensor() : nullptr, .w = &w.tensor(), .eps = eps,
            .h = &h.tensor()};
  }
};

TEST_P(FusedGemvTest, NormMatmulGroupMatchesCpuAndParts) {
  // (n, k, add, f32 outputs): n = 2 and k = 68 (not whole 16-byte vectors in bf16) take the separate ops
  // on cuda, and so do f32 outputs from bf16 h (logits-shaped: the op's contract holds for them too).
  for (auto [n, k, with_add, f32_out] : {std::tuple{1, 4096, true, false}, {1, 4096, false, false},
                                         {1, 896, true, false}, {2, 256, true, false}, {1, 68, true, false},
                                         {1, 4096, true, true}, {1, 896, false, true}, {2, 256, true, true}}) {
    const std::string what = fmt::format("{}x{} add {} f32 out {} seed {}", n, k, with_add, f32_out, seed_);
    const DType ot = f32_out ? DType::kF32 : dt();
    const auto shape = make_shape({n, k});
    const auto r = input(static_cast<size_t>(n * k)), a = input(static_cast<size_t>(n * k));
    const auto w = random_floats(rng_, static_cast<size_t>(k), 2.0f);
    const std::vector<int64_t> ms = {96, 33, 50};
    NormBufs g{make(gpu(), dt(), shape, r), make(gpu(), dt(), shape, a), make(gpu(), DType::kF32, make_shape({k}), w),
               gpu().alloc(dt(), shape)};
    NormBufs p{make(gpu(), dt(), shape, r), make(gpu(), dt(), shape, a), make(gpu(), DType::kF32, make_shape({k}), w),
               gpu().alloc(dt(), shape)};  // the GPU's separate ops
    NormBufs c{make(cpu(), DType::kF32, shape, r), make(cpu(), DType::kF32, shape, a),
               make(cpu(), DType::kF32, make_shape({k}), w), cpu().alloc(DType::kF32, shape)};
    std::vector<std::pair<Buffer, Buffer>> ws;
    std::vector<Buffer> bg, bc, og, op, oc, check;
    std::vector<Backend::MatmulTarget> tg, tp, tc, tcheck;
    for (size_t i = 0; i < ms.size(); ++i) {
      ws.push_back(weight(ms[i], k));
      const auto b = random_floats(rng_, static_cast<size_t>(ms[i]));
      bg.push_back(make(gpu(), DType::kF32, make_shape({ms[i]}), b));
      bc.push_back(make(cpu(), DType::kF32, make_shape({ms[i]}), b));
      og.push_back(gpu().alloc(ot, make_shape({n, ms[i]})));
      op.push_back(gpu().alloc(ot, make_shape({n, ms[i]})));
      check.push_back(gpu().alloc(ot, make_shape({n, ms[i]})));
      oc.push_back(cpu().alloc(DType::kF32, make_shape({n, ms[i]})));
    }
    for (size_t i = 0; i < ms.size(); ++i) {
      const bool bias = i == 1;
      tg.push_back({&ws[i].first.tensor(), bias ? &bg[i].tensor() : nullptr, &og[i].tensor()});
      tp.push_back({&ws[i].first.tensor(), bias ? &bg[i].tensor() : nullptr, &op[i].tensor()});
      tcheck.push_back({&ws[i].first.tensor(), bias ? &bg[i].tensor() : nullptr, &check[i].tensor()});
      tc.push_back({&ws[i].second.tensor(), bias ? &bc[i].tensor() : nullptr, &oc[i].tensor()});
    }
    for (int rep = 0; rep < 2; ++rep) {
      poison(gpu(), g.h.tensor());
      for (Buffer& o : og) poison(gpu(), o.tensor());
      gpu().norm_matmul_group(g.pre(with_add, 1e-5f), tg);
      gpu().Backend::norm_matmul_group(p.pre(with_add, 1e-5f), tp);
      cpu().norm_matmul_group(c.pre(with_add, 1e-5f), tc);
      gpu().matmul_group(g.h.tensor(), tcheck);
      const auto rg = read(gpu(), g.r.tensor()), hg = read(gpu(), g.h.tensor());
      EXPECT_LE(rel_err(rg, read(cpu(), c.r.tensor())), tolerance(dt())) << what << " rep " << rep;
      EXPECT_LE(rel_err(hg, read(cpu(), c.h.tensor())), tolerance(dt())) << what << " rep " << rep;
      EXPECT_EQ(rg, read(gpu(), p.r.tensor())) << what << " rep " << rep;
      EXPECT_LE(rel_err(hg, read(gpu(), p.h.tensor())), tolerance(dt())) << what << " rep " << rep;
      for (size_t i = 0; i < ms.size(); ++i) {
        const auto got = read(gpu(), og[i].tensor());
        EXPECT_LE(rel_err(got, read(cpu(), oc[i].tensor())), tolerance(dt())) << what << " target " << i;
        EXPECT_EQ(got, read(gpu(), check[i].tensor())) << what << " target " << i;
      }
    }
  }
}

TEST_P(FusedGemvTest, NormGateUpSiluMatchesCpuAndParts) {
  for (auto [n, k, f] : {std::tuple{1, 4096, 1000}, {1, 896, 600}, {3, 256, 100}, {1, 68, 40}}) {
    const std::string what = fmt::format("{}x{}x{} seed {}", n, k, f, seed_);
    const auto shape = make_shape({n, k}), fshape = make_shape({n, f});
    const auto r = input(static_cast<size_t>(n * k)), a = input(static_cast<size_t>(n * k));
    const auto w = random_floats(rng_, static_cast<size_t>(k), 2.0f);
    NormBufs g{make(gpu(), dt(), shape, r), make(gpu(), dt(), shape, a), make(gpu(), DType::kF32, make_shape({k}), w),
               gpu().alloc(dt(), shape)};
    NormBufs p{make(gpu(), dt(), shape, r), make(gpu(), dt(), shape, a), make(gpu(), DType::kF32, make_shape({k}), w),
               gpu().alloc(dt(), shape)};
    NormBufs c{make(cpu(), DType::kF32, shape, r), make(cpu(), DType::kF32, shape, a),
               make(cpu(), DType::kF32, make_shape({k}), w), cpu().alloc(DType::kF32, shape)};
    auto [gate_g, gate_c] = weight(f, k);
    auto [up_g, up_c] = weight(f, k);
    Buffer gs = gpu().alloc(dt(), fshape), us = gpu().alloc(dt(), fshape), out_g = gpu().alloc(dt(), fshape);
    Buffer gs2 = gpu().alloc(dt(), fshape), us2 = gpu().alloc(dt(), fshape), out_p = gpu().alloc(dt(), fshape);
    Buffer out_check = gpu().alloc(dt(), fshape);
    Buffer gc = cpu().alloc(DType::kF32, fshape), uc = cpu().alloc(DType::kF32, fshape);
    Buffer out_c = cpu().alloc(DType::kF32, fshape);
    for (int rep = 0; rep < 2; ++rep) {
      poison(gpu(), g.h.tensor());
      poison(gpu(), out_g.tensor());
      gpu().norm_gate_up_silu(g.pre(true, 1e-6f), gate_g.tensor(), up_g.tensor(), gs.tensor(), us.tensor(),
                              out_g.tensor());
      gpu().Backend::norm_gate_up_silu(p.pre(true, 1e-6f), gate_g.tensor(), up_g.tensor(), gs2.tensor(), us2.tensor(),
                                       out_p.tensor());
      cpu().norm_gate_up_silu(c.pre(true, 1e-6f), gate_c.tensor(), up_c.tensor(), gc.tensor(), uc.tensor(),
                              out_c.tensor());
      // The GPU's separate GEMV and silu_mul on the h the fused op wrote.
      const Backend::MatmulTarget t[] = {{&gate_g.tensor(), nullptr, &gs2.tensor()}, {&up_g.tensor(), nullptr, &us2.tensor()}};
      gpu().matmul_group(g.h.tensor(), t);
      gpu().silu_mul(gs2.tensor(), us2.tensor(), out_check.tensor());
      const auto rg = read(gpu(), g.r.tensor()), got = read(gpu(), out_g.tensor());
      EXPECT_LE(rel_err(rg, read(cpu(), c.r.tensor())), tolerance(dt())) << what << " rep " << rep;
      EXPECT_EQ(rg, read(gpu(), p.r.tensor())) << what << " rep " << rep;
      EXPECT_LE(rel_err(read(gpu(), g.h.tensor()), read(cpu(), c.h.tensor())), tolerance(dt())) << what;
      EXPECT_LE(rel_err(got, read(cpu(), out_c.tensor())), tolerance(dt())) << what << " rep " << rep;
      EXPECT_LE(rel_err(got, read(gpu(), out_p.tensor())), tolerance(dt())) << what << " rep " << rep;
      EXPECT_EQ(got, read(gpu(), out_check.tensor())) << what << " rep " << rep;
    }
  }
}

TEST_P(FusedGemvTest, NormQkvRopeKvMatchesCpuAndParts) {
  struct Case {
    int n, d, heads, kv_heads, head_dim, rot_dims;
    backend::RopeStyle style;
  };
  // n = 2 takes the separate ops on cuda.
  for (const Case& cs : {Case{1, 512, 8, 2, 64, 64, backend::RopeStyle::kNeox},
                         Case{1, 1024, 8, 2, 128, 128, backend::RopeStyle::kNeox},
                         Case{1, 256, 4, 4, 64, 32, backend::RopeStyle::kInterleaved},
                         Case{2, 256, 4, 2, 64, 64, backend::RopeStyle::kNeox}}) {
    const int64_t n = cs.n, d = cs.d, hd = cs.head_dim, mq = cs.heads * hd, mkv = cs.kv_heads * hd, n_slots = 16;
    const std::string what = fmt::format("n {} d {} heads {}/{} hd {} rot {} seed {}", n, d, cs.heads, cs.kv_heads, hd,
                                         cs.rot_dims, seed_);
    const auto shape = make_shape({n, d});
    const auto r = input(static_cast<size_t>(n * d)), a = input(static_cast<size_t>(n * d));
    const auto w = random_floats(rng_, static_cast<size_t>(d), 2.0f);
    const auto pool_k = input(static_cast<size_t>(n_slots * mkv)), pool_v = input(static_cast<size_t>(n_slots * mkv));
    std::vector<float> inv_freq(static_cast<size_t>(cs.rot_dims / 2));
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      inv_freq[i] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(cs.rot_dims));
    }
    const backend::RopeParams rope{.style = cs.style, .rot_dims = cs.rot_dims, .inv_freq = inv_freq, .attn_factor = 0.9f};
    NormBufs g{make(gpu(), dt(), shape, r), make(gpu(), dt(), shape, a), make(gpu(), DType::kF32, make_shape({d}), w),
               gpu().alloc(dt(), shape)};
    NormBufs c{make(cpu(), DType::kF32, shape, r), make(cpu(), DType::kF32, shape, a),
               make(cpu(), DType::kF32, make_shape({d}), w), cpu().alloc(DType::kF32, shape)};
    std::vector<std::pair<Buffer, Buffer>> ws;
    std::vector<Buffer> bg, bc;
    for (int64_t m : {mq, mkv, mkv}) {
      ws.push_back(weight(m, d));
      const auto b = random_floats(rng_, static_cast<size_t>(m));
      bg.push_back(make(gpu(), DType::kF32, make_shape({m}), b));
      bc.push_back(make(cpu(), DType::kF32, make_shape({m}), b));
    }
    // The fused op's outputs and pools (g), the GPU's separate ops on the fused op's h (s), the CPU's (c).
    struct Out {
      Buffer q, k, v, kc, vc;
    };
    const auto pool_shape = make_shape({n_slots, cs.kv_heads, hd});
    auto outs = [&](Backend& be, DType t) {
      return Out{be.alloc(t, make_shape({n, cs.heads, hd})), be.alloc(t, make_shape({n, cs.kv_heads, hd})),
                 be.alloc(t, make_shape({n, cs.kv_heads, hd})), make(be, t, pool_shape, pool_k),
                 make(be, t, pool_shape, pool_v)};
    };
    Out og = outs(gpu(), dt()), os = outs(gpu(), dt()), oc = outs(cpu(), DType::kF32);
    auto targets = [&](Out& o, bool on_gpu) {
      std::vector<Backend::MatmulTarget> t;
      Buffer* outs3[] = {&o.q, &o.k, &o.v};
      for (size_t i = 0; i < 3; ++i) {
        t.push_back({on_gpu ? &ws[i].first.tensor() : &ws[i].second.tensor(),
                     i != 2 ? (on_gpu ? &bg[i].tensor() : &bc[i].tensor()) : nullptr, &outs3[i]->tensor()});
      }
      return t;
    };
    const auto tg = targets(og, true), ts = targets(os, true), tc = targets(oc, false);
    for (int rep = 0; rep < 2; ++rep) {
      std::vector<int32_t> positions, slots;
      for (int64_t i = 0; i < n; ++i) {
        positions.push_back(static_cast<int32_t>(37 + 50 * rep + i));
        slots.push_back(static_cast<int32_t>((5 + 7 * rep + 3 * i) % n_slots));
      }
      for (Buffer* b : {&og.q, &og.k, &og.v}) poison(gpu(), b->tensor());
      poison(gpu(), g.h.tensor());
      gpu().norm_qkv_rope_kv(g.pre(true, 1e-5f), tg, og.q.tensor(), og.k.tensor(), og.v.tensor(), positions, slots,
                             rope, og.kc.tensor(), og.vc.tensor());
      cpu().norm_qkv_rope_kv(c.pre(true, 1e-5f), tc, oc.q.tensor(), oc.k.tensor(), oc.v.tensor(), positions, slots,
                             rope, oc.kc.tensor(), oc.vc.tensor());
      gpu().matmul_group(g.h.tensor(), ts);
      gpu().rope_write_kv(os.q.tensor(), os.k.tensor(), os.v.tensor(), positions, slots, rope, os.kc.tensor(),
                          os.vc.tensor());
      EXPECT_LE(rel_err(read(gpu(), g.r.tensor()), read(cpu(), c.r.tensor())), tolerance(dt())) << what;
      EXPECT_LE(rel_err(read(gpu(), g.h.tensor()), read(cpu(), c.h.tensor())), tolerance(dt())) << what;
      const std::pair<const char*, Buffer Out::*> parts[] = {
          {"q", &Out::q}, {"k", &Out::k}, {"v", &Out::v}, {"k pool", &Out::kc}, {"v pool", &Out::vc}};
      for (const auto& [name, part] : parts) {
        const auto got = read(gpu(), (og.*part).tensor());
        EXPECT_LE(rel_err(got, read(cpu(), (oc.*part).tensor())), tolerance(dt())) << what << " " << name << " rep " << rep;
        EXPECT_EQ(got, read(gpu(), (os.*part).tensor())) << what << " " << name << " rep " << rep;
      }
    }
  }
}

}  // namespace
}  // namespace keel::gpu_test
