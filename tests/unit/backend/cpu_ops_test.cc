// CPU row-wise ops (embed, RMSNorm, add+RMSNorm, RoPE both styles, SiLU-gating, add, write_kv,
// gather_rows) vs scalar references written here, for every kernel table this CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "base/thread_pool.h"
#include "unit/backend/cpu_test_util.h"

namespace keel::backend::cpu {
namespace {

using test::random_floats;
using test::view;

class CpuOps : public ::testing::TestWithParam<const Kernels*> {
 protected:
  OpContext ctx() { return OpContext{&pool_, GetParam(), &ws_}; }
  ThreadPool pool_{2};
  Workspace ws_{2};
  std::mt19937 rng_{42};
};

std::vector<float> ref_rms_norm(const std::vector<float>& x, const std::vector<float>& w, int64_t d, float eps) {
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(d); ++r) {
    double ss = 0.0;
    for (int64_t j = 0; j < d; ++j) ss += static_cast<double>(x[r * d + j]) * x[r * d + j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    for (int64_t j = 0; j < d; ++j) out[r * d + j] = static_cast<float>(x[r * d + j] * inv * w[j]);
  }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

TEST_P(CpuOps, RmsNormAndAddRmsNorm) {
  const int64_t n = 37, d = 203;  // many tasks, odd width
  std::vector<float> x = random_floats(rng_, n * d, -3.0f, 3.0f), w = random_floats(rng_, d);
  std::vector<float> out(x.size());
  Tensor ot = view(out, {n, d});
  rms_norm(ctx(), view(x, {n, d}), view(w, {d}), 1e-5f, ot);
  expect_close(out, ref_rms_norm(x, w, d, 1e-5f), 1e-5f, "rms_norm");

  std::vector<float> res = random_floats(rng_, n * d), sum(x.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = res[i] + x[i];
  Tensor rt = view(res, {n, d});
  add_rms_norm(ctx(), rt, view(x, {n, d}), view(w, {d}), 1e-6f, ot);
  expect_close(res, sum, 0.0f, "add_rms_norm residual");
  expect_close(out, ref_rms_norm(sum, w, d, 1e-6f), 1e-5f, "add_rms_norm");
}

TEST_P(CpuOps, RopeBothStylesPartialRotation) {
  const int64_t n = 5, heads = 3, hd = 16;
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kInterleaved}) {
    for (int rot : {16, 8}) {
      std::vector<float> inv(static_cast<size_t>(rot / 2));
      for (int i = 0; i < rot / 2; ++i) inv[static_cast<size_t>(i)] = std::pow(10000.0f, -2.0f * i / rot);
      std::vector<int32_t> pos = {0, 1, 7, 300, 4095};
      std::vector<float> x = random_floats(rng_, n * heads * hd), want = x;
      const float attn_factor = rot == 8 ? 1.25f : 1.0f;
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
          float* v = want.data() + (t * heads + h) * hd;
          for (int i = 0; i < rot / 2; ++i) {
            const double th = static_cast<double>(pos[t]) * inv[i];
            const int a = style == RopeStyle::kNeox ? i : 2 * i, b = style == RopeStyle::kNeox ? i + rot / 2 : 2 * i + 1;
            const double x0 = v[a], x1 = v[b];
            v[a] = static_cast<float>((x0 * std::cos(th) - x1 * std::sin(th)) * attn_factor);
            v[b] = static_cast<float>((x0 * std::sin(th) + x1 * std::cos(th)) * attn_factor);
          }
        }
      }
      Tensor xt = view(x, {n, heads, hd});
      rope(ctx(), xt, pos, {.style = style, .rot_dims = rot, .inv_freq = inv, .attn_factor = attn_factor});
      expect_close(x, want, 2e-4f, style == RopeStyle::kNeox ? "rope neox" : "rope interleaved");
    }
  }
}

TEST_P(CpuOps, SiluMulAndAdd) {
  const int64_t n = 3, f = 40001;  // several tasks with a ragged tail
  std::vector<float> g = random_floats(rng_, n * f, -8.0f, 8.0f), u = random_floats(rng_, n * f);
  std::vector<float> out(g.size()), want(g.size());
  Tensor ot = view(out, {n, f});
  silu_mul(ctx(), view(g, {n, f}), view(u, {n, f}), ot);
  for (size_t i = 0; i < g.size(); ++i) want[i] = static_cast<float>(g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i]);
  expect_close(out, want, 1e-5f, "silu_mul");
  add(ctx(), view(g, {n, f}), view(u, {n, f}), ot);
  for (size_t i = 0; i < g.size(); ++i) want[i] = g[i] + u[i];
  expect_close(out, want, 0.0f, "add");
}

