// CudaBackend::sample_rows: host checks of the rows, processors and masks (as the CPU sampler's
// callers guarantee them), one staging of the row data, the process and sample kernels
// (sampling.cu), and a copy of the token ids alone to pinned host memory behind an event.
// sample_rows_async returns after queueing that (overlap scheduling reads the ids with wait_sampled
// once the next step is queued, and that step's embed_sampled takes them from the device buffer);
// sample_rows is the two in a row.
#include <algorithm>
#include <cstddef>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/profile_label.h"

namespace keel::backend::cuda {

// The device structs mirror the interface's field for field.
static_assert(sizeof(SampleRowDev) == sizeof(DeviceSampleRow) && alignof(SampleRowDev) == alignof(DeviceSampleRow));
static_assert(offsetof(SampleRowDev, seed) == offsetof(DeviceSampleRow, seed));
static_assert(offsetof(SampleRowDev, position) == offsetof(DeviceSampleRow, position));
static_assert(offsetof(SampleRowDev, presence_penalty) == offsetof(DeviceSampleRow, presence_penalty));
static_assert(offsetof(SampleRowDev, n_proc) == offsetof(DeviceSampleRow, n_proc));
static_assert(sizeof(SampleProcDev) == sizeof(DeviceSampleProc));
static_assert(offsetof(SampleProcDev, n_output) == offsetof(DeviceSampleProc, n_output));

void CudaBackend::sample_rows(const Tensor& logits, const DeviceSampleInput& in, std::span<int32_t> tokens) {
  KEEL_CHECK(tokens.size() == in.rows.size(), "sample_rows: {} tokens for {} rows", tokens.size(), in.rows.size());
  if (in.rows.empty()) return;
  sample_rows_async(logits, in);
  wait_sampled(tokens);
  synchronize();
}

void CudaBackend::wait_sampled(std::span<int32_t> tokens) {
  KEEL_CHECK(sampled_unread_, "wait_sampled without a sample_rows_async to read");
  KEEL_CHECK(static_cast<int64_t>(tokens.size()) == last_sampled_rows_, "wait_sampled: {} tokens for {} rows",
             tokens.size(), last_sampled_rows_);
  KEEL_CUDA_CHECK(cudaEventSynchronize(sampled_ev_));
  std::copy(sampled_host_, sampled_host_ + tokens.size(), tokens.begin());
  sampled_unread_ = false;
}

void CudaBackend::sample_rows_async(const Tensor& logits, const DeviceSampleInput& in) {
  ScopedOp prof(*prof_, profile_label("sample", logits.n_rows(), 0, 0));
  KEEL_CHECK(mode_ == GraphMode::kEager, "sample_rows inside a graph step");
  KEEL_CHECK(!sampled_unread_, "sample_rows_async: the last sampling was not read (wait_sampled)");
  KEEL_CHECK(logits.dtype == DType::kF32, "sample_rows: logits must be f32, got {}", tensor::dtype_name(logits.dtype));
  const int64_t vocab = logits.row_len();
  const size_t words = static_cast<size_t>((vocab + 31) / 32);
  const int n = static_cast<int>(in.rows.size());
  KEEL_CHECK(n > 0, "sample_rows_async: no rows");
  std::vector<int32_t> proc_rows, src_scratch(in.rows.size(), -1);
  for (size_t i = 0; i < in.rows.size(); ++i) {
    const DeviceSampleRow& r = in.rows[i];
    KEEL_CHECK(r.logit_row >= 0 && r.logit_row < logits.n_rows(), "sample_rows: logit row {} of {}", r.logit_row,
               logits.n_rows());
    KEEL_CHECK(r.mask_offset < 0 || static_cast<size_t>(r.mask_offset) + words <= in.masks.size(),
               "sample_rows: mask at word {} past the {} given", r.mask_offset, in.masks.size());
    KEEL_CHECK(r.proc_begin >= 0 && r.n_proc >= 0 && static_cast<size_t>(r.proc_begin) + static_cast<size_t>(r.n_proc) <= in.procs.size(),
               "sample_rows: processors [{}, +{}) of {}", r.proc_begin, r.n_proc, in.procs.size());
    if (r.mask_offset >= 0 || r.n_proc > 0) {
      src_scratch[i] = static_cast<int32_t>(proc_rows.size());
      proc_rows.push_back(static_cast<int32_t>(i));
    }
  }
  for (const DeviceSampleProc& p : in.procs) {
    KEEL_CHECK(p.token >= 0 && p.token < vocab, "sample_rows: processor token {} outside [0, {})", p.token, vocab);
  }
  const size_t need_scratch = proc_rows.size() * static_cast<size_t>(vocab);
  if (need_scratch > sample_scratch_floats_) {
    sample_scratch_floats_ = std::max(need_scratch, 2 * sample_scratch_floats_);
    sample_scratch_ = pool_->allocate(sample_scratch_floats_ * sizeof(float));
  }
  if (in.rows.size() > sample_tokens_cap_) grow_sample_tokens(in.rows.size());
  const std::span<const SampleRowDev> rows_dev(reinterpret_cast<const SampleRowDev*>(in.rows.data()), in.rows.size());
  const std::span<const SampleProcDev> procs_dev(reinterpret_cast<const SampleProcDev*>(in.procs.data()), in.procs.size());
  staging_->begin_op(rows_dev.size_bytes() + procs_dev.size_bytes() + in.masks.size_bytes() +
                         (proc_rows.size() + src_scratch.size()) * sizeof(int32_t),
                     5);
  const SampleRowDev* rows_d = staging_->stage(rows_dev);
  const int32_t* src_d = staging_->stage(std::span<const int32_t>(src_scratch));
  const int32_t* proc_rows_d = proc_rows.empty() ? nullptr : staging_->stage(std::span<const int32_t>(proc_rows));
  const SampleProcDev* procs_d = procs_dev.empty() ? nullptr : staging_->stage(procs_dev);
  const uint32_t* masks_d = in.masks.empty() ? nullptr : staging_->stage(in.masks);
  auto* scratch = static_cast<float*>(sample_scratch_.get());
  const auto* lg = static_cast<const float*>(logits.data);
  launch_sample_process(lg, vocab, rows_d, proc_rows_d, static_cast<int>(proc_rows.size()), procs_d, masks_d, scratch,
                        stream_);
  auto* tokens_d = static_cast<int32_t*>(sample_tokens_.get());
  launch_sample(lg, scratch, vocab, rows_d, src_d, n, tokens_d, stream_);
  KEEL_CUDA_CHECK(cudaMemcpyAsync(sampled_host_, tokens_d, static_cast<size_t>(n) * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, stream_));
  KEEL_CUDA_CHECK(cudaEventRecord(sampled_ev_, stream_));
  if (timer_->enabled()) timer_->end();  // the step's GPU work ends with its sampling
  last_sampled_rows_ = n;
  sampled_unread_ = true;
  sampled_on_device_ = true;
}

void CudaBackend::grow_sample_tokens(size_t n_rows) {
  // Nothing may still read the old buffers: the last sampling was read, and the stream drains here.
  KEEL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  sample_tokens_cap_ = std::max(n_rows, 2 * sample_tokens_cap_);
  sample_tokens_ = pool_->allocate(sample_tokens_cap_ * sizeof(int32_t));
  KEEL_CUDA_CHECK(cudaMemsetAsync(sample_tokens_.get(), 0, sample_tokens_cap_ * sizeof(int32_t), stream_));
  if (sampled_host_ != nullptr) KEEL_CUDA_CHECK(cudaFreeHost(sampled_host_));
  void* host = nullptr;
  KEEL_CUDA_CHECK(cudaMallocHost(&host, sample_tokens_cap_ * sizeof(int32_t)));
  sampled_host_ = static_cast<int32_t*>(host);
}

}  // namespace keel::backend::cuda
