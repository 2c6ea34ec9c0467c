// cuBLAS is opened with dlopen when the CUDA backend is first created, not linked: a CUDA-enabled
// keel binary then starts (and runs on CPU) on machines without the CUDA libraries, and a CPU run
// does not map cuBLAS/cuBLASLt (62 MiB resident, ~0.25 s of start-up when linked). cublas_lazy.cc
// defines the few cuBLAS entry points keel calls, each forwarding to the loaded library.
#pragma once

#include "base/status.h"

namespace keel::backend::cuda {

// Loads libcublas once (later calls return the first result). kUnavailable names what is missing.
Status load_cublas();

}  // namespace keel::backend::cuda
