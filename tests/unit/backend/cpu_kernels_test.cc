// Every SIMD kernel table this CPU runs against the scalar table, kernel by kernel: activation
// quantizers must be bit-identical (same scale, same round-half-even), integer dots may differ only
// by f32 summation order, float kernels by a few ulp. Also checks each quantized dot against
// dequantize-then-f32 within the bound set by the 8-bit activation rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cpu/kernels.h"
#include "unit/backend/cpu_test_util.h"

namespace keel::backend::cpu {
namespace {

using test::random_floats;

std::vector<const Kernels*> simd_tables() {
  std::vector<const Kernels*> t;
  if (const Kernels* k = avx2_kernels()) t.push_back(k);
  if (const Kernels* k = avx512_kernels()) t.push_back(k);
  return t;
}

TEST(CpuKernels, ThisMachineRunsASimdTable) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    ASSERT_NE(avx2_kernels(), nullptr);
    EXPECT_NE(std::string(cpu_kernels().name), "scalar");
  }
  if (!__builtin_cpu_supports("avx512vnni")) {
    EXPECT_EQ(avx512_kernels(), nullptr);
  }
#endif
}

TEST(CpuKernels, QuantizersBitIdenticalToScalar) {
  std::mt19937 rng(3);
  const Kernels& s = scalar_kernels();
  for (const Kernels* k : simd_tables()) {
    for (int rep = 0; rep < 20; ++rep) {
      const int64_t n = 512;
      std::vector<float> x = random_floats(rng, n, -4.0f, 4.0f);
      if (rep == 0) std::fill(x.begin(), x.begin() + 32, 0.0f);  // an all-zero block
      if (rep == 1) x[5] = 127.5f / 3.0f;                        // exact .5 ties
      std::vector<BlockQ8A> a(n / 32), b(n / 32);
      s.quantize_q8a(x.data(), a.data(), n);
      k->quantize_q8a(x.data(), b.data(), n);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].d, b[i].d) << k->name;
        ASSERT_EQ(0, std::memcmp(a[i].qs, b[i].qs, 32)) << k->name << " block " << i;
        ASSERT_NEAR(a[i].s, b[i].s, 1e-6f * std::fabs(a[i].s) + 1e-30f);
      }
      std::vector<BlockQ8_K> c(n / 256), d(n / 256);
      s.quantize_q8k(x.data(), c.data(), n);
      k->quantize_q8k(x.data(), d.data(), n);
      ASSERT_EQ(0, std::memcmp(c.data(), d.data(), c.size() * sizeof(BlockQ8_K))) << k->name;
    }
  }
}

TEST(CpuKernels, QuantizedDotsMatchScalarAndDequantizedReference) {
  std::mt19937 rng(4);
  const Kernels& s = scalar_kernels();
  struct Case {
    DType t;
    int64_t n;
  };
  // Odd block counts exercise the unrolled loops' tails.
  const Case cases[] = {{DType::kQ4_0, 32}, {DType::kQ4_0, 544}, {DType::kQ4_1, 96},  {DType::kQ4_1, 576},
                        {DType::kQ8_0, 32}, {DType::kQ8_0, 1536}, {DType::kQ4_K, 256}, {DType::kQ4_K, 1280},
                        {DType::kQ6_K, 256}, {DType::kQ6_K, 768}};
  std::vector<const Kernels*> all = simd_tables();
  all.insert(all.begin(), &s);
  for (const Case& cs : cases) {
    for (int rep = 0; rep < 10; ++rep) {
      std::vector<uint8_t> w = test::random_weight(rng, cs.t, 1, cs.n);
      std::vector<float> x = random_floats(rng, static_cast<size_t>(cs.n), -3.0f, 3.0f);
      std::vector<float> wf(static_cast<size_t>(cs.n));
      dequantize_row(cs.t, w.data(), wf.data(), cs.n);
      const bool k_quant = activation_format(cs.t) == DType::kQ8_K;
      std::vector<uint8_t> xq(static_cast<size_t>(cs.n) * 2);
      double ref = 0.0, mag = 0.0;
      for (int64_t j = 0; j < cs.n; ++j) {
        ref += static_cast<double>(wf[j]) * x[j];
        mag += std::fabs(static_cast<double>(wf[j]) * x[j]);
      }
      const double q8_tol = test::q8_dot_tolerance(wf.data(), x.data(), cs.n, k_quant ? 256 : 32);
      float scalar_value = 0.0f;
      for (const Kernels* k : all) {
        if (k_quant) {
          k->quantize_q8k(x.data(), reinterpret_cast<BlockQ8_K*>(xq.data()), cs.n);
        } else {
          k->quantize_q8a(x.data(), reinterpret_cast<BlockQ8A*>(xq.data()), cs.n);
        }
        const float v = quant_dot(*k, cs.t)(w.data(), xq.data(), cs.n);
        EXPECT_NEAR(v, ref, q8_tol) << k->name << " " << tensor::dtype_name(cs.t) << " n=" << cs.n;
        if (k == &s) {
          scalar_value = v;
        } else {  // same integers, different f32 summation order
          EXPECT_NEAR(v, scalar_value, 2e-6 * mag + 1e-6) << k->name << " " << tensor::dtype_name(cs.t);
        }
      }
    }
  }
}

