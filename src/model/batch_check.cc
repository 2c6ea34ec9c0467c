#include "model/batch_check.h"

#include <algorithm>
#include <vector>

namespace keel::model {
namespace {

Status check_seq(const Batch& b, size_t s, int64_t n_slots, std::vector<char>& owned) {
  const BatchSeq& q = b.seqs[s];
  const int64_t n = b.n_tokens();
  if (q.n_q <= 0 || q.q_begin < 0 || int64_t{q.q_begin} + q.n_q > n) {
    return make_error(ErrorCode::kInvalidArgument, "batch seq {}: tokens [{}, {}+{}) outside the batch of {}", s,
                      q.q_begin, q.q_begin, q.n_q, n);
  }
  if (static_cast<int64_t>(q.ctx_slots.size()) < q.n_q) {
    return make_error(ErrorCode::kInvalidArgument, "batch seq {}: {} ctx_slots for {} new tokens", s,
                      q.ctx_slots.size(), q.n_q);
  }
  for (size_t i = 0; i < q.ctx_slots.size(); ++i) {
    if (q.ctx_slots[i] < 0 || q.ctx_slots[i] >= n_slots) {
      return make_error(ErrorCode::kInvalidArgument, "batch seq {}: ctx_slots[{}] = {} outside the pool of {}", s, i,
                        q.ctx_slots[i], n_slots);
    }
  }
  const size_t ctx_new = q.ctx_slots.size() - static_cast<size_t>(q.n_q);
  for (int32_t i = 0; i < q.n_q; ++i) {
    const size_t t = static_cast<size_t>(q.q_begin + i);
    if (owned[t]) return make_error(ErrorCode::kInvalidArgument, "batch token {} belongs to two sequences", t);
    owned[t] = 1;
    if (q.ctx_slots[ctx_new + static_cast<size_t>(i)] != b.slots[t]) {
      return make_error(ErrorCode::kInvalidArgument,
                        "batch seq {}: ctx_slots[{}] = {} but its new token {} writes slot {}", s,
                        ctx_new + static_cast<size_t>(i), q.ctx_slots[ctx_new + static_cast<size_t>(i)], t,
                        b.slots[t]);
    }
  }
  return {};
}

}  // namespace

Status validate_batch(const Batch& b, int64_t vocab_size, int64_t n_slots) {
  const size_t n = b.tokens.size();
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "batch has no tokens");
  if (b.positions.size() != n || b.slots.size() != n) {
    return make_error(ErrorCode::kInvalidArgument, "batch has {} tokens, {} positions, {} slots", n,
                      b.positions.size(), b.slots.size());
  }
  if (!b.from_sampled.empty() && b.from_sampled.size() != n) {
    return make_error(ErrorCode::kInvalidArgument, "batch has {} tokens, {} from_sampled entries", n,
                      b.from_sampled.size());
  }
  for (size_t i = 0; i < b.from_sampled.size(); ++i) {
    if (b.from_sampled[i] < -1) {
      return make_error(ErrorCode::kInvalidArgument, "batch from_sampled {} = {} is below -1", i, b.from_sampled[i]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= vocab_size) {
      return make_error(ErrorCode::kInvalidArgument, "batch token {} = {} outside the vocabulary of {}", i,
                        b.tokens[i], vocab_size);
    }
    if (b.positions[i] < 0) {
      return make_error(ErrorCode::kInvalidArgument, "batch position {} = {} is negative", i, b.positions[i]);
    }
    if (b.slots[i] < 0 || b.slots[i] >= n_slots) {
      return make_error(ErrorCode::kInvalidArgument, "batch slot {} = {} outside the pool of {}", i, b.slots[i],
                        n_slots);
    }
  }
  std::vector<int32_t> sorted = b.slots;
  std::sort(sorted.begin(), sorted.end());
  if (auto it = std::adjacent_find(sorted.begin(), sorted.end()); it != sorted.end()) {
    return make_error(ErrorCode::kInvalidArgument, "batch writes slot {} twice", *it);
  }
  std::vector<char> owned(n, 0);
  for (size_t s = 0; s < b.seqs.size(); ++s) KEEL_RETURN_IF_ERROR(check_seq(b, s, n_slots, owned));
  for (size_t t = 0; t < n; ++t) {
    if (!owned[t]) return make_error(ErrorCode::kInvalidArgument, "batch token {} belongs to no sequence", t);
  }
  for (size_t i = 0; i < b.logit_rows.size(); ++i) {
    if (b.logit_rows[i] < 0 || static_cast<size_t>(b.logit_rows[i]) >= n) {
      return make_error(ErrorCode::kInvalidArgument, "batch logit_rows[{}] = {} outside the batch of {}", i,
                        b.logit_rows[i], n);
    }
  }
  return {};
}

}  // namespace keel::model
