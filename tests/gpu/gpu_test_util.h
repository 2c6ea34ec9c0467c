// Helpers for the CUDA-vs-CPU op tests: both backends, fresh random inputs (seed printed by each
// test), bf16 rounding on the host so both backends see the same values, NaN poisoning, relative error.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/backend.h"

namespace keel::gpu_test {

using backend::Backend;
using backend::Buffer;
using backend::Tensor;
using tensor::DType;

struct Backends {
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<Backend> gpu;
};
// Made once per process; aborts the test binary if there is no CUDA device.
Backends& backends();

// A fresh seed per call (random_device), so every run draws new inputs.
uint64_t fresh_seed();
std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float scale = 1.0f);
std::vector<float> round_bf16(std::vector<float> v);
std::vector<uint16_t> to_bf16_bits(const std::vector<float>& v);

// A tensor of dtype on backend b holding `values`.
Buffer make(Backend& b, DType dtype, tensor::Shape shape, const std::vector<float>& values);
// Fills t with NaN, so elements an op leaves unwritten fail the comparison.
void poison(Backend& b, Tensor& t);
std::vector<float> read(Backend& b, const Tensor& t);

// ||a - b|| / ||b||; +inf when any element of a is NaN or b is all zero.
double rel_err(const std::vector<float>& a, const std::vector<float>& b);
// Error bound for an activation dtype: bf16 1e-2, f32 1e-5.
double tolerance(DType t);

// The targets of a matmul_group check on both backends: weights, biases, the group's outputs (og on
// the GPU, oc the CPU's) and the GPU's single-matmul outputs.
struct GroupOperands {
  std::vector<Buffer> wg, wc, bg, bc, og, oc, single;
  // A target's bias (the same values on both backends) and its [n, m] outputs: the GPU's in `out`
  // (group and single, poisoned), the CPU's in f32. Its weights go in wg / wc by the caller.
  void add_bias_and_outputs(Backend& gpu, Backend& cpu, int64_t n, int64_t m, const std::vector<float>& bias, DType out);
};
// Runs every target through gpu.matmul_group (the second one with its bias), and each through
// gpu.matmul (into `single`) and cpu.matmul: each group output must be within `tol` of the CPU's and
// equal the GPU's single matmul bitwise. `what` names the case in failure messages.
void expect_matmul_group(Backend& gpu, Backend& cpu, const Tensor& xg, const Tensor& xc, GroupOperands& ops, double tol,
                         const std::string& what);

// Test-name suffix of an ActParamTest instantiation: "f32" or "bf16".
inline std::string act_name(const ::testing::TestParamInfo<DType>& p) { return p.param == DType::kF32 ? "f32" : "bf16"; }

// Base of the tests parameterised on the activation dtype: a fresh seed per test (recorded as the
// test's "seed" property), inputs both backends hold exactly (bf16-rounded when the dtype is bf16), and
// the shared cpu and cuda backends.
class ActParamTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    seed_ = fresh_seed();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }
  DType dt() const { return GetParam(); }
  Backend& cpu() { return *backends().cpu; }
  Backend& gpu() { return *backends().gpu; }
  std::vector<float> input(size_t n, float scale = 1.0f) {
    auto v = random_floats(rng_, n, scale);
    return dt() == DType::kBF16 ? round_bf16(std::move(v)) : v;
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace keel::gpu_test
