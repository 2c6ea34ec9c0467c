// GrammarMatcher: the per-request state of constrained decoding. Feeds accepted tokens' bytes to an
// Earley parser, fills the mask of allowed next tokens (cached per-position classifications plus a
// walk of the uncertain tokens against the full parse, or the finished mask of a state seen before),
// rolls back the last n steps (speculative decoding), and finds
// jump-forward bytes (the continuation every accepted output must take). Called by the sampler on
// the scheduler thread; one matcher per sequence, not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/earley.h"
#include "grammar/mask_cache.h"

namespace keel::grammar {

class StateWalker;

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<TokenMaskCache> masks);

  // Consumes one token; false (state unchanged) when the grammar forbids it. An EOS id is accepted
  // only where the grammar may end, and terminates the matcher.
  bool accept_token(int32_t id);
  // Consumes raw bytes (e.g. forced jump-forward text) as one step; all-or-nothing.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last n accept_* steps (n <= n_steps()).
  void rollback(size_t n);
  size_t n_steps() const { return step_bytes_.size(); }

  // bitmask[ceil(n_vocab / 32)]: bit t set when token t may come next.
  void fill_mask(std::span<uint32_t> bitmask);
  // Bytes every continuation must start with (stops where EOS becomes possible or a choice appears).
  std::string jump_forward(size_t max_bytes = 4096);

  bool can_end() const { return !terminated_ && parser_.can_end(); }
  // The grammar is complete and no byte may follow: only EOS remains.
  bool must_end() const { return !terminated_ && parser_.can_end() && parser_.next_bytes().count() == 0; }
  bool is_terminated() const { return terminated_; }
  // Masks built by fill_by_count so far (tests check the path is taken).
  uint64_t count_walks() const { return count_walks_; }
  // Exit groups whose tokens fill_by_count read back instead of walking (tests check it is used).
  uint64_t exit_cache_hits() const { return exit_cache_hits_; }

 private:
  void fill_by_positions(std::span<uint32_t> bitmask);
  void check_uncertain(std::span<uint32_t> bitmask);
  // first_byte_mask.cc: the mask by first byte from a state other columns led to; false when not tried.
  bool fill_by_first_byte(std::span<uint32_t> bitmask);
  // count_walk.cc: the mask of a state that counts text characters from the vocabulary's
  // TextCounts; false when the state does not.
  bool fill_by_count(std::span<uint32_t> bitmask);
  // count_walk.cc: the text runs the chain proves for its states (c_j: kDepth - j + deep_run).
  void raise_chain_runs(uint32_t deep_run);
  // Marks the tokens of trie node `root`'s subtree the parse takes; the walk stands at root's parent.
  void walk_below(StateWalker& walk, uint32_t root, std::span<uint32_t> bitmask);
  void mark_subtree(StateWalker& walk, uint32_t top, StateTable::State at, std::span<uint32_t> bitmask);

  std::shared_ptr<TokenMaskCache> masks_;
  EarleyParser parser_;
  std::vector<uint32_t> step_bytes_;  // bytes consumed by each step; UINT32_MAX marks the EOS step
  bool terminated_ = false;
  std::vector<uint32_t> positions_;   // scratch
  std::vector<uint32_t> candidates_;  // scratch: roots of uncertain trie subtrees
  std::vector<uint32_t> path_;        // scratch: a subtree root's ancestors
  std::vector<std::pair<uint32_t, StateTable::State>> tops_;  // scratch: first-level nodes, state reached
  std::vector<StateTable::State> chain_;  // scratch: a counting state's text chain
  uint64_t count_walks_ = 0;
  // count_walk.cc, per TextCounts exit group: the states after the group's byte it was walked from
  // (kExitStates at most) and, from the second walk on, the tokens taken below its nodes from there.
  struct ExitEntry {
    StateTable::State x;
    bool kept;
    std::vector<uint32_t> tokens;
  };
  std::vector<std::vector<ExitEntry>> exit_cache_;
  uint64_t exit_cache_hits_ = 0;
};

}  // namespace keel::grammar
