// Counter-based random numbers: a pure function of (seed, position, token id), so a sampled request's
// draws do not depend on what else is in the batch or on the device that computes them (the host
// sampler, sample/sampler.cc, and the CUDA backend's, backend/cuda/sampling.cu, use the same ones).
// Stateless: any thread. Compiled as host and device code.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define KEEL_HOST_DEVICE __host__ __device__
#else
#define KEEL_HOST_DEVICE
#endif

namespace keel {

// SplitMix64 finaliser: a bijective 64-bit mixer with good avalanche.
KEEL_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in the open interval (0, 1), 53 random bits.
KEEL_HOST_DEVICE inline double uniform_open(uint64_t seed, uint64_t position, uint64_t token) {
  uint64_t h = mix64(mix64(mix64(seed) ^ position) ^ (token * 0xd6e8feb86659fd93ULL));
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace keel
