// q8_round: the f32 precision mode's copy of the cpu backend's activation quantization. Before an
// integer dot with Q4_0/Q4_1/Q8_0 (blocks of 32) or Q4_K/Q6_K (blocks of 256) weights, cpu rounds
// each block of an activation row to d * q with d = amax / 127 and q = rint(x * (1 / d)) (kernels.h
// quantize_q8a / quantize_q8k). Doing the same here, in the same f32 operations, gives the GEMM that
// follows the very products cpu sums (its integer dot is sum(w * d * q) regrouped); only the order of
// the f32 additions differs. One warp per block; IEEE division and round-to-nearest-even as on cpu.
#include "backend/cuda/dtype_util.cuh"
#include "backend/cuda/launch_check.h"

namespace keel::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kMaxPerLane = 8;  // blocks of up to 256 elements

__global__ void __launch_bounds__(kWarpsPerBlock * 32) q8_round_kernel(const float* x, int64_t n_blocks, int block,
                                                                        float* out) {
  const int lane = threadIdx.x % 32;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (b >= n_blocks) return;
  const int per_lane = block / 32;
  const float* xb = x + b * block;
  float v[kMaxPerLane];
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    if (j < per_lane) {
      v[j] = xb[j * 32 + lane];
      amax = fmaxf(amax, fabsf(v[j]));
    }
  }
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    if (j < per_lane) out[b * block + j * 32 + lane] = __fmul_rn(d, rintf(__fmul_rn(v[j], id)));
  }
}

}  // namespace

void launch_q8_round(const float* x, int64_t n_blocks, int block, float* out, cudaStream_t s) {
  if (n_blocks == 0) return;
  const auto blocks = static_cast<unsigned>((n_blocks + kWarpsPerBlock - 1) / kWarpsPerBlock);
  q8_round_kernel<<<blocks, kWarpsPerBlock * 32, 0, s>>>(x, n_blocks, block, out);
  KEEL_CUDA_LAUNCHED();
}

}  // namespace keel::backend::cuda
