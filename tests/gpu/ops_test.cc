// Every CUDA op but attention against the CPU backend on fresh random inputs, f32 and bf16
// activations, several shapes including odd sizes; outputs poisoned with NaN first.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "gpu_test_util.h"
#include "tensor/blocks.h"
#include "tensor/dequantize.h"
#include "tensor/half.h"

namespace keel::gpu_test {
namespace {

using tensor::make_shape;

class OpTest : public ActParamTest {};

INSTANTIATE_TEST_SUITE_P(Act, OpTest, ::testing::Values(DType::kF32, DType::kBF16), act_name);

TEST_P(OpTest, Embed) {
  for (auto [vocab, d, n] : {std::tuple{1000, 64, 5}, {517, 67, 33}, {4000, 896, 1}}) {
    const auto table = round_bf16(random_floats(rng_, static_cast<size_t>(vocab * d)));
    const auto bits = to_bf16_bits(table);
    const tensor::TensorView view{DType::kBF16, make_shape({vocab, d}), bits.data(), bits.size() * 2};
    Buffer wc = cpu().upload_weight(view).value(), wg = gpu().upload_weight(view).value();
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = static_cast<int32_t>(rng_() % static_cast<uint64_t>(vocab));
    Buffer oc = cpu().alloc(DType::kF32, make_shape({n, d})), og = gpu().alloc(dt(), make_shape({n, d}));
    poison(gpu(), og.tensor());
    cpu().embed(wc.tensor(), ids, oc.tensor());
    gpu().embed(wg.tensor(), ids, og.tensor());
    EXPECT_LE(rel_err(read(gpu(), og.tensor()), read(cpu(), oc.tensor())), tolerance(dt())) << vocab << "x" << d << " seed " << seed_;
  }
}

TEST_P(OpTest, RmsNormAndAddRmsNorm) {
  for (auto [n, d] : {std::pair{1, 64}, {7, 4096}, {33, 67}, {130, 896}}) {
    const auto shape = make_shape({n, d});
    const auto x = input(static_cast<size_t>(n * d)), r = input(static_cast<size_t>(n * d));
    const auto w = random_floats(rng_, static_cast<size_t>(d), 2.0f);
    Buffer xc = make(cpu(), DType::kF32, shape, x), xg = make(gpu(), dt(), shape, x);
    Buffer rc = make(cpu(), DType::kF32, shape, r), rg = make(gpu(), dt(), shape, r);
    Buffer wc = make(cpu(), DType::kF32, make_shape({d}), w), wg = make(gpu(), DType::kF32, make_shape({d}), w);
    Buffer oc = cpu().alloc(DType::kF32, shape), og = gpu().alloc(dt(), shape);
    poison(gpu(), og.tensor());
    cpu().rms_norm(xc.tensor(), wc.tensor(), 1e-6f, oc.tensor());
    gpu().rms_norm(xg.tensor(), wg.tensor(), 1e-6f, og.tensor());
    EXPECT_LE(rel_err(read(gpu(), og.tensor()), read(cpu(), oc.tensor())), tolerance(dt())) << n << "x" << d;
    poison(gpu(), og.tensor());
    cpu().add_rms_norm(rc.tensor(), xc.tensor(), wc.tensor(), 1e-5f, oc.tensor());
    gpu().add_rms_norm(rg.tensor(), xg.tensor(), wg.tensor(), 1e-5f, og.tensor());
    EXPECT_LE(rel_err(read(gpu(), og.tensor()), read(cpu(), oc.tensor())), tolerance(dt())) << n << "x" << d;
    EXPECT_LE(rel_err(read(gpu(), rg.tensor()), read(cpu(), rc.tensor())), tolerance(dt())) << "residual " << n << "x" << d;
  }
}

TEST_P(OpTest, Rope) {
  for (auto style : {backend::RopeStyle::kNeox, backend::RopeStyle::kInterleaved}) {
    for (auto [n, heads, hd, rot] : {std::tuple{1, 4, 64, 64}, {37, 8, 128, 128}, {5, 3, 72, 72}, {9, 2, 64, 32}}) {
      std::vector<float> inv_freq(static_cast<size_t>(rot / 2));
      for (int i = 0; i < rot / 2; ++i) inv_freq[static_cast<size_t>(i)] = std::pow(10000.0f, -2.0f * i / rot);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      for (auto& p : pos) p = static_cast<int32_t>(rng_() % 9000);
      const backend::RopeParams rp{.style = style, .rot_dims = rot, .inv_freq = inv_freq, .attn_factor = 1.1f};
      const auto shape = make_shape({n, heads, hd});
      const auto x = input(static_cast<size_t>(n * heads * hd));
      Buffer xc = make(cpu(), DType::kF32, shape, x), xg = make(gpu(), dt(), shape, x);
      cpu().rope(xc.tensor(), pos, rp);
      gpu().rope(xg.tensor(), pos, rp);
      EXPECT_LE(rel_err(read(gpu(), xg.tensor()), read(cpu(), xc.tensor())), tolerance(dt()))
          << n << "x" << heads << "x" << hd << " rot " << rot;
    }
  }
}

// The staging memo must notice a host span that changed in place between two ops of one epoch.
TEST_P(OpTest, RopeSeesChangedPositionsWithoutSync) {
  const int n = 16, heads = 2, hd = 64;
  std::vector<float> inv_freq(hd / 2);
  for (int i = 0; i < hd / 2; ++i) inv_freq[static_cast<size_t>(i)] = std::pow(10000.0f, -2.0f * i / hd);
  std::vector<int32_t> pos(n);
  std::iota(pos.begin(), pos.end(), 0);
  const backend::RopeParams rp{.style = backend::RopeStyle::kNeox, .rot_dims = hd, .inv_freq = inv_freq};
  const auto shape = make_shape({n, heads, hd});
  const auto x = input(static_cast<size_t>(n * heads * hd));
  Buffer xc = make(cpu(), DType::kF32, shape, x), xg = make(gpu(), dt(), shape, x);
  cpu().rope(xc.tensor(), pos, rp);
  gpu().rope(xg.tensor(), pos, rp);
  for (auto& p : pos) p += 1000;
  cpu().rope(xc.tensor(), pos, rp);
  gpu().rope(xg.tensor(), pos, rp);
  EXPECT_LE(rel_err(read(gpu(), xg.tensor()), read(cpu(), xc.tensor())), tolerance(dt()));
}

TEST_P(OpTest, WriteKv) {
  for (auto [n_slots, n, w] : {std::tuple{64, 5, 128}, {5000, 300, 1024}, {97, 13, 72}}) {
    const auto kc0 = input(static_cast<size_t>(n_slots * w)), vc0 = input(static_cast<size_t>(n_slots * w));
    const auto k = input(static_cast<size_t>(n * w)), v = input(static_cast<size_t>(n * w));
    std::vector<int32_t> slots(static_cast<size_t>(n_slots));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng_);
    slots.resize(static_cast<size_t>(n));
    const auto cs = make_shape({n_slots, w}), ks = make_shape({n, w});
    Buffer kcc = make(cpu(), DType::kF32, cs, kc0), kcg = make(gpu(), dt(), cs, kc0);
    Buffer vcc = make(cpu(), DType::kF32, cs, vc0), vcg = make(gpu(), dt(), cs, vc0);
    Buffer kc = make(cpu(), DType::kF32, ks, k), kg = make(gpu(), dt(), ks, k);
    Buffer vc = make(cpu(), DType::kF32, ks, v), vg = make(gpu(), dt(), ks, v);
    cpu().write_kv(kc.tensor(), vc.tensor(), slots, kcc.tensor(), vcc.tensor());
    gpu().write_kv(kg.tensor(), vg.tensor(), slots, kcg.tensor(), vcg.tensor());
    EXPECT_EQ(read(gpu(), kcg.tensor()), read(cpu(), kcc.tensor()));
    EXPECT_EQ(read(gpu(), vcg.tensor()), read(cpu(), vcc.tensor()));
  }
}

TEST_P(OpTest, SiluMulAddGather) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{12345}, int64_t{(1 << 20) + 3}}) {
    const auto shape = make_shape({n});
    const auto a = input(static_cast<size_t>(n), 4.0f), b = input(static_cast<size_t>(n), 4.0f);
    Buffer ac = make(cpu(), DType::kF32, shape, a), ag = make(gpu(), dt(), shape, a);
    Buffer bc = make(cpu(), DType::kF32, shape, b), bg = make(gpu(), dt(), shape, b);
    Buffer oc = cpu().alloc(DType::kF32, shape), og = gpu().alloc(dt(), shape);
    poison(gpu(), og.tensor());
    cpu().silu_mul(ac.tensor(), bc.tensor(), oc.tensor());
    gpu().silu_mul(ag.tensor(), bg.tensor(), og.tensor());
    EXPECT_LE(rel_err(read(gpu(), og.tensor()), read(cpu(), oc.tensor())), tolerance(dt())) << "silu_mul " << n;
    poison(gpu(), og.tensor());
    cpu().add(ac.tensor(), bc.tensor(), oc.tensor());
    gpu().add(ag.tensor(), bg.tensor(), og.tensor());
    EXPECT_LE(rel_err(read(gpu(), og.tensor()), read(cpu(), oc.tensor())), tolerance(dt())) << "add " << n;
  }
  for (auto [rows, d, r] : {std::tuple{10, 64, 3}, {300, 4096, 64}, {7, 67, 9}}) {
    const auto x = input(static_cast<size_t>(rows * d));
    std::vector<int32_t> idx(static_cast<size_t>(r));
    for (auto& i : idx) i = static_cast<int32_t>(rng_() % static_cast<uint64_t>(rows));  // repeats allowed
    Buffer xc = make(cpu(), DType::kF32, make_shape({rows, d}), x), xg = make(gpu(), dt(), make_shape({rows, d}), x);
    Buffer oc = cpu().alloc(DType::kF32, make_shape({r, d})), og = gpu().alloc(dt(), make_shape({r, d}));
    poison(gpu(), og.tensor());
    cpu().gather_rows(xc.tensor(), idx, oc.tensor());
    gpu().gather_rows(xg.tensor(), idx, og.tensor());
    EXPECT_EQ(read(gpu(), og.tensor()), read(cpu(), oc.tensor())) << "gather " << rows << "x" << d;
  }
}

