// cuda_check_launch: the last-error check after a kernel launch, for .cu files (which keep fmt and the
// rest of base/ out of nvcc's way). Aborts with the launching file:line on error. Host side.
#pragma once

namespace keel::backend::cuda {

void cuda_check_launch(const char* file, int line);
// Whether kernels launch with programmatic dependent launch (pdl.cuh): KEEL_CUDA_PDL=1 (default off:
// no gain measured on the 8B decode step, docs/cuda_backend.md), read once.
bool pdl_enabled();
// A default-on switch from the environment: true unless `name` is set to "0" (KEEL_CUDA_SAMPLING,
// KEEL_CUDA_FUSED_GEMV, KEEL_CUDA_ATTN_*, KEEL_CUDA_TOPP_COMPACT ...). Host side; callers cache it.
bool env_on(const char* name);

}  // namespace keel::backend::cuda

#define KEEL_CUDA_LAUNCHED() ::keel::backend::cuda::cuda_check_launch(__FILE__, __LINE__)
