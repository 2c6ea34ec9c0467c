#include "sched/sequence.h"

#include "sample/rng.h"

namespace keel::sched {

uint64_t sample_seed(uint64_t request_seed, int32_t index) {
  if (index == 0) return request_seed;
  return sample::mix64(request_seed ^ sample::mix64(static_cast<uint64_t>(index)));
}

}  // namespace keel::sched