// Blocks past 4 GiB: the pool's size rounding once truncated them to 32 bits (a memset then failed).
TEST(DevicePool, AllocationPastFourGiB) {
  Backend& gpu = *backends().gpu;
  const int64_t rows = (int64_t{1} << 21) + 3, d = 1024;  // ~4.3 GB of bf16
  Buffer big = gpu.alloc(DType::kBF16, make_shape({rows, d}));
  std::vector<float> ones(static_cast<size_t>(d), 1.0f);
  Tensor last = big.tensor().rows(rows - 1, 1);
  gpu.copy_from_host(ones, last);
  const std::vector<int32_t> idx = {static_cast<int32_t>(rows - 1), 0};
  Buffer out = gpu.alloc(DType::kBF16, make_shape({2, d}));
  poison(gpu, out.tensor());
  gpu.gather_rows(big.tensor(), idx, out.tensor());
  const auto got = read(gpu, out.tensor());
  for (int64_t i = 0; i < d; ++i) {
    ASSERT_EQ(got[static_cast<size_t>(i)], 1.0f) << i;
    ASSERT_EQ(got[static_cast<size_t>(d + i)], 0.0f) << i;  // alloc zero-fills
  }
}

// matmul against a double-precision host reference over the dequantized weight (bf16 x and bf16
// weights on the GPU, f32 accumulate): F32, BF16, F16 and quantized GGUF weights, with and without bias.
double matmul_err(std::mt19937_64& rng, DType wt, int64_t n, int64_t k, int64_t m, DType out_dt, bool with_bias) {
  Backend& gpu = *backends().gpu;
  const auto x = round_bf16(random_floats(rng, static_cast<size_t>(n * k)));
  std::vector<uint8_t> wbytes(static_cast<size_t>(m) * tensor::row_size_bytes(wt, k));
  const auto wf = random_floats(rng, static_cast<size_t>(m * k), 0.1f);
  if (wt == DType::kF32) {
    std::memcpy(wbytes.data(), wf.data(), wbytes.size());
  } else if (wt == DType::kBF16 || wt == DType::kF16) {
    for (size_t i = 0; i < wf.size(); ++i) {
      const uint16_t h = wt == DType::kBF16 ? tensor::f32_to_bf16(wf[i]) : tensor::f32_to_fp16(wf[i]);
      std::memcpy(wbytes.data() + 2 * i, &h, 2);
    }
  } else {  // random blocks: scales small, quants random
    for (auto& b : wbytes) b = static_cast<uint8_t>(rng());
    const size_t bb = tensor::dtype_info(wt).block_bytes;
    for (size_t off = 0; off < wbytes.size(); off += bb) {
      const uint16_t d = tensor::f32_to_fp16(0.01f), mn = tensor::f32_to_fp16(-0.05f);
      std::memcpy(wbytes.data() + off, &d, 2);
      if (wt == DType::kQ4_1) std::memcpy(wbytes.data() + off + 2, &mn, 2);
    }
  }
  const tensor::TensorView view{wt, make_shape({m, k}), wbytes.data(), wbytes.size()};
  std::vector<float> wref(static_cast<size_t>(m * k));
  for (int64_t r = 0; r < m; ++r) tensor::dequantize_row(wt, view.row(r), wref.data() + r * k, k);
  const auto bias = random_floats(rng, static_cast<size_t>(m));
  std::vector<float> ref(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double s = with_bias ? bias[static_cast<size_t>(j)] : 0.0;
      for (int64_t l = 0; l < k; ++l) s += static_cast<double>(x[static_cast<size_t>(i * k + l)]) * wref[static_cast<size_t>(j * k + l)];
      ref[static_cast<size_t>(i * m + j)] = static_cast<float>(s);
    }
  }
  Buffer w = gpu.upload_weight(view).value();
  Buffer xg = make(gpu, DType::kBF16, make_shape({n, k}), x);
  Buffer bg = make(gpu, DType::kF32, make_shape({m}), bias);
  Buffer og = gpu.alloc(out_dt, make_shape({n, m}));
  poison(gpu, og.tensor());
  gpu.matmul(xg.tensor(), w.tensor(), with_bias ? &bg.tensor() : nullptr, og.tensor());
  return rel_err(read(gpu, og.tensor()), ref);
}

