// keel_prefill_ops_bench: the prefill step's ops other than attention, alone, on the Llama-3-8B shapes
// (d 4,096, FFN 14,336, 32/8 heads of 128; bf16), at 8,192 tokens (keel serve's step budget) and 16,384
// (keel_cuda_bench's pf phase, 8 x 2,048):
// - add_rms_norm [n, 4,096] and silu_mul [n, 14,336]: TB/s of the bytes they must move (read residual
//   and x, write residual and out; read gate and up, write out), against the 3.96 TB/s copy rate;
//   KEEL_CUDA_ROW_KERNELS=0 runs them on the kernels before session 7 (rms_norm.cu, scalar SiLU-mul);
// - each GEMM of a layer through CudaBackend::matmul (cuBLAS), TFLOP/s against cuBLAS's 854 at 8192^3,
//   and the shapes a fused q/k/v (m 6,144) and a fused gate/up (m 28,672) GEMM would run: whether one
//   GEMM per group would gain over the separate calls matmul_group makes for n > 8;
// - the same GEMMs through cuBLASLt with each of its heuristic's first 16 algorithms, event-timed on
//   buffers of their own: the first (about what cublasGemmEx picks) against the fastest, i.e. what
//   timing the candidates once at start-up would gain.
// - with `sustained`: one layer's seven GEMMs (q, k, v, o, gate, up, down) back to back for 100 layers
//   at 8,192 and 16,384 rows, TFLOP/s per block of 20 layers: whether the rate falls over a pass as
//   long as the model's (clocks under the power limit) where 20 calls of one shape do not show it.
// Random data; mean of 20 calls back to back after 3 warm-ups (device time per call).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace {

using namespace keel;
using Clock = std::chrono::steady_clock;

constexpr int64_t kD = 4096, kFfn = 14336, kMaxN = 16384;

double time_ms(backend::Backend& gpu, const std::function<void()>& op) {
  for (int r = 0; r < 3; ++r) op();
  gpu.synchronize();
  constexpr int kReps = 20;
  const auto t0 = Clock::now();
  for (int r = 0; r < kReps; ++r) op();
  gpu.synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / kReps;
}

backend::Buffer random_buffer(backend::Backend& gpu, tensor::DType dt, int64_t rows, int64_t cols,
                              std::vector<float>& host, float scale) {
  backend::Buffer b = gpu.alloc(dt, tensor::make_shape({rows, cols}));
  gpu.copy_from_host(std::span<const float>(host.data(), static_cast<size_t>(rows * cols)), b.tensor());
  for (size_t i = 0; i < host.size(); i += 4099) host[i] *= scale;  // the next buffer differs a little
  return b;
}

