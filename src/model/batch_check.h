// Validation of a Batch against the model and KV pool it runs on: everything an op would index with
// (token ids, slots, sequence ranges, logit rows) is range-checked on the host before any op runs.
// Called by every architecture's forward; pure, any thread.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "model/batch.h"

namespace keel::model {

// kInvalidArgument naming the first bad field. Each token must belong to exactly one sequence, and
// each sequence's ctx_slots must end with the slots its new tokens write.
Status validate_batch(const Batch& batch, int64_t vocab_size, int64_t n_slots);

}  // namespace keel::model
