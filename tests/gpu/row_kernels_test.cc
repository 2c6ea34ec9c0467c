// The prefill-sized row kernels against the CPU backend: rms_norm_rows.cu (rms_norm / add_rms_norm of
// more than 8 rows whose length is a whole number of 16-byte vectors) and SiLU-mul over 16-byte
// vectors (elementwise.cu), at the sizes that pick 2, 4 and 8 vectors per thread, rows with a partly
// filled last warp, rows too long for the kernel, and operands that are not 16-byte aligned (the
// scalar kernels). Fresh random inputs, outputs poisoned with NaN first.
#include <gtest/gtest.h>

#include <tuple>

#include "gpu_test_util.h"

namespace keel::gpu_test {
namespace {

using tensor::make_shape;

class RowKernelTest : public ActParamTest {
 protected:
  // A norm's operands on both backends (cpu in f32, gpu in the test's dtype): x and the residual (its
  // values scaled by r_scale) of n rows of d, a weight of d, and an output, poisoned on the gpu.
  struct NormOperands {
    Buffer xc, xg, rc, rg, wc, wg, oc, og;
  };
  NormOperands norm_operands(int64_t n, int64_t d, float r_scale) {
    const auto shape = make_shape({n, d});
    const auto x = input(static_cast<size_t>(n * d)), r = input(static_cast<size_t>(n * d), r_scale);
    const auto w = random_floats(rng_, static_cast<size_t>(d), 2.0f);
    NormOperands o{.xc = make(cpu(), DType::kF32, shape, x),
                   .xg = make(gpu(), dt(), shape, x),
                   .rc = make(cpu(), DType::kF32, shape, r),
                   .rg = make(gpu(), dt(), shape, r),
                   .wc = make(cpu(), DType::kF32, make_shape({d}), w),
                   .wg = make(gpu(), DType::kF32, make_shape({d}), w),
                   .oc = cpu().alloc(DType::kF32, shape),
                   .og = gpu().alloc(dt(), shape)};
    poison(gpu(), o.og.tensor());
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(Act, RowKernelTest, ::testing::Values(DType::kF32, DType::kBF16), act_name);

TEST_P(RowKernelTest, AddRmsNormManyRows) {
  // d = 520: 65 (bf16) / 130 (f32) vectors, a partly filled last warp; 5120: 320 threads of 2 vectors;
  // 8192: 512 threads of 2 (bf16) / 4 (f32) vectors; 16384: 4 vectors per thread in bf16, too long for
  // the kernel in f32 (rms_norm.cu's); 32768: too long in both.
  for (auto [n, d] : {std::pair{9, 4096}, {300, 520}, {2051, 5120}, {10, 8192}, {17, 16384}, {12, 32768}}) {
    auto [xc, xg, rc, rg, wc, wg, oc, og] = norm_operands(n, d, 3.0f);
    cpu().add_rms_norm(rc.tensor(), xc.tensor(), wc.tensor(), 1e-5f, oc.tensor());
    gpu().add_rms_norm(rg.tensor(), xg.tensor(), wg.tensor(), 1e-5f, og.tensor());
    EXPECT_LE(rel_err(read(gpu(), og.tensor()), read(cpu(), oc.tensor())), tolerance(dt())) << n << "x" << d;
    EXPECT_LE(rel_err(read(gpu(), rg.tensor()), read(cpu(), rc.tensor())), tolerance(dt())) << "residual " << n << "x" << d;
    // Plain RMSNorm of the updated residual, in place (out = x): every load comes before any store.
    cpu().rms_norm(rc.tensor(), wc.tensor(), 1e-6f, rc.tensor());
    gpu().rms_norm(rg.tensor(), wg.tensor(), 1e-6f, rg.tensor());
    EXPECT_LE(rel_err(read(gpu(), rg.tensor()), read(cpu(), rc.tensor())), tolerance(dt())) << "in place " << n << "x" << d;
  }
}

// Rows of 1,028: a whole number of f32 vectors (257, odd: a partly used thread), not of bf16 ones (the
// scalar kernel), viewed from the second row on. SiLU-mul from views one row in: 24 bytes off a 16-byte
// boundary in bf16 (the scalar kernel), 48 in f32 (the vector kernel).
TEST_P(RowKernelTest, UnalignedRowsAndSiluMul) {
  const int64_t n = 40, d = 1028;
  auto [xc, xg, rc, rg, wc, wg, oc, og] = norm_operands(n, d, 1.0f);
  Tensor rcv = rc.tensor().rows(1, n - 1), rgv = rg.tensor().rows(1, n - 1);
  Tensor ocv = oc.tensor().rows(1, n - 1), ogv = og.tensor().rows(1, n - 1);
  cpu().add_rms_norm(rcv, xc.tensor().rows(1, n - 1), wc.tensor(), 1e-5f, ocv);
  gpu().add_rms_norm(rgv, xg.tensor().rows(1, n - 1), wg.tensor(), 1e-5f, ogv);
  EXPECT_LE(rel_err(read(gpu(), ogv), read(cpu(), ocv)), tolerance(dt()));
  EXPECT_LE(rel_err(read(gpu(), rg.tensor()), read(cpu(), rc.tensor())), tolerance(dt()));

  // SiLU-mul: 14,336-wide rows (the 8B FFN) over 16 rows, the same from an offset of one 12-element row,
  // and 4 * 1001 elements (a whole number of f32 vectors, not of bf16 ones).
  for (auto [rows, width, offset] : {std::tuple{16, 14336, 0}, {33, 12, 1}, {1001, 4, 0}}) {
    const auto s = make_shape({rows, width});
    const auto a = input(static_cast<size_t>(rows * width), 4.0f), b = input(static_cast<size_t>(rows * width), 4.0f);
    Buffer ac = make(cpu(), DType::kF32, s, a), ag = make(gpu(), dt(), s, a);
    Buffer bc = make(cpu(), DType::kF32, s, b), bg = make(gpu(), dt(), s, b);
    Buffer sc = cpu().alloc(DType::kF32, s), sg = gpu().alloc(dt(), s);
    poison(gpu(), sg.tensor());
    const int64_t m = rows - offset;
    Tensor scv = sc.tensor().rows(offset, m), sgv = sg.tensor().rows(offset, m);
    cpu().silu_mul(ac.tensor().rows(offset, m), bc.tensor().rows(offset, m), scv);
    gpu().silu_mul(ag.tensor().rows(offset, m), bg.tensor().rows(offset, m), sgv);
    EXPECT_LE(rel_err(read(gpu(), sgv), read(cpu(), scv)), tolerance(dt())) << rows << "x" << width << " +" << offset;
  }
}

}  // namespace
}  // namespace keel::gpu_test
