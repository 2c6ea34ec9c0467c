// cuda_check_launch: the last-error check after a kernel launch, for .cu files (which keep fmt and the
// rest of base/ out of nvcc's way). Aborts with the launching file:line on error. Host side.
#pragma once

namespace keel::backend::cuda {

void cuda_check_launch(const char* file, int line);
// What a launch_pdl kernel is, for the programmatic-dependent-launch policy (pdl.cuh).
enum class PdlKind { kOther, kGemv, kAttention };
// Whether a kernel of `kind` launches with programmatic dependent launch (pdl.cuh), given the kind of
// the last launch_pdl kernel on this host thread (every call records `kind` as that). KEEL_CUDA_PDL
// (read once): unset or `gemv` (the default) a GEMV right after a GEMV (the weight stream of one
// projection starts during the tail of the one before: o -> gate/up -> down -> next Q/K/V); 0 never;
// 1 always; `noattn` every kernel but the one right after attention. Batch-1 8B decode on the H200:
// gemv -0.1 ms of GPU time per step, noattn -0.05, 1 +0.7 (docs/cuda_backend.md "Programmatic
// dependent launch"). Session 8's A/B modes: `gemv_o` also the GEMV right after attention (o), and
// `gemv_ao` also attention right after a GEMV (Q/K/V); a GEMV after attention never requests weights
// before its pdl_wait (pdl_previous), whatever the mode.
bool pdl_launch(PdlKind kind);
// The kind of the last launch_pdl kernel on this host thread (before the launch being prepared), and
// whether the policy lets a kernel of `kind` after one of `prev` launch early (pdl_launch without the
// record).
PdlKind pdl_previous();
bool pdl_allowed(PdlKind kind, PdlKind prev);
// A default-on switch from the environment: true unless `name` is set to "0" (KEEL_CUDA_SAMPLING,
// KEEL_CUDA_FUSED_GEMV, KEEL_CUDA_ATTN_*, KEEL_CUDA_TOPP_COMPACT ...). Host side; callers cache it.
bool env_on(const char* name);

}  // namespace keel::backend::cuda

#define KEEL_CUDA_LAUNCHED() ::keel::backend::cuda::cuda_check_launch(__FILE__, __LINE__)
