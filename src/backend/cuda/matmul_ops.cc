// CudaBackend::matmul and matmul_group: bf16 x and weights (the bf16 mode) or f32 x and weights (the
// f32 mode, docs/cuda_backend.md "Precision"); the decode GEMV kernel for n <= gemv_max_tokens_ (1
// unless KEEL_CUDA_GEMV_MAX_TOKENS says otherwise), cuBLAS GemmEx otherwise. In the f32 mode with
// KEEL_CUDA_F32_Q8ACT=1, x is first rounded to the cpu backend's 8-bit activation grid where the weight came from a type cpu (dtype auto) dots with
// quantized activations (q8_round.cu).
#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/profile_label.h"

namespace keel::backend::cuda {
namespace {

// Elements per 16-byte vector of the GEMV kernel for matmul operands of `dt` (bf16: 8, f32: 4).
int64_t gemv_vec(DType dt) { return dt == DType::kF32 ? 4 : 8; }

// The GEMV launch for either mode's operands (f32: f32 x, weights and outputs).
void launch_gemv_mode(const void* x, const GemvGroup& g, int n, int64_t k, ActType ot, bool f32, cudaStream_t s) {
  if (f32) {
    launch_gemv_group_f32(static_cast<const float*>(x), g, n, k, s);
  } else {
    launch_gemv_group(x, g, n, k, ot, s);
  }
}

}  // namespace

int CudaBackend::q8_block(const void* w) const {
  if (q8_blocks_.empty()) return 0;
  const auto it = q8_blocks_.find(w);
  return it == q8_blocks_.end() ? 0 : it->second;
}

const void* CudaBackend::matmul_input(const Tensor& x, int block) {
  if (block == 0) return x.data;
  const auto need = static_cast<size_t>(x.numel());
  if (need > q8x_floats_) {
    KEEL_CHECK(mode_ != GraphMode::kCapture, "matmul: the f32 activation scratch grew during a graph capture");
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old scratch may still be in use
    q8x_floats_ = std::max(need, 2 * q8x_floats_);
    q8x_ = pool_->allocate(q8x_floats_ * sizeof(float));
  }
  auto* out = static_cast<float*>(q8x_.get());
  const int64_t n_blocks = x.numel() / block;
  if (!skip_launch(x.data, n_blocks, block, out)) {
    launch_q8_round(static_cast<const float*>(x.data), n_blocks, block, out, stream_);
  }
  return out;
}

void CudaBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const int64_t n = x.n_rows(), k = x.row_len(), m = w.n_rows();
  ScopedOp prof(*prof_, profile_label("matmul", n, m, k));
  const bool f32 = w.dtype == DType::kF32;
  KEEL_CHECK((x.dtype == DType::kBF16 || x.dtype == DType::kF32) && x.dtype == w.dtype,
             "matmul: x {} and w {} must both be bf16 or both f32", tensor::dtype_name(x.dtype),
             tensor::dtype_name(w.dtype));
  KEEL_CHECK(w.row_len() == k && out.numel() == n * m, "matmul: x {} w {} out {}", x.shape.to_string(),
             w.shape.to_string(), out.shape.to_string());
  KEEL_CHECK(out.dtype == DType::kF32 || (out.dtype == DType::kBF16 && !f32), "matmul: out {} for {} operands",
             tensor::dtype_name(out.dtype), tensor::dtype_name(w.dtype));
  const ActType ot = out.dtype == DType::kF32 ? ActType::kF32 : ActType::kBF16;
  if (n == 0) return;
  const bool has_bias = bias != nullptr && bias->data != nullptr;
  if (has_bias) {
    KEEL_CHECK(bias->dtype == DType::kF32 && bias->numel() == m, "matmul: bias {} for {} outputs",
               bias->shape.to_string(), m);
  }
  const int block = f32 ? q8_block(w.data) : 0;
  KEEL_CHECK(k % std::max(block, 1) == 0, "matmul: rows of {} are not whole blocks of {}", k, block);
  const void* xin = matmul_input(x, block);
  if (skip_launch(xin, w.data, has_bias ? bias->data : nullptr, out.data, n, k, m, ot, f32)) return;
  const float* b = has_bias ? static_cast<const float*>(bias->data) : nullptr;
  if (n <= gemv_max_tokens_ && k % gemv_vec(w.dtype) == 0 && aligned16(xin) && aligned16(w.data)) {
    const MatmulTarget one{&w, bias, &out};
    launch_gemv_mode(xin, gemv_group({&one, 1}), static_cast<int>(n), k, ot, f32, stream_);
    return;
  }
  // Row-major out[n, m] = x[n, k] . w[m, k]^T is column-major out^T[m, n] = w^T . x. f32 operands with
  // CUBLAS_COMPUTE_32F and the handle's default math mode are true fp32 (no TF32 tensor cores). One call
  // for any n: cutting the 16,384-row GEMMs of keel_cuda_bench's pf pass into two of 8,192 rows gained
  // nothing inside the model (docs/performance.md, "Session 7, second round").
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType in_t = f32 ? CUDA_R_32F : CUDA_R_16BF;
  KEEL_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n),
                                 static_cast<int>(k), &alpha, w.data, in_t, static_cast<int>(k), xin, in_t,
                                 static_cast<int>(k), &beta, out.data, ot == ActType::kF32 ? CUDA_R_32F : CUDA_R_16BF,
                                 static_cast<int>(m), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  if (has_bias) launch_add_bias(out.data, b, n, m, ot, stream_);
}

