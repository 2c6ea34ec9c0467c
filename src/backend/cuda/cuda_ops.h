// The CudaBackend class: memory and transfers in cuda_backend.cc, ops in cuda_ops.cc and (matmuls)
// matmul_ops.cc. Internal to
// backend/cuda/ (the rest of keel sees only Backend via make_cuda_backend). One thread at a time.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/attention_plan.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/gemv_fused.h"
#include "backend/cuda/kernels.cuh"
#include "backend/cuda/op_profile.h"
#include "backend/cuda/pinned_download.h"
#include "backend/cuda/step_graph.h"

namespace keel::backend::cuda {

// matmul_ops.cc: the GEMV launch group of targets (weights, biases, outputs; at most kGemvMaxSegments).
GemvGroup gemv_group(std::span<const Backend::MatmulTarget> targets);

class CudaBackend final : public Backend {
 public:
  // act: kBF16 or kF32, the precision of activations, matrix weights and the KV cache.
  CudaBackend(int device, DType act);
  ~CudaBackend() override;

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string name() const override { return "cuda/" + device_name_; }
  DType activation_dtype() const override { return act_; }
  int64_t free_memory_bytes() const override;

  Buffer alloc(DType dtype, Shape shape) override;
  Result<Buffer> upload_weight(const tensor::TensorView& host) override;
  void copy_to_host(const Tensor& src, std::span<float> dst) override;
  void copy_from_host(std::span<const float> src, Tensor& dst) override;
  void synchronize() override;

  void embed(const Tensor& table, std::span<const int32_t> ids, Tensor& out) override;
  void embed_sampled(const Tensor& table, std::span<const int32_t> ids, std::span<const int32_t> from_sampled,
                     Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& w, float eps, Tensor& out) override;
  void add_rms_norm(Tensor& residual, const Tensor& x, const Tensor& w, float eps, Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override;
  void matmul_group(const Tensor& x, std::span<const MatmulTarget> targets) override;
  void norm_matmul_group(const PreNorm& p, std::span<const MatmulTarget> targets) override;  // fused_ops.cc
  void norm_gate_up_silu(const PreNorm& p, const Tensor& w_gate, const Tensor& w_up, Tensor& gate, Tensor& up,
                         Tensor& out) override;
  void norm_qkv_rope_kv(const PreNorm& p, std::span<const MatmulTarget> qkv, Tensor& q, Tensor& k, const Tensor& v,
                        std::span<const int32_t> positions, std::span<const int32_t> slots, const RopeParams& rope,
                        Tensor& k_cache, Tensor& v_cache) override;
  void rope(Tensor& x, std::span<const int32_t> positions, const RopeParams& p) override;
  void write_kv(const Tensor& k, const Tensor& v, std::span<const int32_t> slots, Tensor& k_cache,
                Tensor& v_cache) override;
  void rope_write_kv(Tensor& q, Tensor& k, const Tensor& v, std::span<const int32_t> positions,
                     std::span<const int32_t> slots, const RopeParams& p, Tensor& k_cache, Tensor& v_cache) override;
  void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const AttentionParams& p,
                 Tensor& out) override;
  void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, Tensor& out) override;
  void gather_rows(const Tensor& x, std::span<const int32_t> rows, Tensor& out) override;

  int64_t step_graph_bucket(int64_t n_tokens) const override;  // step_graph.cc
  void run_step(int64_t graph_key, const std::function<void()>& issue) override;

  bool can_sample_rows() const override { return sampling_on_; }  // sample_ops.cc
  void sample_rows(const Tensor& logits, const DeviceSampleInput& in, std::span<int32_t> tokens) override;
  bool can_sample_async() const override { return sampling_on_; }
  void sample_rows_async(const Tensor& logits, const DeviceSampleInput& in) override;
  void wait_sampled(std::span<int32_t> tokens) override;

 private:
  // kEager launches; kCapture launches into a stream capture; kCheck (a replay) launches nothing.
  // Both graph modes record each launch's arguments into sig_.
  enum class GraphMode { kEager, kCapture, kCheck };
  template <typename... A>
  bool skip_launch(const A&... args) {  // true: do not launch (the step is a replay)
    if (mode_ == GraphMode::kEager) return false;
    (sig_.push_back(sig_word(args)), ...);
    return mode_ == GraphMode::kCheck;
  }
  void replay_or_capture(int64_t key, const std::function<void()>& issue);
  static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;
  float* attention_partials(size_t n_floats);
  unsigned* split_counters();  // [kSplitCounters x SMs] zeros (the decode kernel resets what it counts)
  static constexpr int kSplitCounters = 64;
  void grow_sample_tokens(size_t n_rows);  // sample_ops.cc

