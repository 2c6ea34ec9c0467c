#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "backend/cuda/attention_plan.h"
#include "backend/cuda/cublas_lazy.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/launch_check.h"
#include "backend/cuda/weight_convert.h"
#include "tensor/dequantize.h"
#include "tensor/half.h"

namespace keel::backend::cuda {

CudaBackend::CudaBackend(int device, DType act)
    : device_(device), act_(act), pool_(std::make_shared<DevicePool>()) {
  KEEL_CHECK(act == DType::kBF16 || act == DType::kF32, "cuda backend: precision {} (bf16 or f32)",
             tensor::dtype_name(act));
  KEEL_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  KEEL_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  device_name_ = prop.name;
  n_sm_ = prop.multiProcessorCount;
  KEEL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  KEEL_CUBLAS_CHECK(cublasCreate(&cublas_));
  KEEL_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  // A fixed cuBLAS workspace keeps GEMMs allocation-free (and graph-capturable).
  cublas_workspace_ = pool_->allocate(kCublasWorkspaceBytes);
  KEEL_CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_.get(), kCublasWorkspaceBytes));
  staging_ = std::make_unique<HostStaging>(stream_);
  prof_ = std::make_unique<OpProfile>(stream_);
  timer_ = std::make_unique<StepTimer>(stream_);
  attention_set_smem_limits();
  sampling_on_ = env_on("KEEL_CUDA_SAMPLING");
  // Token counts up to this go through the GEMV kernel, more through cuBLAS: the GEMV streams the
  // weights at the bandwidth for n = 1, but whole 8B decode steps at batch 2 / 4 / 8 took 1.12x /
  // 1.68x / 3.47x as long through it as through cuBLAS (docs/performance.md, session-5 merged check).
  // KEEL_CUDA_GEMV_MAX_TOKENS=0..8 overrides it, for A/B runs.
  if (const char* g = std::getenv("KEEL_CUDA_GEMV_MAX_TOKENS"); g != nullptr) {
    gemv_max_tokens_ = std::clamp(std::atoi(g), 0, kGemvMaxTokens);
  }
  const char* q8 = std::getenv("KEEL_CUDA_F32_Q8ACT");
  q8_act_ = act_ == DType::kF32 && q8 != nullptr && std::string_view(q8) == "1";
  KEEL_CUDA_CHECK(cudaEventCreateWithFlags(&sampled_ev_, cudaEventDisableTiming));
  grow_sample_tokens(4096);  // a fixed address for the graphs' embed_sampled (grows only past 4096 rows)
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  graphs_.clear();
  if (sampled_host_ != nullptr) cudaFreeHost(sampled_host_);
  cudaEventDestroy(sampled_ev_);
  timer_.reset();
  staging_.reset();
  prof_.reset();
  cublasDestroy(cublas_);
  if (aux_stream_ != nullptr) {
    cudaEventDestroy(fork_ev_);
    cudaEventDestroy(join_ev_);
    cudaStreamDestroy(aux_stream_);
  }
  cudaStreamDestroy(stream_);
}

Buffer CudaBackend::alloc(DType dtype, Shape shape) {
  KEEL_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kI32,
             "cuda alloc: dtype {} is not a device activation type", tensor::dtype_name(dtype));
  Tensor t{dtype, shape, nullptr};
  std::shared_ptr<void> mem = pool_->allocate(t.size_bytes());
  t.data = mem.get();
  if (!q8_blocks_.empty()) q8_blocks_.erase(t.data);  // the address may have held a weight
  KEEL_CUDA_CHECK(cudaMemsetAsync(t.data, 0, t.size_bytes(), stream_));
  return Buffer(t, std::move(mem));
}

Result<Buffer> CudaBackend::upload_weight(const tensor::TensorView& host) {
  if (!tensor::can_dequantize(host.dtype) || host.dtype == DType::kF8E4M3) {
    return make_error(ErrorCode::kUnsupported, "cuda backend: weight dtype {} not supported",
                      tensor::dtype_name(host.dtype));
  }
  const int64_t d = host.shape.row_len();
  if (d % tensor::block_size(host.dtype) != 0) {
    return make_error(ErrorCode::kInvalidArgument, "cuda backend: row length {} of a {} weight is not a multiple of {}",
                      d, tensor::dtype_name(host.dtype), tensor::block_size(host.dtype));
  }
  const size_t need = static_cast<size_t>(host.shape.n_rows()) * tensor::row_size_bytes(host.dtype, d);
  if (host.data == nullptr || host.size_bytes < need) {
    return make_error(ErrorCode::kCorruptFile, "cuda backend: weight {} {} needs {} bytes, has {}",
                      tensor::dtype_name(host.dtype), host.shape.to_string(), need, host.size_bytes);
  }
  if (host.shape.rank <= 1) {  // norms and biases stay f32
    std::vector<float> f = convert_to_f32(host);
    Buffer b = alloc(DType::kF32, host.shape);
    KEEL_CUDA_CHECK(cudaMemcpyAsync(b.tensor().data, f.data(), f.size() * 4, cudaMemcpyHostToDevice, stream_));
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return b;
  }
  if (act_ == DType::kF32) {  // the f32 mode: dequantized to f32 exactly as the cpu backend does
    Buffer b = upload_rows<float>(host, DType::kF32, convert_rows_to_f32);
    if (const int block = cpu_activation_block(host.dtype); q8_act_ && block > 0) q8_blocks_[b.tensor().data] = block;
    return b;
  }
  return upload_rows<uint16_t>(host, DType::kBF16, convert_rows_to_bf16);
}