GemvGroup gemv_group(std::span<const Backend::MatmulTarget> targets) {
  GemvGroup g{};
  g.n_seg = static_cast<int>(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const Backend::MatmulTarget& t = targets[i];
    g.w[i] = t.w->data;
    g.bias[i] = t.bias != nullptr ? static_cast<const float*>(t.bias->data) : nullptr;
    g.out[i] = t.out->data;
    g.m[i] = t.w->n_rows();
  }
  return g;
}

bool CudaBackend::gemv_group_ok(const Tensor& x, std::span<const MatmulTarget> targets) const {
  const int64_t n = x.n_rows(), k = x.row_len();
  const bool f32 = x.dtype == DType::kF32;
  const int block = f32 && !targets.empty() ? q8_block(targets[0].w->data) : 0;
  bool one_launch = n <= gemv_max_tokens_ && n > 0 && (x.dtype == DType::kBF16 || f32) && k % gemv_vec(x.dtype) == 0 &&
                    aligned16(x.data) && !targets.empty() &&
                    targets.size() <= static_cast<size_t>(kGemvMaxSegments) &&
                    (!f32 || targets[0].out->dtype == DType::kF32);
  for (const MatmulTarget& t : targets) {
    one_launch = one_launch && t.w->dtype == x.dtype && t.w->row_len() == k && aligned16(t.w->data) &&
                 (!f32 || q8_block(t.w->data) == block) && t.out->dtype == targets[0].out->dtype &&
                 t.out->numel() == n * t.w->n_rows() &&
                 (t.bias == nullptr || t.bias->data == nullptr ||
                  (t.bias->dtype == DType::kF32 && t.bias->numel() == t.w->n_rows()));
  }
  return one_launch;
}

void CudaBackend::matmul_group(const Tensor& x, std::span<const MatmulTarget> targets) {
  if (!gemv_group_ok(x, targets)) {
    Backend::matmul_group(x, targets);
    return;
  }
  const int64_t n = x.n_rows(), k = x.row_len();
  const bool f32 = x.dtype == DType::kF32;
  const int block = f32 ? q8_block(targets[0].w->data) : 0;
  ScopedOp prof(*prof_, "matmul");
  const ActType ot = targets[0].out->dtype == DType::kF32 ? ActType::kF32 : ActType::kBF16;
  KEEL_CHECK(ot == ActType::kF32 || targets[0].out->dtype == DType::kBF16, "matmul: out dtype {}",
             tensor::dtype_name(targets[0].out->dtype));
  const GemvGroup g = gemv_group(targets);
  const void* xin = matmul_input(x, block);
  if (skip_launch(xin, g.w[0], g.w[1], g.w[2], g.bias[0], g.bias[1], g.bias[2], g.out[0], g.out[1], g.out[2],
                  g.m[0], g.m[1], g.m[2], g.n_seg, n, k, ot, f32)) {
    return;
  }
  launch_gemv_mode(xin, g, static_cast<int>(n), k, ot, f32, stream_);
}

}  // namespace keel::backend::cuda
