// Error checks for every CUDA runtime and cuBLAS call and for kernel launches. A failing call is a
// bug or a dead device, not an input error: it aborts with file:line and the CUDA message.
// Used by every file of backend/cuda/, host side only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "base/check.h"

#define KEEL_CUDA_CHECK(expr)                                                                  \
  do {                                                                                         \
    const cudaError_t keel_cuda_err_ = (expr);                                                 \
    KEEL_CHECK(keel_cuda_err_ == cudaSuccess, "{}: {}", #expr, cudaGetErrorString(keel_cuda_err_)); \
  } while (0)

#define KEEL_CUBLAS_CHECK(expr)                                                                         \
  do {                                                                                                  \
    const cublasStatus_t keel_cublas_st_ = (expr);                                                      \
    KEEL_CHECK(keel_cublas_st_ == CUBLAS_STATUS_SUCCESS, "{}: {}", #expr, cublasGetStatusString(keel_cublas_st_)); \
  } while (0)

// After every kernel launch: launch-configuration errors surface here, at the launching line.
#define KEEL_CUDA_CHECK_LAUNCH() KEEL_CUDA_CHECK(cudaGetLastError())