TEST(Matmul, AgainstHostReference) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (DType wt : {DType::kF32, DType::kBF16, DType::kF16, DType::kQ8_0, DType::kQ4_1}) {
    // n <= 8 with k % 8 == 0 runs the decode GEMV kernel, the rest cuBLAS.
    for (auto [n, k, m] : {std::tuple{1, 64, 96}, {7, 4096, 1000}, {33, 896, 4864}, {5, 96, 131}, {2, 4096, 777},
                           {8, 1000, 64}, {3, 72, 33}, {9, 4096, 512}, {1, 100, 50}}) {
      if (k % tensor::block_size(wt) != 0) continue;  // quantized rows are whole blocks
      for (DType out : {DType::kF32, DType::kBF16}) {
        EXPECT_LE(matmul_err(rng, wt, n, k, m, out, /*with_bias=*/m % 2 == 1), 1e-2)
            << tensor::dtype_name(wt) << " " << n << "x" << k << "x" << m << " seed " << seed;
      }
    }
  }
}

// matmul_group (Q/K/V, gate/up in one launch for n <= 8): every output against the CPU backend's
// matmul on the same bf16 inputs, and bitwise against the GPU's own single matmul (same per-row sums).
TEST(Matmul, GroupMatchesSingleAndCpu) {
  Backend& gpu = *backends().gpu;
  Backend& cpu = *backends().cpu;
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  // k = 14,336: the down projection's rows.
  for (auto [n, k] : {std::pair{1, 4096}, {1, 14336}, {3, 96}, {8, 1000}, {8, 4096}, {12, 256}}) {
    const std::vector<int64_t> ms = {96, 33, 50};
    const auto x = round_bf16(random_floats(rng, static_cast<size_t>(n * k)));
    Buffer xg = make(gpu, DType::kBF16, make_shape({n, k}), x);
    Buffer xc = make(cpu, DType::kF32, make_shape({n, k}), x);
    GroupOperands ops;
    for (int64_t m : ms) {
      const auto w = round_bf16(random_floats(rng, static_cast<size_t>(m * k), 0.1f));
      const auto b = random_floats(rng, static_cast<size_t>(m));
      const auto bits = to_bf16_bits(w);
      const tensor::TensorView view{DType::kBF16, make_shape({m, k}), bits.data(), bits.size() * 2};
      ops.wg.push_back(gpu.upload_weight(view).value());
      ops.wc.push_back(make(cpu, DType::kF32, make_shape({m, k}), w));
      ops.add_bias_and_outputs(gpu, cpu, n, m, b, DType::kBF16);
    }
    expect_matmul_group(gpu, cpu, xg.tensor(), xc.tensor(), ops, 1e-2, fmt::format("{}x{} seed {}", n, k, seed));
  }
}

}  // namespace
}  // namespace keel::gpu_test