// A matrix as `dtype` (element type T), 32 MiB of host rows at a time: copied straight from the mapping
// when it already holds that type, else converted by `convert` (rows [r, e) into a scratch vector).
template <typename T, typename Convert>
Buffer CudaBackend::upload_rows(const tensor::TensorView& host, DType dtype, Convert convert) {
  const int64_t d = host.shape.row_len();
  Buffer b = alloc(dtype, host.shape);
  auto* dst = static_cast<T*>(b.tensor().data);
  const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{32} << 20) / (static_cast<int64_t>(sizeof(T)) * d));
  std::vector<T> chunk;
  for (int64_t r = 0; r < host.shape.n_rows(); r += rows_per_chunk) {
    const int64_t e = std::min(host.shape.n_rows(), r + rows_per_chunk);
    if (host.dtype == dtype) {
      KEEL_CUDA_CHECK(cudaMemcpyAsync(dst + r * d, host.row(r), static_cast<size_t>((e - r) * d) * sizeof(T),
                                      cudaMemcpyHostToDevice, stream_));
    } else {
      convert(host, r, e, chunk);
      KEEL_CUDA_CHECK(
          cudaMemcpyAsync(dst + r * d, chunk.data(), chunk.size() * sizeof(T), cudaMemcpyHostToDevice, stream_));
    }
    KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  return b;
}

void CudaBackend::copy_to_host(const Tensor& src, std::span<float> dst) {
  KEEL_CHECK(static_cast<int64_t>(dst.size()) == src.numel(), "copy_to_host: {} floats for {} elements", dst.size(),
             src.numel());
  if (src.dtype == DType::kF32) {
    if (PinnedDownload::wanted(dst.size_bytes())) {  // logits rows: through a pinned buffer, in chunks
      download_.copy(dst.data(), src.data, dst.size_bytes(), stream_);
    } else {
      KEEL_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data, dst.size_bytes(), cudaMemcpyDeviceToHost, stream_));
    }
    synchronize();
    return;
  }
  KEEL_CHECK(src.dtype == DType::kBF16 || src.dtype == DType::kF16, "copy_to_host: dtype {}",
             tensor::dtype_name(src.dtype));
  std::vector<uint16_t> bits(dst.size());
  KEEL_CUDA_CHECK(cudaMemcpyAsync(bits.data(), src.data, bits.size() * 2, cudaMemcpyDeviceToHost, stream_));
  synchronize();
  for (size_t i = 0; i < bits.size(); ++i) {
    dst[i] = src.dtype == DType::kBF16 ? tensor::bf16_to_f32(bits[i]) : tensor::fp16_to_f32(bits[i]);
  }
}

void CudaBackend::copy_from_host(std::span<const float> src, Tensor& dst) {
  KEEL_CHECK(static_cast<int64_t>(src.size()) == dst.numel(), "copy_from_host: {} floats for {} elements",
             src.size(), dst.numel());
  if (dst.dtype == DType::kF32) {
    KEEL_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data(), src.size_bytes(), cudaMemcpyHostToDevice, stream_));
    synchronize();
    return;
  }
  KEEL_CHECK(dst.dtype == DType::kBF16 || dst.dtype == DType::kF16, "copy_from_host: dtype {} is not an activation dtype",
             tensor::dtype_name(dst.dtype));
  std::vector<uint16_t> bits(src.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    bits[i] = dst.dtype == DType::kBF16 ? tensor::f32_to_bf16(src[i]) : tensor::f32_to_fp16(src[i]);
  }
  KEEL_CUDA_CHECK(cudaMemcpyAsync(dst.data, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice, stream_));
  synchronize();
}

void CudaBackend::synchronize() {
  KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  staging_->reset();
  prof_->collect();
}

int64_t CudaBackend::free_memory_bytes() const {
  size_t free_b = 0, total_b = 0;
  KEEL_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<int64_t>(free_b);
}

Result<std::unique_ptr<Backend>> make_cuda_backend(int device, DType act) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return make_error(ErrorCode::kUnavailable, "backend cuda: no usable CUDA device ({})", cudaGetErrorString(err));
  }
  if (device < 0 || device >= n) {
    return make_error(ErrorCode::kUnavailable, "backend cuda: device {} does not exist ({} found)", device, n);
  }
  KEEL_RETURN_IF_ERROR(load_cublas());
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(device, act));
}

}  // namespace keel::backend::cuda
