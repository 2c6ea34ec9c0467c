// Counter-based random numbers for sampling (base/counter_rng.h): a pure function of (seed, position,
// token id), so a request's draws do not depend on what else is in the batch or on the device that
// computes them. Stateless: any thread.
#pragma once

#include "base/counter_rng.h"

namespace keel::sample {

using keel::mix64;
using keel::uniform_open;

}  // namespace keel::sample