TEST_P(CpuOps, EmbedEveryTableDtypeAndGatherRows) {
  const int64_t vocab = 11, d = 256;
  for (DType t : {DType::kF32, DType::kF16, DType::kQ4_1, DType::kQ8_0, DType::kQ6_K}) {
    std::vector<uint8_t> table = test::random_weight(rng_, t, vocab, d);
    std::vector<int32_t> ids = {3, 0, 10, 3};
    std::vector<float> out(ids.size() * d), want(out.size());
    Tensor ot = view(out, {static_cast<int64_t>(ids.size()), d});
    embed(ctx(), view(table, t, {vocab, d}), ids, ot);
    const size_t rb = tensor::row_size_bytes(t, d);
    for (size_t i = 0; i < ids.size(); ++i) dequantize_row(t, table.data() + ids[i] * rb, want.data() + i * d, d);
    expect_close(out, want, 0.0f, tensor::dtype_name(t).data());
  }
  std::vector<float> x = random_floats(rng_, 6 * 5), g(3 * 5);
  std::vector<int32_t> rows = {5, 0, 5};
  Tensor gt = view(g, {3, 5});
  gather_rows(ctx(), view(x, {6, 5}), rows, gt);
  for (size_t i = 0; i < rows.size(); ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(g[i * 5 + j], x[rows[i] * 5 + j]);
}

TEST_P(CpuOps, WriteKvF32AndF16Caches) {
  const int64_t n = 4, kv = 2, hd = 8, slots = 9;
  std::vector<float> k = random_floats(rng_, n * kv * hd), v = random_floats(rng_, n * kv * hd);
  std::vector<int32_t> where = {8, 2, 5, 0};
  std::vector<float> kc(slots * kv * hd, 0.0f), vc(kc.size(), 0.0f);
  Tensor kct = view(kc, {slots, kv, hd}), vct = view(vc, {slots, kv, hd});
  write_kv(ctx(), view(k, {n, kv, hd}), view(v, {n, kv, hd}), where, kct, vct);
  std::vector<uint8_t> kh(kc.size() * 2), vh(kc.size() * 2);
  Tensor kht = view(kh, DType::kF16, {slots, kv, hd}), vht = view(vh, DType::kF16, {slots, kv, hd});
  write_kv(ctx(), view(k, {n, kv, hd}), view(v, {n, kv, hd}), where, kht, vht);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = 0; e < kv * hd; ++e) {
      const size_t dst = static_cast<size_t>(where[i] * kv * hd + e), src = static_cast<size_t>(i * kv * hd + e);
      EXPECT_EQ(kc[dst], k[src]);
      EXPECT_EQ(vc[dst], v[src]);
      uint16_t hk, hv;
      std::memcpy(&hk, kh.data() + 2 * dst, 2);
      std::memcpy(&hv, vh.data() + 2 * dst, 2);
      EXPECT_EQ(hk, f32_to_fp16(k[src]));
      EXPECT_EQ(hv, f32_to_fp16(v[src]));
    }
  }
  EXPECT_EQ(kc[1 * kv * hd], 0.0f);  // untouched slot
}

TEST(CpuHalf, F16RoundTripAndRounding) {
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);     // halfway past max rounds to inf
  EXPECT_EQ(f32_to_fp16(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_fp16(1.0f + 1.0f / 2048), 0x3c00);  // tie to even
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    ASSERT_EQ(f32_to_fp16(fp16_to_f32(static_cast<uint16_t>(h))), h) << h;
    ASSERT_EQ(f32_to_fp16(fp16_to_f32(static_cast<uint16_t>(h | 0x8000))), h | 0x8000) << h;
  }
}

std::vector<const Kernels*> all_tables() {
  std::vector<const Kernels*> t{&scalar_kernels()};
  if (const Kernels* k = avx2_kernels()) t.push_back(k);
  if (const Kernels* k = avx512_kernels()) t.push_back(k);
  return t;
}

INSTANTIATE_TEST_SUITE_P(Tables, CpuOps, ::testing::ValuesIn(all_tables()),
                         [](const auto& p) { return std::string(p.param->name); });

}  // namespace
}  // namespace keel::backend::cpu
