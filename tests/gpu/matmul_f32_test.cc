// The CUDA backend's f32 precision mode (BackendOptions::dtype "f32"): matmul (decode GEMV and cuBLAS
// fp32 GEMM), matmul_group and embed against the CPU backend with dtype f32 (quantized weights
// dequantized to f32 at load: the same arithmetic) and against a double-precision host reference over
// the dequantized weights, on fresh random inputs, outputs poisoned with NaN first; relative error
// <= 1e-5 (TF32 would miss that at k = 4096). With KEEL_CUDA_F32_Q8ACT=1 the f32 mode rounds the
// activations to 8 bits as the CPU backend's default (dtype auto) does before its integer dots: that
// variant is checked against the default CPU backend (without the rounding the error is ~1e-2).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

#include "gpu_test_util.h"
#include "tensor/dequantize.h"
#include "tensor/half.h"

namespace keel::gpu_test {
namespace {

using tensor::make_shape;

std::unique_ptr<Backend> make_backend(const char* name, const char* dtype, bool q8act) {
  if (q8act) setenv("KEEL_CUDA_F32_Q8ACT", "1", 1);  // read when the backend is made
  auto r = backend::create_backend(name, {.dtype = dtype});
  unsetenv("KEEL_CUDA_F32_Q8ACT");
  if (!r.ok()) {
    std::fprintf(stderr, "f32 tests: %s\n", r.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

Backend& gpu_f32() {
  static std::unique_ptr<Backend> b = make_backend("cuda", "f32", false);
  return *b;
}
Backend& gpu_f32_q8() {
  static std::unique_ptr<Backend> b = make_backend("cuda", "f32", true);
  return *b;
}
Backend& cpu_f32() {
  static std::unique_ptr<Backend> b = make_backend("cpu", "f32", false);
  return *b;
}

// Random weight bytes of type wt [m, k]: float types from uniform values, quantized types from random
// quants with small finite scales.
std::vector<uint8_t> random_weight(std::mt19937_64& rng, DType wt, int64_t m, int64_t k) {
  std::vector<uint8_t> bytes(static_cast<size_t>(m) * tensor::row_size_bytes(wt, k));
  if (wt == DType::kF32) {
    const auto f = random_floats(rng, static_cast<size_t>(m * k), 0.1f);
    std::memcpy(bytes.data(), f.data(), bytes.size());
    return bytes;
  }
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  const size_t bb = tensor::dtype_info(wt).block_bytes;
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  for (size_t off = 0; off < bytes.size(); off += bb) {
    const uint16_t d = tensor::f32_to_fp16(scale(rng)), mn = tensor::f32_to_fp16(-scale(rng));
    if (wt == DType::kQ6_K) {
      std::memcpy(bytes.data() + off + bb - 2, &d, 2);  // d is the last field
    } else {
      std::memcpy(bytes.data() + off, &d, 2);
      if (wt == DType::kQ4_1 || wt == DType::kQ4_K) std::memcpy(bytes.data() + off + 2, &mn, 2);
    }
  }
  return bytes;
}

struct Outs {
  std::vector<float> gpu, cpu, ref;  // ref: double over dequantized weights and unrounded x
};

Outs run_matmul(Backend& gpu, Backend& cpu, std::mt19937_64& rng, DType wt, int64_t n, int64_t k, int64_t m,
                bool with_bias) {
  const auto x = random_floats(rng, static_cast<size_t>(n * k));
  const auto wbytes = random_weight(rng, wt, m, k);
  const tensor::TensorView view{wt, make_shape({m, k}), wbytes.data(), wbytes.size()};
  const auto bias = random_floats(rng, static_cast<size_t>(m));
  Buffer wg = gpu.upload_weight(view).value(), wc = cpu.upload_weight(view).value();
  Buffer xg = make(gpu, DType::kF32, make_shape({n, k}), x), xc = make(cpu, DType::kF32, make_shape({n, k}), x);
  Buffer bg = make(gpu, DType::kF32, make_shape({m}), bias), bc = make(cpu, DType::kF32, make_shape({m}), bias);
  Buffer og = gpu.alloc(DType::kF32, make_shape({n, m})), oc = cpu.alloc(DType::kF32, make_shape({n, m}));
  poison(gpu, og.tensor());
  EXPECT_EQ(wg.tensor().dtype, DType::kF32);
  gpu.matmul(xg.tensor(), wg.tensor(), with_bias ? &bg.tensor() : nullptr, og.tensor());
  cpu.matmul(xc.tensor(), wc.tensor(), with_bias ? &bc.tensor() : nullptr, oc.tensor());
  Outs o{read(gpu, og.tensor()), read(cpu, oc.tensor()), std::vector<float>(static_cast<size_t>(n * m))};
  std::vector<float> wref(static_cast<size_t>(m * k));
  for (int64_t r = 0; r < m; ++r) tensor::dequantize_row(wt, view.row(r), wref.data() + r * k, k);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double s = with_bias ? bias[static_cast<size_t>(j)] : 0.0;
      for (int64_t l = 0; l < k; ++l) {
        s += static_cast<double>(x[static_cast<size_t>(i * k + l)]) * wref[static_cast<size_t>(j * k + l)];
      }
      o.ref[static_cast<size_t>(i * m + j)] = static_cast<float>(s);
    }
  }
  return o;
}

TEST(F32Mode, ActivationDtype) { EXPECT_EQ(gpu_f32().activation_dtype(), DType::kF32); }

constexpr DType kWeightTypes[] = {DType::kF32, DType::kQ4_1, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};
// n <= 8 with k % 4 == 0 runs the GEMV kernel, the rest cuBLAS (fp32).
constexpr std::tuple<int, int, int> kShapes[] = {{1, 576, 576},   {3, 1536, 577}, {8, 4096, 1000}, {9, 576, 1536},
                                                 {33, 4096, 515}, {130, 768, 700}, {2, 100, 50},   {5, 98, 33}};

TEST(F32Mode, MatmulMatchesCpuF32AndHostReference) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType wt : kWeightTypes) {
    for (auto [n, k, m] : kShapes) {
      if (k % tensor::block_size(wt) != 0) continue;  // quantized rows are whole blocks
      const Outs o = run_matmul(gpu_f32(), cpu_f32(), rng, wt, n, k, m, /*with_bias=*/m % 2 == 1);
      const auto what = ::testing::Message() << tensor::dtype_name(wt) << " " << n << "x" << k << "x" << m << " seed "
                                             << seed;
      EXPECT_LE(rel_err(o.gpu, o.cpu), 1e-5) << what;
      EXPECT_LE(rel_err(o.gpu, o.ref), 1e-5) << what;
    }
  }
}

TEST(F32Mode, Q8ActivationRoundingMatchesDefaultCpu) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType wt : kWeightTypes) {
    for (auto [n, k, m] : kShapes) {
      if (k % tensor::block_size(wt) != 0) continue;
      const Outs o = run_matmul(gpu_f32_q8(), *backends().cpu, rng, wt, n, k, m, /*with_bias=*/m % 2 == 1);
      EXPECT_LE(rel_err(o.gpu, o.cpu), 1e-5) << tensor::dtype_name(wt) << " " << n << "x" << k << "x" << m << " seed "
                                             << seed;
    }
  }
}

