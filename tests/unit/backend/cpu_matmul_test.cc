// CPU matmul for every weight dtype vs a double-precision reference over the dequantized weights,
// for every kernel table this CPU runs. Quantized paths round activations to 8 bits, so they are held
// to q8_dot_tolerance (derived from that rounding); float paths to f32 rounding.
#include <gtest/gtest.h>

#include <random>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "base/thread_pool.h"
#include "unit/backend/cpu_test_util.h"

namespace keel::backend::cpu {
namespace {

using test::random_floats;
using test::random_weight;

std::vector<const Kernels*> tables() {
  std::vector<const Kernels*> t{&scalar_kernels()};
  if (const Kernels* k = avx2_kernels()) t.push_back(k);
  if (const Kernels* k = avx512_kernels()) t.push_back(k);
  return t;
}

struct Case {
  DType dtype;
  int64_t n, k, m;
};

void check_matmul(const Kernels& kern, ThreadPool& pool, const Case& cs, bool with_bias, uint32_t seed) {
  std::mt19937 rng(seed);
  Workspace ws(pool.n_threads());
  OpContext c{&pool, &kern, &ws};
  std::vector<float> x = random_floats(rng, static_cast<size_t>(cs.n * cs.k), -2.0f, 2.0f);
  std::vector<uint8_t> wb = random_weight(rng, cs.dtype, cs.m, cs.k);
  std::vector<float> bias = random_floats(rng, static_cast<size_t>(cs.m));
  std::vector<float> out(static_cast<size_t>(cs.n * cs.m), -7.0f);
  Tensor xt = test::view(x, {cs.n, cs.k});
  Tensor wt = test::view(wb, cs.dtype, {cs.m, cs.k});
  Tensor bt = test::view(bias, {cs.m});
  Tensor ot = test::view(out, {cs.n, cs.m});
  matmul(c, xt, wt, with_bias ? &bt : nullptr, ot);

  std::vector<float> wf(static_cast<size_t>(cs.k));
  const size_t row_bytes = tensor::row_size_bytes(cs.dtype, cs.k);
  const bool quantized = activation_format(cs.dtype) != DType::kF32;
  const int64_t qblock = activation_format(cs.dtype) == DType::kQ8_K ? 256 : 32;
  for (int64_t r = 0; r < cs.m; ++r) {
    dequantize_row(cs.dtype, wb.data() + r * row_bytes, wf.data(), cs.k);
    for (int64_t i = 0; i < cs.n; ++i) {
      const float* xi = x.data() + i * cs.k;
      double ref = with_bias ? bias[static_cast<size_t>(r)] : 0.0, mag = 0.0;
      for (int64_t j = 0; j < cs.k; ++j) {
        ref += static_cast<double>(wf[static_cast<size_t>(j)]) * xi[j];
        mag += std::fabs(static_cast<double>(wf[static_cast<size_t>(j)]) * xi[j]);
      }
      const double tol = quantized ? test::q8_dot_tolerance(wf.data(), xi, cs.k, qblock) : 1e-5 * mag + 1e-6;
      ASSERT_NEAR(out[static_cast<size_t>(i * cs.m + r)], ref, tol)
          << kern.name << " " << tensor::dtype_name(cs.dtype) << " n=" << cs.n << " row " << r << " token " << i;
    }
  }
}

TEST(CpuMatmul, EveryWeightDtypeEveryKernelTable) {
  ThreadPool pool(3);
  const std::vector<Case> cases = {
      {DType::kF32, 3, 37, 29},    {DType::kF16, 5, 77, 31},    {DType::kBF16, 2, 45, 19},
      {DType::kQ4_0, 1, 96, 37},   {DType::kQ4_0, 7, 160, 21},  {DType::kQ4_1, 1, 576, 67},
      {DType::kQ4_1, 9, 224, 33},  {DType::kQ8_0, 1, 64, 41},   {DType::kQ8_0, 6, 288, 23},
      {DType::kQ4_K, 1, 512, 13},  {DType::kQ4_K, 5, 768, 11},  {DType::kQ6_K, 1, 256, 17},
      {DType::kQ6_K, 4, 1024, 9},  {DType::kQ8_K, 3, 256, 7},
  };
  uint32_t seed = 1;
  for (const Kernels* k : tables()) {
    for (const Case& cs : cases) {
      check_matmul(*k, pool, cs, /*with_bias=*/seed % 2 == 0, seed);
      ++seed;
    }
  }
}

TEST(CpuMatmul, PrefillSizedBatchSplitsOverThreads) {
  ThreadPool pool(2);
  for (const Kernels* k : tables()) {
    check_matmul(*k, pool, {DType::kQ4_1, 67, 576, 130}, true, 99);
    check_matmul(*k, pool, {DType::kQ8_0, 33, 192, 300}, false, 98);
  }
}

TEST(CpuMatmul, BackendFromCreateBackendMatchesOpCall) {
  auto be = create_backend("cpu", {.n_threads = 2});
  ASSERT_TRUE(be.ok()) << be.status().to_string();
  std::mt19937 rng(5);
  std::vector<float> x = random_floats(rng, 3 * 64);
  std::vector<uint8_t> wb = random_weight(rng, DType::kQ4_1, 10, 64);
  tensor::TensorView hv{DType::kQ4_1, tensor::make_shape({10, 64}), wb.data(), wb.size()};
  auto w = (*be)->upload_weight(hv);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  Buffer xb = (*be)->alloc(DType::kF32, tensor::make_shape({3, 64}));
  Buffer ob = (*be)->alloc(DType::kF32, tensor::make_shape({3, 10}));
  (*be)->copy_from_host(x, xb.tensor());
  (*be)->matmul(xb.tensor(), w->tensor(), nullptr, ob.tensor());
  std::vector<float> got(30);
  (*be)->copy_to_host(ob.tensor(), got);

  ThreadPool pool(1);
  Workspace ws(1);
  OpContext c{&pool, &cpu_kernels(), &ws};
  std::vector<float> want(30);
  Tensor wt = test::view(wb, DType::kQ4_1, {10, 64});
  Tensor ot = test::view(want, {3, 10});
  matmul(c, test::view(x, {3, 64}), wt, nullptr, ot);
  EXPECT_EQ(got, want);
}

TEST(CpuBackend, RejectsUnsupportedAndTruncatedWeights) {
  auto be = create_backend("cpu", {});
  ASSERT_TRUE(be.ok());
  std::vector<uint8_t> bytes(100);
  tensor::TensorView fp8{DType::kF8E4M3, tensor::make_shape({10, 10}), bytes.data(), bytes.size()};
  EXPECT_EQ((*be)->upload_weight(fp8).status().code(), ErrorCode::kUnsupported);
  tensor::TensorView short_q{DType::kQ4_0, tensor::make_shape({10, 32}), bytes.data(), bytes.size()};
  EXPECT_EQ((*be)->upload_weight(short_q).status().code(), ErrorCode::kCorruptFile);
  tensor::TensorView ragged{DType::kQ4_0, tensor::make_shape({1, 33}), bytes.data(), bytes.size()};
  EXPECT_EQ((*be)->upload_weight(ragged).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(create_backend("tpu", {}).ok());
  EXPECT_FALSE(create_backend("cpu", {.n_threads = -1}).ok());
}

}  // namespace
}  // namespace keel::backend::cpu
