// Test helper: runs sequences through Model::forward on a schedule of chunks (prefill chunks and
// single-token steps of several sequences mixed in one Batch), with each sequence's tokens in the KV
// slots its plan names, and collects the logits of every position. Used by the parity tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"

namespace keel::model::test {

struct SeqPlan {
  std::vector<int32_t> tokens;  // [len]
  std::vector<int32_t> slots;   // [len] KV slot of each position
};

// chunks[step][seq] = new tokens of seq in that step (0 = absent). order[step] (optional) lists the
// sequences in batch order for that step. Returns per-sequence logits [len, vocab] (rows of
// positions that were run). Fails the test on a forward error.
inline std::vector<std::vector<float>> run_schedule(Model& m, KvStorage& kv, const std::vector<SeqPlan>& plans,
                                                    const std::vector<std::vector<int>>& chunks,
                                                    const std::vector<std::vector<int>>& order = {}) {
  const int64_t vocab = m.config().vocab_size;
  std::vector<std::vector<float>> out(plans.size());
  std::vector<int> done(plans.size(), 0);
  for (size_t p = 0; p < plans.size(); ++p) out[p].assign(plans[p].tokens.size() * static_cast<size_t>(vocab), 0.0f);
  for (size_t step = 0; step < chunks.size(); ++step) {
    Batch b;
    std::vector<std::pair<size_t, int>> row_owner;  // (seq, position) of each logit row
    std::vector<int> seq_order;
    if (step < order.size()) {
      seq_order = order[step];
    } else {
      for (size_t p = 0; p < plans.size(); ++p) seq_order.push_back(static_cast<int>(p));
    }
    for (int p : seq_order) {
      const int k = chunks[step][static_cast<size_t>(p)];
      if (k == 0) continue;
      const SeqPlan& plan = plans[static_cast<size_t>(p)];
      int& d = done[static_cast<size_t>(p)];
      BatchSeq s;
      s.q_begin = b.n_tokens();
      s.n_q = k;
      s.ctx_slots.assign(plan.slots.begin(), plan.slots.begin() + d + k);
      for (int i = d; i < d + k; ++i) {
        b.logit_rows.push_back(b.n_tokens());
        row_owner.push_back({static_cast<size_t>(p), i});
        b.tokens.push_back(plan.tokens[static_cast<size_t>(i)]);
        b.positions.push_back(i);
        b.slots.push_back(plan.slots[static_cast<size_t>(i)]);
      }
      b.seqs.push_back(std::move(s));
      d += k;
    }
    std::vector<float> logits(b.logit_rows.size() * static_cast<size_t>(vocab));
    Status st = m.forward(b, kv, logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
    for (size_t r = 0; r < row_owner.size(); ++r) {
      auto [p, pos] = row_owner[r];
      std::copy_n(logits.begin() + static_cast<std::ptrdiff_t>(r * static_cast<size_t>(vocab)), vocab,
                  out[p].begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(pos) * static_cast<size_t>(vocab)));
    }
  }
  for (size_t p = 0; p < plans.size(); ++p) EXPECT_EQ(done[p], static_cast<int>(plans[p].tokens.size()));
  return out;
}

// max |got - want| / max |want| over one row.
inline double row_rel_error(const float* got, const float* want, int64_t n) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    num = std::max(num, std::fabs(static_cast<double>(got[i]) - want[i]));
    den = std::max(den, std::fabs(static_cast<double>(want[i])));
  }
  return den == 0.0 ? num : num / den;
}

}  // namespace keel::model::test
