// Batch validation: each malformed field is rejected with kInvalidArgument before any op runs.
#include <functional>

#include <gtest/gtest.h>

#include "model/batch_check.h"

namespace keel::model {
namespace {

// Two sequences: A has 2 cached tokens (slots 0, 1) + 2 new (slots 4, 5); B is a 1-token decode at
// slot 7 after cached slots 2, 3.
Batch good_batch() {
  Batch b;
  b.tokens = {10, 11, 12};
  b.positions = {2, 3, 2};
  b.slots = {4, 5, 7};
  b.seqs = {{.q_begin = 0, .n_q = 2, .ctx_slots = {0, 1, 4, 5}}, {.q_begin = 2, .n_q = 1, .ctx_slots = {2, 3, 7}}};
  b.logit_rows = {1, 2};
  return b;
}

TEST(BatchCheck, AcceptsAWellFormedBatch) { EXPECT_TRUE(validate_batch(good_batch(), 100, 8).ok()); }

TEST(BatchCheck, RejectsEachMalformedField) {
  const std::vector<std::pair<std::string, std::function<void(Batch&)>>> cases = {
      {"empty", [](Batch& b) { b = Batch{}; }},
      {"positions size", [](Batch& b) { b.positions.pop_back(); }},
      {"token id", [](Batch& b) { b.tokens[1] = 100; }},
      {"negative token", [](Batch& b) { b.tokens[0] = -1; }},
      {"negative position", [](Batch& b) { b.positions[2] = -3; }},
      {"slot out of pool", [](Batch& b) { b.slots[2] = 8; }},
      {"slot written twice", [](Batch& b) { b.slots[1] = 4; b.seqs[0].ctx_slots[3] = 4; }},
      {"ctx slot out of pool", [](Batch& b) { b.seqs[1].ctx_slots[0] = 9; }},
      {"ctx does not end with new slots", [](Batch& b) { b.seqs[0].ctx_slots = {0, 1, 5, 4}; }},
      {"too few ctx slots", [](Batch& b) { b.seqs[0].ctx_slots = {4}; }},
      {"seq past the batch", [](Batch& b) { b.seqs[1].n_q = 2; }},
      {"token in no seq", [](Batch& b) { b.seqs.pop_back(); }},
      {"token in two seqs", [](Batch& b) { b.seqs[1].q_begin = 1; b.seqs[1].ctx_slots = {2, 3, 5}; }},
      {"zero n_q", [](Batch& b) { b.seqs[1].n_q = 0; }},
      {"logit row", [](Batch& b) { b.logit_rows.push_back(3); }},
  };
  for (const auto& [what, mutate] : cases) {
    Batch b = good_batch();
    mutate(b);
    Status s = validate_batch(b, 100, 8);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << what;
  }
}

}  // namespace
}  // namespace keel::model