#define LT_CHECK(x)                                                                  \
  do {                                                                               \
    const auto st = (x);                                                             \
    if (static_cast<int>(st) != 0) {                                                 \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, static_cast<int>(st)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// out [n, m] = x [n, k] . w [m, k]^T as column-major out^T = w^T . x (CudaBackend::matmul's layout).
void lt_sweep(const std::vector<float>& host) {
  cublasLtHandle_t lt = nullptr;
  LT_CHECK(cublasLtCreate(&lt));
  cudaStream_t s = nullptr;
  LT_CHECK(cudaStreamCreate(&s));
  const size_t ws_bytes = size_t{32} << 20;  // CudaBackend's cuBLAS workspace
  void *ws = nullptr, *x = nullptr, *w = nullptr, *out = nullptr;
  const size_t x_elems = static_cast<size_t>(kMaxN * kFfn), w_elems = static_cast<size_t>(2 * kFfn * kD);
  const size_t out_elems = static_cast<size_t>(kMaxN * 2 * kFfn);
  LT_CHECK(cudaMalloc(&ws, ws_bytes));
  LT_CHECK(cudaMalloc(&x, x_elems * 2));
  LT_CHECK(cudaMalloc(&w, w_elems * 2));
  LT_CHECK(cudaMalloc(&out, out_elems * 2));
  std::vector<uint16_t> bits(x_elems);
  for (size_t i = 0; i < x_elems; ++i) {  // bf16: the top half of the f32 (truncated; random data anyway)
    uint32_t u = 0;
    std::memcpy(&u, &host[i % host.size()], 4);
    bits[i] = static_cast<uint16_t>(u >> 16);
  }
  LT_CHECK(cudaMemcpy(x, bits.data(), x_elems * 2, cudaMemcpyHostToDevice));
  LT_CHECK(cudaMemcpy(w, bits.data() + 12345, w_elems * 2, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  LT_CHECK(cudaEventCreate(&e0));
  LT_CHECK(cudaEventCreate(&e1));
  struct Shape {
    const char* name;
    int64_t m, k;
  };
  const Shape shapes[] = {{"q / o  ", 4096, kD}, {"k, v   ", 1024, kD}, {"q|k|v  ", 6144, kD},
                          {"gate/up", kFfn, kD}, {"gate|up", 2 * kFfn, kD}, {"down   ", kD, kFfn}};
  std::printf("cuBLASLt, heuristic's first 16 algorithms, event-timed (median of 3 rounds of 10): ms, TFLOP/s\n");
  for (const Shape& sh : shapes) {
    for (const int64_t n : {int64_t{8192}, kMaxN}) {
      cublasLtMatmulDesc_t op = nullptr;
      LT_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
      LT_CHECK(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, static_cast<uint64_t>(sh.k), static_cast<uint64_t>(sh.m), sh.k));
      LT_CHECK(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, static_cast<uint64_t>(sh.k), static_cast<uint64_t>(n), sh.k));
      LT_CHECK(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, static_cast<uint64_t>(sh.m), static_cast<uint64_t>(n), sh.m));
      cublasLtMatmulPreference_t pref = nullptr;
      LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                    sizeof(ws_bytes)));
      cublasLtMatmulHeuristicResult_t res[16] = {};
      int found = 0;
      LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 16, res, &found));
      const float alpha = 1.0f, beta = 0.0f;
      std::vector<double> ms(static_cast<size_t>(found), 1e9);
      for (int i = 0; i < found; ++i) {
        auto run = [&] {
          return cublasLtMatmul(lt, op, &alpha, w, a, x, b, &beta, out, c, out, c, &res[i].algo, ws, ws_bytes, s);
        };
        if (run() != CUBLAS_STATUS_SUCCESS) continue;
        std::vector<double> rounds;
        for (int r = 0; r < 3; ++r) {
          LT_CHECK(cudaEventRecord(e0, s));
          for (int j = 0; j < 10; ++j) LT_CHECK(run());
          LT_CHECK(cudaEventRecord(e1, s));
          LT_CHECK(cudaEventSynchronize(e1));
          float t = 0;
          LT_CHECK(cudaEventElapsedTime(&t, e0, e1));
          rounds.push_back(t / 10.0);
        }
        std::sort(rounds.begin(), rounds.end());
        ms[static_cast<size_t>(i)] = rounds[1];
      }
      const auto best = std::min_element(ms.begin(), ms.end()) - ms.begin();
      const double flop = 2.0 * static_cast<double>(n * sh.m * sh.k);
      std::printf("  %s m %5lld k %5lld n %5lld: %2d algos, first %7.3f ms %5.1f, best #%-2lld %7.3f ms %5.1f (%+.1f%%)\n",
                  sh.name, static_cast<long long>(sh.m), static_cast<long long>(sh.k), static_cast<long long>(n), found,
                  ms[0], flop / ms[0] / 1e9, static_cast<long long>(best), ms[static_cast<size_t>(best)],
                  flop / ms[static_cast<size_t>(best)] / 1e9, 100.0 * (ms[0] / ms[static_cast<size_t>(best)] - 1.0));
      LT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
      LT_CHECK(cublasLtMatrixLayoutDestroy(a));
      LT_CHECK(cublasLtMatrixLayoutDestroy(b));
      LT_CHECK(cublasLtMatrixLayoutDestroy(c));
      LT_CHECK(cublasLtMatmulDescDestroy(op));
    }
  }
  LT_CHECK(cudaFree(ws));
  LT_CHECK(cudaFree(x));
  LT_CHECK(cudaFree(w));
  LT_CHECK(cudaFree(out));
  LT_CHECK(cudaStreamDestroy(s));
  LT_CHECK(cublasLtDestroy(lt));
}

// One layer's GEMMs through CudaBackend::matmul, 100 layers back to back per row count, in blocks of 20.
void sustained(backend::Backend& gpu, std::vector<float>& host, const backend::Buffer& xin, backend::Buffer& out) {
  using tensor::DType;
  struct W {
    int64_t m, k;
  };
  const W shapes[] = {{kD, kD}, {1024, kD}, {1024, kD}, {kD, kD}, {kFfn, kD}, {kFfn, kD}, {kD, kFfn}};
  std::vector<backend::Buffer> ws;
  double layer_flop_per_row = 0;
  for (const W& s : shapes) {
    ws.push_back(random_buffer(gpu, DType::kBF16, s.m, s.k, host, 0.05f));
    layer_flop_per_row += 2.0 * static_cast<double>(s.m * s.k);
  }
  std::printf("sustained: one layer's 7 GEMMs x 100 layers back to back, TFLOP/s per block of 20 layers\n");
  for (const int64_t n : {int64_t{8192}, kMaxN}) {
    auto layer = [&] {
      for (size_t i = 0; i < ws.size(); ++i) {
        backend::Tensor xv = xin.tensor(), ov = out.tensor();
        xv.shape = tensor::make_shape({n, shapes[i].k});
        ov.shape = tensor::make_shape({n, shapes[i].m});
        gpu.matmul(xv, ws[i].tensor(), nullptr, ov);
      }
    };
    layer();
    gpu.synchronize();
    std::printf("  n %5lld:", static_cast<long long>(n));
    for (int b = 0; b < 5; ++b) {
      const auto t0 = Clock::now();
      for (int l = 0; l < 20; ++l) layer();
      gpu.synchronize();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / 20;
      std::printf(" %.3f ms %5.1f |", ms, layer_flop_per_row * static_cast<double>(n) / ms / 1e9);
    }
    std::printf("\n");
  }
}

}  // namespace

