#include "tensor/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/half.h"

namespace keel::tensor {

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n) {
  KEEL_CHECK(n % kQK8_0 == 0, "q8_0 row of {} elements is not whole blocks", n);
  for (int64_t i = 0; i < n / kQK8_0; ++i, src += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    dst[i].d = f32_to_fp16(d);
    // roundf: halves away from zero, as ggml's reference does.
    for (int j = 0; j < kQK8_0; ++j) dst[i].qs[j] = static_cast<int8_t>(std::round(src[j] * id));
  }
}

void quantize_row_q8_k(const float* src, BlockQ8_K* dst, int64_t n) {
  KEEL_CHECK(n % kQK_K == 0, "q8_K row of {} elements is not whole blocks", n);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    BlockQ8_K& b = dst[i];
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(src[j]);
      if (ax > amax) {
        amax = ax;
        max = src[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof b);
      continue;
    }
    // -127/max (not 127/amax) so the IQ/K dot kernels can rely on the extreme landing on -127.
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = static_cast<int>(std::nearbyint(iscale * src[j]));  // ties to even
      b.qs[j] = static_cast<int8_t>(std::min(127, v));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[g * 16 + l];
      b.bsums[g] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
  }
}

}  // namespace keel::tensor
