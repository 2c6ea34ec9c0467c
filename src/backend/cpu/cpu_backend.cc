#include "backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/ops.h"
#include "base/check.h"
#include "base/thread_pool.h"

namespace keel::backend::cpu {

void Workspace::FreeAligned::operator()(void* p) const { std::free(p); }

void* Workspace::Region::get(size_t n_bytes) {
  if (n_bytes > size_bytes) {
    const size_t rounded = (n_bytes + 4095) & ~size_t{4095};  // aligned_alloc wants a multiple of 64
    void* p = std::aligned_alloc(64, rounded);
    KEEL_CHECK(p != nullptr, "out of memory allocating {} bytes of scratch", rounded);
    mem.reset(p);
    size_bytes = rounded;
  }
  return mem.get();
}

namespace {

bool is_supported_weight(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ8_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kQ8_K:
      return true;
    case DType::kF8E4M3:
    case DType::kI32:
      return false;
  }
  return false;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(int n_threads, bool dequantize_weights)
      : pool_(n_threads), ws_(pool_.n_threads()), k_(&cpu_kernels()), dequantize_weights_(dequantize_weights) {}

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string name() const override { return std::string("cpu/") + k_->name; }
  DType activation_dtype() const override { return DType::kF32; }

  Buffer alloc(DType dtype, Shape shape) override {
    Tensor t{dtype, shape, nullptr};
    const size_t n_bytes = (t.size_bytes() + 63) & ~size_t{63};
    void* p = std::aligned_alloc(64, n_bytes == 0 ? 64 : n_bytes);
    KEEL_CHECK(p != nullptr, "out of memory allocating {} bytes", n_bytes);
    std::memset(p, 0, n_bytes);
    t.data = p;
    return Buffer(t, std::shared_ptr<void>(p, [](void* q) { std::free(q); }));
  }

  Result<Buffer> upload_weight(const tensor::TensorView& host) override {
    if (!is_supported_weight(host.dtype)) {
      return make_error(ErrorCode::kUnsupported, "cpu backend: weight dtype {} not supported",
                        tensor::dtype_name(host.dtype));
    }
    if (host.shape.row_len() % tensor::block_size(host.dtype) != 0) {
      return make_error(ErrorCode::kInvalidArgument, "cpu backend: row length {} of a {} weight is not a multiple of {}",
                        host.shape.row_len(), tensor::dtype_name(host.dtype), tensor::block_size(host.dtype));
    }
    Tensor t{host.dtype, host.shape, const_cast<void*>(host.data)};
    if (host.data == nullptr || host.size_bytes < t.size_bytes()) {
      return make_error(ErrorCode::kCorruptFile, "cpu backend: weight {} {} needs {} bytes, has {}",
                        tensor::dtype_name(host.dtype), host.shape.to_string(), t.size_bytes(), host.size_bytes);
    }
    if (dequantize_weights_ && host.shape.rank >= 2 && activation_format(host.dtype) != DType::kF32) {
      // dtype f32: matrices cpu would dot with 8-bit activations are held as f32 instead.
      Buffer b = alloc(DType::kF32, host.shape);
      const int64_t d = host.shape.row_len();
      pool_.parallel_for(host.shape.n_rows(), [&](int64_t r, int) {
        dequantize_row(host.dtype, host.row(r), static_cast<float*>(b.tensor().data) + r * d, d);
      });
      return b;
    }
    return Buffer(t, nullptr);  // zero copy: the caller keeps the mapping alive
  }

  void copy_to_host(const Tensor& src, std::span<float> dst) override {
    KEEL_CHECK(static_cast<int64_t>(dst.size()) == src.numel(), "copy_to_host: {} floats for {} elements",
               dst.size(), src.numel());
    const size_t row_bytes = tensor::row_size_bytes(src.dtype, src.row_len());
    for (int64_t r = 0; r < src.n_rows(); ++r) {
      row_to_f32(*k_, src.dtype, static_cast<const uint8_t*>(src.data) + r * row_bytes,
                 dst.data() + r * src.row_len(), src.row_len());
    }
  }

  void copy_from_host(std::span<const float> src, Tensor& dst) override {
    KEEL_CHECK(static_cast<int64_t>(src.size()) == dst.numel(), "copy_from_host: {} floats for {} elements",
               src.size(), dst.numel());
    switch (dst.dtype) {
      case DType::kF32:
        std::memcpy(dst.data, src.data(), src.size() * sizeof(float));
        return;
      case DType::kF16:
        k_->f32_to_f16(src.data(), static_cast<uint16_t*>(dst.data), dst.numel());
        return;
      case DType::kBF16: {
        auto* out = static_cast<uint16_t*>(dst.data);
        for (size_t i = 0; i < src.size(); ++i) {
          uint32_t bits;
          std::memcpy(&bits, &src[i], 4);
          out[i] = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
        }
        return;
      }
      default:
        KEEL_CHECK(false, "copy_from_host: dtype {} is not an activation dtype", tensor::dtype_name(dst.dtype));
    }
  }

  void synchronize() override {}

  void embed(const Tensor& table, std::span<const int32_t> ids, Tensor& out) override {
    cpu::embed(ctx(), table, ids, out);
  }
  void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor& out) override {
    cpu::rms_norm(ctx(), x, w, eps, out);
  }
  void add_rms_norm(Tensor& residual, const Tensor& x, const Tensor& w, float eps, Tensor& out) override {
    cpu::add_rms_norm(ctx(), residual, x, w, eps, out);
  }
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override {
    cpu::matmul(ctx(), x, w, bias, out);
  }
  void rope(Tensor& x, std::span<const int32_t> positions, const RopeParams& p) override {
    cpu::rope(ctx(), x, positions, p);
  }
  void write_kv(const Tensor& k, const Tensor& v, std::span<const int32_t> slots, Tensor& k_cache,
                Tensor& v_cache) override {
    cpu::write_kv(ctx(), k, v, slots, k_cache, v_cache);
  }
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const AttentionParams& p,
                 Tensor& out) override {
    cpu::attention(ctx(), q, k_cache, v_cache, p, out);
  }
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override { cpu::silu_mul(ctx(), gate, up, out); }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override { cpu::add(ctx(), a, b, out); }
  void gather_rows(const Tensor& x, std::span<const int32_t> rows, Tensor& out) override {
    cpu::gather_rows(ctx(), x, rows, out);
  }

 private:
  OpContext ctx() { return OpContext{&pool_, k_, &ws_}; }

  ThreadPool pool_;
  Workspace ws_;
  const Kernels* k_;
  bool dequantize_weights_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads, bool dequantize_weights) {
  return std::make_unique<CpuBackend>(n_threads > 0 ? n_threads : ThreadPool::default_threads(), dequantize_weights);
}

}  // namespace keel::backend::cpu
