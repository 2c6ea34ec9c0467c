// The CPU backend's dtype f32 (BackendOptions::dtype): quantized matrices are dequantized to f32 at
// upload and dotted with unrounded f32 activations, so matmul agrees with a double-precision
// reference over the dequantized weights to f32 rounding; the default (dtype auto) rounds the
// activations to 8 bits first and is measurably further off. Float weights stay zero-copy views.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "tensor/dequantize.h"
#include "unit/backend/cpu_test_util.h"

namespace keel::backend::cpu {
namespace {

using test::random_floats;
using test::random_weight;

double rel_err(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(CpuDtypeF32, QuantizedMatmulMatchesDequantizedReference) {
  auto exact = create_backend("cpu", {.n_threads = 2, .dtype = "f32"}).value();
  auto fast = create_backend("cpu", {.n_threads = 2}).value();
  std::mt19937 rng(11);
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kF16}) {
    const int64_t n = 5, k = 512, m = 37;
    const auto bytes = random_weight(rng, t, m, k);
    const tensor::TensorView view{t, tensor::make_shape({m, k}), bytes.data(), bytes.size()};
    std::vector<float> w(static_cast<size_t>(m * k));
    for (int64_t r = 0; r < m; ++r) tensor::dequantize_row(t, view.row(r), w.data() + r * k, k);
    const auto x = random_floats(rng, static_cast<size_t>(n * k));
    std::vector<double> ref(static_cast<size_t>(n * m));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) s += static_cast<double>(x[i * k + l]) * w[j * k + l];
        ref[i * m + j] = s;
      }
    }
    std::vector<float> got[2];
    int idx = 0;
    for (Backend* b : {exact.get(), fast.get()}) {
      Buffer wb = b->upload_weight(view).value();
      if (b == exact.get()) {
        EXPECT_EQ(wb.tensor().dtype, t == DType::kF16 ? DType::kF16 : DType::kF32) << tensor::dtype_name(t);
      }
      Buffer xb = b->alloc(DType::kF32, tensor::make_shape({n, k}));
      b->copy_from_host(x, xb.tensor());
      Buffer ob = b->alloc(DType::kF32, tensor::make_shape({n, m}));
      b->matmul(xb.tensor(), wb.tensor(), nullptr, ob.tensor());
      got[idx].resize(static_cast<size_t>(n * m));
      b->copy_to_host(ob.tensor(), got[idx++]);
    }
    EXPECT_LE(rel_err(got[0], ref), 1e-5) << tensor::dtype_name(t);
    if (t != DType::kF16) {
      EXPECT_GT(rel_err(got[1], ref), 1e-4) << tensor::dtype_name(t) << ": 8-bit activations";
    }
  }
}

TEST(CpuDtypeF32, Bf16IsRefused) {
  auto r = create_backend("cpu", {.dtype = "bf16"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("cuda only"), std::string::npos);
  EXPECT_FALSE(create_backend("cpu", {.dtype = "f16"}).ok());
}

}  // namespace
}  // namespace keel::backend::cpu
