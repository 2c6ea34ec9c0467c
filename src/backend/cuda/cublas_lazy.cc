#include "backend/cuda/cublas_lazy.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

namespace keel::backend::cuda {
namespace {

struct Library {
  void* handle = nullptr;
  std::string error;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    // By name first (LD_LIBRARY_PATH, ld.so.cache), then the usual toolkit folders, then the one
    // this binary was built against.
    const std::string candidates[] = {
        "libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib/libcublas.so.13",
        std::string(KEEL_CUDA_LIBRARY_DIR) + "/libcublas.so.13"};
    for (const std::string& name : candidates) {
      if ((l.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) return l;
      if (l.error.empty()) l.error = dlerror();
    }
    return l;
  }();
  return lib;
}

template <class F>
F resolve(const char* name) {
  const Library& lib = library();
  return lib.handle == nullptr ? nullptr : reinterpret_cast<F>(dlsym(lib.handle, name));
}

}  // namespace

Status load_cublas() {
  const Library& lib = library();
  if (lib.handle == nullptr) {
    return make_error(ErrorCode::kUnavailable, "cuda: cannot load cuBLAS 13 ({}); install the CUDA 13 libraries",
                      lib.error);
  }
  for (const char* name : {"cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2",
                           "cublasGetStatusString", "cublasGemmEx"}) {
    if (dlsym(lib.handle, name) == nullptr) {
      return make_error(ErrorCode::kUnavailable, "cuda: the loaded cuBLAS lacks {}", name);
    }
  }
  return {};
}

}  // namespace keel::backend::cuda

// The entry points, with the signatures of cublas_api.h (the header checks them). Before
// load_cublas() succeeded they report CUBLAS_STATUS_NOT_INITIALIZED.
extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  static const auto f = keel::backend::cuda::resolve<decltype(&cublasCreate_v2)>("cublasCreate_v2");
  return f != nullptr ? f(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  static const auto f = keel::backend::cuda::resolve<decltype(&cublasDestroy_v2)>("cublasDestroy_v2");
  return f != nullptr ? f(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  static const auto f = keel::backend::cuda::resolve<decltype(&cublasSetStream_v2)>("cublasSetStream_v2");
  return f != nullptr ? f(handle, stream) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  static const auto f = keel::backend::cuda::resolve<decltype(&cublasSetWorkspace_v2)>("cublasSetWorkspace_v2");
  return f != nullptr ? f(handle, workspace, bytes) : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto f = keel::backend::cuda::resolve<decltype(&cublasGetStatusString)>("cublasGetStatusString");
  return f != nullptr ? f(status) : "cuBLAS not loaded";
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const void* alpha, const void* a, cudaDataType a_type,
                                         int lda, const void* b, cudaDataType b_type, int ldb, const void* beta,
                                         void* c, cudaDataType c_type, int ldc, cublasComputeType_t compute_type,
                                         cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t(CUBLASWINAPI*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                           cublasGemmAlgo_t);
  static const auto f = keel::backend::cuda::resolve<Fn>("cublasGemmEx");
  return f != nullptr ? f(handle, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c, c_type, ldc,
                          compute_type, algo)
                      : CUBLAS_STATUS_NOT_INITIALIZED;
}

}  // extern "C"