TEST(CpuKernels, MultiRowDotsMatchOneRowDots) {
  std::mt19937 rng(6);
  for (const Kernels* k : simd_tables()) {
    for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ8_0}) {
      QuantDotRowsFn rows_fn = quant_dot_rows(*k, t);
      ASSERT_NE(rows_fn, nullptr) << k->name << " " << tensor::dtype_name(t);
      for (int64_t n : {32, 96, 576}) {
        std::vector<uint8_t> w = test::random_weight(rng, t, kMaxDotRows, n);
        std::vector<float> x = random_floats(rng, static_cast<size_t>(n), -3.0f, 3.0f);
        std::vector<BlockQ8A> xq(static_cast<size_t>(n / 32));
        k->quantize_q8a(x.data(), xq.data(), n);
        const size_t rb = tensor::row_size_bytes(t, n);
        for (int n_rows = 1; n_rows <= kMaxDotRows; ++n_rows) {
          float out[kMaxDotRows] = {};
          rows_fn(w.data(), rb, n_rows, xq.data(), n, out);
          for (int r = 0; r < n_rows; ++r) {
            const float want = quant_dot(scalar_kernels(), t)(w.data() + r * rb, xq.data(), n);
            EXPECT_NEAR(out[r], want, 1e-5f * (1.0f + std::fabs(want))) << k->name << " rows=" << n_rows;
          }
        }
      }
    }
  }
}

