#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/check.h"

namespace keel::model {
namespace {

// theta^(2i/d) rounded to f32, as torch's `base ** (arange(0, d, 2).float() / d)`.
float pos_freq(float theta, int64_t dim, size_t i) {
  const float expo = static_cast<float>(2 * i) / static_cast<float>(dim);
  return static_cast<float>(std::pow(static_cast<double>(theta), static_cast<double>(expo)));
}

std::vector<float> default_inv_freq(float theta, int64_t dim) {
  std::vector<float> f(static_cast<size_t>(dim / 2));
  for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0f / pos_freq(theta, dim, i);
  return f;
}

void apply_llama3(const RopeConfig& r, std::vector<float>& f) {
  const float old_ctx = static_cast<float>(r.original_max_positions);
  const float low_wavelen = old_ctx / r.low_freq_factor;
  const float high_wavelen = old_ctx / r.high_freq_factor;
  for (float& inv : f) {
    const float wavelen = 2.0f * std::numbers::pi_v<float> / inv;
    if (wavelen > low_wavelen) {
      inv = inv / r.factor;
    } else if (!(wavelen < high_wavelen)) {
      const float smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      inv = (1.0f - smooth) * inv / r.factor + smooth * inv;
    }
  }
}

// YaRN (transformers' _compute_yarn_parameters): blend interpolated and extrapolated frequencies
// with a linear ramp over the dims between the beta_fast and beta_slow correction dims.
void apply_yarn(const RopeConfig& r, int64_t dim, std::vector<float>& f) {
  const double base = r.theta;
  const double orig = static_cast<double>(r.original_max_positions);
  auto correction_dim = [&](double n_rot) {
    return (static_cast<double>(dim) * std::log(orig / (n_rot * 2.0 * std::numbers::pi))) / (2.0 * std::log(base));
  };
  double low = correction_dim(r.yarn_beta_fast);
  double high = correction_dim(r.yarn_beta_slow);
  if (r.yarn_truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  float lo = static_cast<float>(low);
  float hi = static_cast<float>(high);
  if (lo == hi) hi += 0.001f;
  for (size_t i = 0; i < f.size(); ++i) {
    const float p = pos_freq(r.theta, dim, i);
    const float extrapolation = 1.0f / p;
    const float interpolation = 1.0f / (r.factor * p);
    const float ramp = std::clamp((static_cast<float>(i) - lo) / (hi - lo), 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    f[i] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
}

}  // namespace

RopeTable compute_rope(const RopeConfig& rope, int64_t rot_dims, std::span<const float> freq_factors) {
  KEEL_CHECK(rot_dims > 0 && rot_dims % 2 == 0, "rot_dims {}", rot_dims);
  KEEL_CHECK(freq_factors.empty() || static_cast<int64_t>(freq_factors.size()) == rot_dims / 2);
  RopeTable t;
  t.inv_freq = default_inv_freq(rope.theta, rot_dims);
  switch (rope.scaling) {
    case RopeScaling::kNone:
      break;
    case RopeScaling::kLinear:
      for (float& f : t.inv_freq) f /= rope.factor;
      break;
    case RopeScaling::kLlama3:
      apply_llama3(rope, t.inv_freq);
      break;
    case RopeScaling::kYarn:
      apply_yarn(rope, rot_dims, t.inv_freq);
      break;
  }
  for (size_t i = 0; i < freq_factors.size(); ++i) t.inv_freq[i] /= freq_factors[i];
  t.attn_factor = rope.attn_factor;
  return t;
}

}  // namespace keel::model
