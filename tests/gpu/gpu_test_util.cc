#include "gpu_test_util.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "tensor/half.h"

namespace keel::gpu_test {

Backends& backends() {
  static Backends* b = [] {
    auto* out = new Backends;
    auto cpu = backend::create_backend("cpu", {});
    auto gpu = backend::create_backend("cuda", {});
    if (!cpu.ok() || !gpu.ok()) {
      std::fprintf(stderr, "keel_gpu_ops_tests needs a CUDA device: %s\n",
                   (gpu.ok() ? cpu.status() : gpu.status()).to_string().c_str());
      std::exit(1);
    }
    out->cpu = std::move(cpu).value();
    out->gpu = std::move(gpu).value();
    return out;
  }();
  return *b;
}

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> round_bf16(std::vector<float> v) {
  for (float& x : v) x = tensor::bf16_to_f32(tensor::f32_to_bf16(x));
  return v;
}

std::vector<uint16_t> to_bf16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = tensor::f32_to_bf16(v[i]);
  return out;
}

Buffer make(Backend& b, DType dtype, tensor::Shape shape, const std::vector<float>& values) {
  Buffer buf = b.alloc(dtype, shape);
  b.copy_from_host(values, buf.tensor());
  return buf;
}

void poison(Backend& b, Tensor& t) {
  std::vector<float> nan(static_cast<size_t>(t.numel()), std::numeric_limits<float>::quiet_NaN());
  b.copy_from_host(nan, t);
}

std::vector<float> read(Backend& b, const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  b.copy_to_host(t, out);
  return out;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return den == 0 ? std::numeric_limits<double>::infinity() : std::sqrt(num / den);
}

double tolerance(DType t) { return t == DType::kBF16 ? 1e-2 : 1e-5; }

void GroupOperands::add_bias_and_outputs(Backend& gpu, Backend& cpu, int64_t n, int64_t m,
                                         const std::vector<float>& bias, DType out) {
  bg.push_back(make(gpu, DType::kF32, tensor::make_shape({m}), bias));
  bc.push_back(make(cpu, DType::kF32, tensor::make_shape({m}), bias));
  og.push_back(gpu.alloc(out, tensor::make_shape({n, m})));
  poison(gpu, og.back().tensor());
  oc.push_back(cpu.alloc(DType::kF32, tensor::make_shape({n, m})));
  single.push_back(gpu.alloc(out, tensor::make_shape({n, m})));
  poison(gpu, single.back().tensor());
}

void expect_matmul_group(Backend& gpu, Backend& cpu, const Tensor& xg, const Tensor& xc, GroupOperands& ops, double tol,
                         const std::string& what) {
  std::vector<Backend::MatmulTarget> targets;
  for (size_t i = 0; i < ops.wg.size(); ++i) {
    targets.push_back({&ops.wg[i].tensor(), i == 1 ? &ops.bg[i].tensor() : nullptr, &ops.og[i].tensor()});
    cpu.matmul(xc, ops.wc[i].tensor(), i == 1 ? &ops.bc[i].tensor() : nullptr, ops.oc[i].tensor());
    gpu.matmul(xg, ops.wg[i].tensor(), i == 1 ? &ops.bg[i].tensor() : nullptr, ops.single[i].tensor());
  }
  gpu.matmul_group(xg, targets);
  for (size_t i = 0; i < ops.wg.size(); ++i) {
    const auto got = read(gpu, ops.og[i].tensor());
    EXPECT_LE(rel_err(got, read(cpu, ops.oc[i].tensor())), tol) << what << " target " << i;
    EXPECT_EQ(got, read(gpu, ops.single[i].tensor())) << what << " target " << i;
  }
}

}  // namespace keel::gpu_test
