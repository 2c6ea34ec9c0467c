// The flat batch one forward pass runs: every token of every sequence in this step (prefill chunks
// and decode tokens mixed), with its position and the KV slot it writes, plus each sequence's view of
// the KV pool for attention. Built by the scheduler (or `keel generate`), read by Model::forward.
// Plain data, handed over by value between stages.
#pragma once

#include <cstdint>
#include <vector>

namespace keel::model {

struct BatchSeq {
  int32_t q_begin = 0;              // first token of this sequence in Batch::tokens
  int32_t n_q = 0;                  // new tokens of this sequence in this step
  std::vector<int32_t> ctx_slots;   // KV slots of all visible tokens, in position order (ends with the new ones)
};

struct Batch {
  std::vector<int32_t> tokens;      // [n_tokens]
  std::vector<int32_t> positions;   // [n_tokens]
  std::vector<int32_t> slots;       // [n_tokens] KV slot each token writes
  std::vector<BatchSeq> seqs;
  std::vector<int32_t> logit_rows;  // token indices whose logits are wanted, in output order
  // Overlap scheduling: [n_tokens] or empty. from_sampled[i] >= 0: token i is not known on the host
  // yet; it is row from_sampled[i] of the token ids the backend's last sample_rows_async wrote, read on
  // the device (Backend::embed_sampled); tokens[i] holds 0 and is not read. -1: tokens[i] itself.
  std::vector<int32_t> from_sampled;

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
};

}  // namespace keel::model
