// Programmatic dependent launch (Hopper): a kernel launched with launch_pdl may start while the kernel
// before it on the stream is still running (in a captured graph too: a programmatic edge). Its blocks
// call pdl_trigger() first (its own dependents may launch once all its blocks run) and pdl_wait()
// before they read or write anything an earlier kernel touches: pdl_wait() returns once the preceding
// kernel has completed and its writes are visible, and since that kernel waited for its own
// predecessor, every earlier kernel is complete too. Before pdl_wait() a kernel may only read data no
// kernel of the step writes (weights: the GEMV requests its first weight lines there, so the weight
// stream starts during the previous kernel's tail). Both are no-ops in a kernel launched without the
// attribute. Which launches get the attribute: pdl_launch (launch_check.h, KEEL_CUDA_PDL); by default
// a GEMV that follows a GEMV (every kernel early made the 8B batch-1 step slower, docs/cuda_backend.md).
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }

// kernel<<<grid, block, smem, s>>>(args...) with the programmatic-serialization attribute when the
// policy (pdl_launch, KEEL_CUDA_PDL) says so for a kernel of `kind` after the last one.
// The launch error is left for KEEL_CUDA_LAUNCHED().
template <typename... P, typename... A>
void launch_pdl(PdlKind kind, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                A&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_launch(kind) ? 1 : 0;
  (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}
template <typename... P, typename... A>
void launch_pdl(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A&&... args) {
  launch_pdl(PdlKind::kOther, kernel, grid, block, smem, s, std::forward<A>(args)...);
}

}  // namespace keel::backend::cuda
