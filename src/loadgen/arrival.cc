#include "loadgen/arrival.h"

#include <cmath>
#include <random>

namespace keel::loadgen {

Status ArrivalConfig::validate() const {
  if (concurrency < 0)
    return make_error(ErrorCode::kInvalidArgument, "--concurrency must be >= 1, got {}", concurrency);
  if (!(rate_rps >= 0.0) || !std::isfinite(rate_rps))
    return make_error(ErrorCode::kInvalidArgument, "--rate must be a positive number, got {}", rate_rps);
  if ((concurrency > 0) == (rate_rps > 0.0))
    return make_error(ErrorCode::kInvalidArgument, "give exactly one of --concurrency and --rate");
  if (burst < 1) return make_error(ErrorCode::kInvalidArgument, "--burst must be >= 1, got {}", burst);
  if (concurrency > 0 && burst != 1) return make_error(ErrorCode::kInvalidArgument, "--burst only applies with --rate");
  return {};
}

std::vector<int64_t> arrival_offsets_us(const ArrivalConfig& c, int64_t n) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  std::mt19937_64 rng(c.seed ^ 0xA5A5A5A5ULL);
  std::exponential_distribution<double> gap_s(c.rate_rps / static_cast<double>(c.burst));
  double t_s = 0.0;
  while (static_cast<int64_t>(out.size()) < n) {
    const auto t_us = static_cast<int64_t>(std::llround(t_s * 1e6));
    for (int32_t b = 0; b < c.burst && static_cast<int64_t>(out.size()) < n; ++b) out.push_back(t_us);
    t_s += gap_s(rng);
  }
  return out;
}

}  // namespace keel::loadgen
