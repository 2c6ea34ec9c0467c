// profile_label: op names with their shapes for OpProfile's table when KEEL_CUDA_PROFILE=2 (per-GEMM
// and per-attention-shape GPU time inside the model, docs/cuda_backend.md "Profiling"); with
// KEEL_CUDA_PROFILE=1 (or unset) an op keeps its plain name. Host side.
#pragma once

#include <cstdint>

namespace keel::backend::cuda {

// `op` itself unless KEEL_CUDA_PROFILE=2 (read once); then "op n<rows> m<m> k<k>" (m / k left out when
// 0; a matmul's ends in " after <the op labelled before it on this thread>", so q (after add_rms_norm)
// and o (after attention) show apart), interned: the pointer stays valid for the process. Row counts
// above 256 are rounded up to a multiple of 1,024 ("n<=9216") so a serve run's eager steps fall into few
// rows of the table; up to 256 (decode buckets) they are exact.
const char* profile_label(const char* op, int64_t n, int64_t m, int64_t k);

}  // namespace keel::backend::cuda