// Usage: keel_prefill_ops_bench [lt] [sustained]   (lt: the cuBLASLt sweep too; sustained: see above)
int main(int argc, char** argv) {
  auto made = backend::create_backend("cuda", {.dtype = "bf16"});
  if (!made.ok()) {
    std::fprintf(stderr, "keel_prefill_ops_bench: %s\n", made.status().to_string().c_str());
    return 1;
  }
  backend::Backend& gpu = **made;
  using tensor::DType;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> host(static_cast<size_t>(kMaxN * kFfn));
  for (float& x : host) x = u(rng);

  backend::Buffer x = random_buffer(gpu, DType::kBF16, kMaxN, kD, host, 0.5f);
  backend::Buffer res = random_buffer(gpu, DType::kBF16, kMaxN, kD, host, 0.7f);
  backend::Buffer h = gpu.alloc(DType::kBF16, tensor::make_shape({kMaxN, kD}));
  backend::Buffer nw = random_buffer(gpu, DType::kF32, 1, kD, host, 1.0f);
  backend::Buffer gate = random_buffer(gpu, DType::kBF16, kMaxN, kFfn, host, 0.9f);
  backend::Buffer up = random_buffer(gpu, DType::kBF16, kMaxN, kFfn, host, 1.1f);
  backend::Buffer act = gpu.alloc(DType::kBF16, tensor::make_shape({kMaxN, kFfn}));
  nw.tensor().shape = tensor::make_shape({kD});

  const char* old = std::getenv("KEEL_CUDA_ROW_KERNELS");
  std::printf("row ops (%s): ms, TB/s of the bytes moved\n",
              old != nullptr && old[0] == '0' ? "KEEL_CUDA_ROW_KERNELS=0: kernels before session 7" : "row kernels");
  for (const int64_t n : {int64_t{8192}, kMaxN}) {
    backend::Tensor xv = x.tensor().rows(0, n), rv = res.tensor().rows(0, n), hv = h.tensor().rows(0, n);
    const double norm_ms = time_ms(gpu, [&] { gpu.add_rms_norm(rv, xv, nw.tensor(), 1e-5f, hv); });
    backend::Tensor gv = gate.tensor().rows(0, n), uv = up.tensor().rows(0, n), av = act.tensor().rows(0, n);
    const double silu_ms = time_ms(gpu, [&] { gpu.silu_mul(gv, uv, av); });
    const double norm_bytes = 4.0 * static_cast<double>(n * kD) * 2, silu_bytes = 3.0 * static_cast<double>(n * kFfn) * 2;
    std::printf("  n %5lld  add_rms_norm %7.3f ms %5.2f TB/s | silu_mul %7.3f ms %5.2f TB/s\n",
                static_cast<long long>(n), norm_ms, norm_bytes / norm_ms / 1e9, silu_ms, silu_bytes / silu_ms / 1e9);
  }

  struct Gemm {
    const char* name;
    int64_t m, k;
  };
  const Gemm gemms[] = {{"q / o      m  4096 k  4096", 4096, kD},  {"k, v       m  1024 k  4096", 1024, kD},
                        {"q|k|v one  m  6144 k  4096", 6144, kD},  {"gate, up   m 14336 k  4096", kFfn, kD},
                        {"gate|up    m 28672 k  4096", 2 * kFfn, kD}, {"down       m  4096 k 14336", kD, kFfn}};
  backend::Buffer xin = random_buffer(gpu, DType::kBF16, kMaxN, kFfn, host, 0.8f);
  backend::Buffer out = gpu.alloc(DType::kBF16, tensor::make_shape({kMaxN, 2 * kFfn}));
  std::printf("GEMMs through CudaBackend::matmul (cuBLAS): ms, TFLOP/s\n");
  for (const Gemm& g : gemms) {
    backend::Buffer w = random_buffer(gpu, DType::kBF16, g.m, g.k, host, 0.05f);
    std::printf("  %s", g.name);
    for (const int64_t n : {int64_t{8192}, kMaxN}) {
      backend::Tensor xv = xin.tensor(), ov = out.tensor();  // the first n * k (n * m) elements
      xv.shape = tensor::make_shape({n, g.k});
      ov.shape = tensor::make_shape({n, g.m});
      const double ms = time_ms(gpu, [&] { gpu.matmul(xv, w.tensor(), nullptr, ov); });
      std::printf(" | n %5lld %7.3f ms %5.1f", static_cast<long long>(n), ms,
                  2.0 * static_cast<double>(n * g.m * g.k) / ms / 1e9);
    }
    std::printf("\n");
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "sustained") sustained(gpu, host, xin, out);
    if (std::string(argv[i]) == "lt") lt_sweep(host);
  }
  return 0;
}
