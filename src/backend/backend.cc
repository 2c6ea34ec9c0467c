#include "backend/backend.h"

#include "backend/cpu/cpu_backend.h"
#if KEEL_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace keel::backend {

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  Tensor t;
  t.dtype = dtype;
  t.shape = tensor::make_shape({count, row_len()});
  t.data = static_cast<uint8_t*>(data) + static_cast<size_t>(begin) * tensor::row_size_bytes(dtype, row_len());
  return t;
}

Result<std::unique_ptr<Backend>> create_backend(const std::string& name, const BackendOptions& opts) {
  if (opts.n_threads < 0) {
    return make_error(ErrorCode::kInvalidArgument, "backend {}: n_threads must be >= 0, got {}", name, opts.n_threads);
  }
  if (opts.dtype != "auto" && opts.dtype != "bf16" && opts.dtype != "f32") {
    return make_error(ErrorCode::kInvalidArgument, "backend {}: dtype must be auto, bf16 or f32, got '{}'", name,
                      opts.dtype);
  }
  if (name == "cpu") {
    if (opts.dtype == "bf16") {
      return make_error(ErrorCode::kInvalidArgument, "backend cpu computes in f32: dtype bf16 is for cuda only");
    }
    return cpu::make_cpu_backend(opts.n_threads, /*dequantize_weights=*/opts.dtype == "f32");
  }
  if (name == "cuda") {
#if KEEL_HAVE_CUDA
    return cuda::make_cuda_backend(opts.device, opts.dtype == "f32" ? DType::kF32 : DType::kBF16);
#else
    return make_error(ErrorCode::kUnavailable, "backend cuda: this build has no CUDA backend (configure with -DKEEL_CUDA=ON)");
#endif
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown backend '{}' (expected cpu or cuda)", name);
}

}  // namespace keel::backend