  template <typename T, typename Convert>  // cuda_backend.cc
  Buffer upload_rows(const tensor::TensorView& host, DType dtype, Convert convert);
  void embed_rows(const Tensor& table, const int32_t* ids, const int32_t* from, const int32_t* sampled, int64_t n,
                  Tensor& out, ActType ot);
  // matmul_ops.cc: the cpu activation block of weight w (0: none; see q8_blocks_), and matmul's input:
  // x itself, or (block > 0) x rounded to the cpu's 8-bit grid in a scratch buffer.
  int q8_block(const void* w) const;
  const void* matmul_input(const Tensor& x, int block);
  // matmul_ops.cc: whether matmul_group(x, targets) runs as one GEMV launch.
  bool gemv_group_ok(const Tensor& x, std::span<const MatmulTarget> targets) const;
  // fused_ops.cc: the fused GEMV's pre-norm, when p fits it (else false), and its counter.
  bool gemv_norm(const PreNorm& p, GemvNorm& nm);
  unsigned* norm_counter();

  int device_;
  DType act_;
  // f32 mode with KEEL_CUDA_F32_Q8ACT=1: weights uploaded from a type the cpu backend (dtype auto)
  // dots with 8-bit activations, by device address, with that block length (weight_convert.h
  // cpu_activation_block). Entries are dropped when alloc hands the address out again.
  std::unordered_map<const void*, int> q8_blocks_;
  bool q8_act_ = false;
  std::shared_ptr<void> q8x_;  // matmul_input's scratch, grown on demand
  size_t q8x_floats_ = 0;
  std::string device_name_;
  int n_sm_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::shared_ptr<DevicePool> pool_;
  std::shared_ptr<void> cublas_workspace_;
  std::unique_ptr<HostStaging> staging_;
  std::unique_ptr<OpProfile> prof_;
  AttentionPlan plan_;                 // reused across calls (stable addresses for the staging memo)
  std::vector<AttnSeqDev> plan_seqs_;  // [n_seqs]
  std::shared_ptr<void> partials_;  // split-KV scratch, grown on demand
  size_t partials_floats_ = 0;
  std::shared_ptr<void> split_counters_;  // allocated once, zeroed once
  cudaStream_t aux_stream_ = nullptr;     // mixed attention mode 2: the decode rows' stream (created on use)
  cudaEvent_t fork_ev_ = nullptr, join_ev_ = nullptr;
  std::shared_ptr<void> norm_counter_;    // the fused GEMV's last-block counter: allocated once, zeroed once
  GraphMode mode_ = GraphMode::kEager;
  bool graph_plan_ = false;  // inside a graph step: attention grid fixed per key, split length on the device
  std::vector<uint64_t> sig_;
  std::unordered_map<int64_t, StepGraph> graphs_;
  std::unique_ptr<StepTimer> timer_;
  double capture_ms_total_ = 0;
  bool sampling_on_ = true;             // KEEL_CUDA_SAMPLING=0 turns device sampling off
  int gemv_max_tokens_ = 1;             // matmuls of up to this many tokens use the GEMV kernel (cuda_backend.cc)
  bool sampled_on_device_ = false;      // the last step's tokens came from sample_rows (step timer phases)
  std::shared_ptr<void> sample_scratch_;  // processed rows, grown on demand
  size_t sample_scratch_floats_ = 0;
  // [sample_tokens_cap_] int32 token ids of the last sampling, at a fixed address (graphs embed from it).
  std::shared_ptr<void> sample_tokens_;
  size_t sample_tokens_cap_ = 0;
  int32_t* sampled_host_ = nullptr;  // pinned [sample_tokens_cap_]: the last sampling's ids, copied back
  cudaEvent_t sampled_ev_ = nullptr;  // recorded after that copy
  PinnedDownload download_;          // copy_to_host of large f32 buffers (logits)
  int32_t last_sampled_rows_ = 0;    // rows of the last sample_rows_async (embed_sampled's bound)
  bool sampled_unread_ = false;      // sample_rows_async ran, wait_sampled not yet
};

}  // namespace keel::backend::cuda