TEST(CpuKernels, FloatKernelsMatchScalar) {
  std::mt19937 rng(5);
  const Kernels& s = scalar_kernels();
  for (const Kernels* k : simd_tables()) {
    for (int64_t n : {1, 7, 8, 33, 64, 577}) {
      std::vector<float> a = random_floats(rng, n, -10.0f, 10.0f), b = random_floats(rng, n, -10.0f, 10.0f);
      double mag = 0.0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(a[i] * b[i]);
      EXPECT_NEAR(k->dot_f32(a.data(), b.data(), n), s.dot_f32(a.data(), b.data(), n), 1e-6 * mag) << k->name;
      std::vector<uint16_t> h(n), hs(n), hk(n);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(a[i]);
      EXPECT_NEAR(k->dot_f16_f32(h.data(), b.data(), n), s.dot_f16_f32(h.data(), b.data(), n), 1e-6 * mag);
      EXPECT_NEAR(k->dot_bf16_f32(h.data(), b.data(), n), s.dot_bf16_f32(h.data(), b.data(), n),
                  1e-6 * std::fabs(s.dot_bf16_f32(h.data(), b.data(), n)) + 1e-3);
      s.f32_to_f16(b.data(), hs.data(), n);
      k->f32_to_f16(b.data(), hk.data(), n);
      EXPECT_EQ(hs, hk);
      std::vector<float> ys(n), yk(n);
      s.f16_to_f32(hs.data(), ys.data(), n);
      k->f16_to_f32(hs.data(), yk.data(), n);
      EXPECT_EQ(ys, yk);
      s.silu_mul_f32(a.data(), b.data(), ys.data(), n);
      k->silu_mul_f32(a.data(), b.data(), yk.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(yk[i], ys[i], 2e-6f * (1.0f + std::fabs(ys[i])));
      std::vector<float> es = a, ek = a;
      const float zs = s.exp_sub_sum_f32(es.data(), n, 10.0f), zk = k->exp_sub_sum_f32(ek.data(), n, 10.0f);
      EXPECT_NEAR(zk, zs, 1e-6f * zs);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(ek[i], es[i], 3e-7f * es[i] + 1e-38f);
      ys = b;
      yk = b;
      s.axpy_f32(0.37f, a.data(), ys.data(), n);
      k->axpy_f32(0.37f, a.data(), yk.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(yk[i], ys[i], 1e-6f * (1.0f + std::fabs(ys[i])));
    }
  }
}

// qk/pv tile kernels of every table (scalar included) against a double-precision reference, with
// the rows scattered through a buffer in shuffled order as the KV pool's slots are.
TEST(CpuKernels, AttentionTilesMatchDoubleReference) {
  std::mt19937 rng(11);
  std::vector<const Kernels*> tables = simd_tables();
  tables.push_back(&scalar_kernels());
  for (const Kernels* k : tables) {
    for (int64_t hd : {8, 12, 64, 72, 128}) {
      for (int64_t n_q : {1, 3, 8}) {
        for (int64_t n_k : {1, 3, 4, 5, 64}) {
          const int64_t ld = n_k + 3;
          std::vector<float> q = random_floats(rng, n_q * hd, -2.0f, 2.0f);
          std::vector<float> pool = random_floats(rng, (n_k + 4) * hd, -2.0f, 2.0f);
          std::vector<int64_t> order(static_cast<size_t>(n_k + 4));
          for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
          std::shuffle(order.begin(), order.end(), rng);
          std::vector<const float*> rows(static_cast<size_t>(n_k));
          for (int64_t j = 0; j < n_k; ++j) rows[static_cast<size_t>(j)] = pool.data() + order[static_cast<size_t>(j)] * hd;
          std::vector<float> s(static_cast<size_t>(n_q * ld), -7.0f);
          k->qk_tile_f32(q.data(), n_q, rows.data(), n_k, hd, 0.125f, s.data(), ld);
          for (int64_t g = 0; g < n_q; ++g) {
            for (int64_t j = 0; j < ld; ++j) {
              const float got = s[static_cast<size_t>(g * ld + j)];
              if (j >= n_k) {
                EXPECT_EQ(got, -7.0f) << k->name << " wrote past n_k";
                continue;
              }
              double ref = 0.0, mag = 0.0;
              for (int64_t d = 0; d < hd; ++d) {
                const double v = static_cast<double>(q[static_cast<size_t>(g * hd + d)]) * rows[static_cast<size_t>(j)][d];
                ref += v;
                mag += std::fabs(v);
              }
              EXPECT_NEAR(got, 0.125 * ref, 1e-6 * mag) << k->name << " hd " << hd << " n_q " << n_q << " n_k " << n_k;
            }
          }
          std::vector<float> p = random_floats(rng, n_q * ld, 0.0f, 1.0f);
          std::vector<float> acc = random_floats(rng, n_q * hd, -1.0f, 1.0f);
          const std::vector<float> acc0 = acc;
          k->pv_tile_f32(p.data(), ld, n_q, rows.data(), n_k, hd, acc.data());
          for (int64_t g = 0; g < n_q; ++g) {
            for (int64_t d = 0; d < hd; ++d) {
              double ref = acc0[static_cast<size_t>(g * hd + d)], mag = std::fabs(ref);
              for (int64_t j = 0; j < n_k; ++j) {
                const double v = static_cast<double>(p[static_cast<size_t>(g * ld + j)]) * rows[static_cast<size_t>(j)][d];
                ref += v;
                mag += std::fabs(v);
              }
              EXPECT_NEAR(acc[static_cast<size_t>(g * hd + d)], ref, 1e-6 * mag + 1e-7)
                  << k->name << " hd " << hd << " n_q " << n_q << " n_k " << n_k;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace keel::backend::cpu