// matmul_group (one GEMV launch for Q/K/V or gate/up): bitwise the GPU's single matmuls, and the CPU's.
TEST(F32Mode, GroupMatchesSingleAndCpu) {
  Backend& gpu = gpu_f32();
  Backend& cpu = cpu_f32();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType wt : {DType::kQ4_1, DType::kF32}) {
    for (auto [n, k] : {std::pair{1, 576}, {3, 1536}, {8, 4096}, {12, 256}}) {
      const std::vector<int64_t> ms = {96, 33, 50};
      const auto x = random_floats(rng, static_cast<size_t>(n * k));
      Buffer xg = make(gpu, DType::kF32, make_shape({n, k}), x), xc = make(cpu, DType::kF32, make_shape({n, k}), x);
      std::vector<std::vector<uint8_t>> wbytes;
      GroupOperands ops;
      for (size_t i = 0; i < ms.size(); ++i) {
        const int64_t m = ms[i];
        wbytes.push_back(random_weight(rng, wt, m, k));
        const tensor::TensorView view{wt, make_shape({m, k}), wbytes.back().data(), wbytes.back().size()};
        const auto b = random_floats(rng, static_cast<size_t>(m));
        ops.wg.push_back(gpu.upload_weight(view).value());
        ops.wc.push_back(cpu.upload_weight(view).value());
        ops.add_bias_and_outputs(gpu, cpu, n, m, b, DType::kF32);
      }
      expect_matmul_group(gpu, cpu, xg.tensor(), xc.tensor(), ops, 1e-5,
                          fmt::format("{} {}x{} seed {}", tensor::dtype_name(wt), n, k, seed));
    }
  }
}

// An f32 table (uploaded from Q8_0, as SmolLM2's token_embd): the rows cpu dequantizes, exactly.
TEST(F32Mode, EmbedFromQuantizedTableIsExact) {
  Backend& gpu = gpu_f32();
  Backend& cpu = cpu_f32();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const int64_t vocab = 1000, d = 576, n = 37;
  const auto bytes = random_weight(rng, DType::kQ8_0, vocab, d);
  const tensor::TensorView view{DType::kQ8_0, make_shape({vocab, d}), bytes.data(), bytes.size()};
  Buffer wg = gpu.upload_weight(view).value(), wc = cpu.upload_weight(view).value();
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  Buffer og = gpu.alloc(DType::kF32, make_shape({n, d})), oc = cpu.alloc(DType::kF32, make_shape({n, d}));
  poison(gpu, og.tensor());
  gpu.embed(wg.tensor(), ids, og.tensor());
  cpu.embed(wc.tensor(), ids, oc.tensor());
  EXPECT_EQ(read(gpu, og.tensor()), read(cpu, oc.tensor())) << "seed " << seed;
}

}  // namespace
}  // namespace keel::gpu_test
