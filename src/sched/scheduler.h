// The continuous-batching scheduler. It owns the KV storage, the slot pool, the radix tree, the
// waiting queue and the running set; step() turns them into one forward pass over a flat batch that
// mixes prefill chunks of new requests with one decode token per running sample, then samples,
// streams and finishes. Single-threaded: ThreadedEngine's scheduler thread (or a test) is the only
// caller; check_request() alone may run on any thread. Sinks are called from step() and cancel().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "cache/cache_event.h"
#include "cache/kv_slot_pool.h"
#include "cache/radix_tree.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "sched/engine.h"
#include "sched/kv_prefix.h"
#include "sched/sched_config.h"
#include "sched/sequence.h"
#include "sched/step_plan.h"
#include "tokenizer/tokenizer.h"

namespace keel::sched {

struct SchedulerParams {
  model::Model* model = nullptr;                    // outlives the scheduler; used only by it
  const tokenizer::Tokenizer* tokenizer = nullptr;  // for end-of-generation ids and text
  SchedConfig config;
};

// Lifetime counters, for tests, /metrics and logs.
struct SchedulerStats {
  int64_t n_steps = 0;
  int64_t n_prefill_tokens = 0;  // prompt tokens computed (recomputation after preemption included)
  int64_t n_decode_tokens = 0;
  int64_t n_prompt_tokens = 0;         // prompt tokens of admitted requests
  int64_t n_cached_prompt_tokens = 0;  // of those, served from the prefix cache
  int64_t n_preemptions = 0;
  int64_t n_finished = 0;      // samples finished (stop, length, cancel, error)
  int64_t n_mixed_steps = 0;   // steps with prefill and decode tokens in one batch
  int32_t max_batch_seqs = 0;  // most sequences in one step
  int64_t n_jump_forward_tokens = 0;  // tokens a grammar forced, appended without sampling
  int64_t n_prefix_waits = 0;         // admission passes a sequence waited for an in-flight shared prefix
  int64_t n_exported_tokens = 0;      // cached tokens whose KV export_prefix copied out
  int64_t n_imported_tokens = 0;      // tokens import_prefix newly cached from another replica's KV
};

class Scheduler {
 public:
  static Result<std::unique_ptr<Scheduler>> create(const SchedulerParams& params);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Remaining requests get a final kCancelled event.
  ~Scheduler();

  // Request checks that need no scheduler state: kInvalidArgument for an empty prompt, a prompt that
  // does not fit the context (by how much), token ids outside the vocabulary, bad n / max_tokens /
  // top_logprobs / sampling parameters. Any thread.
  Status check_request(const GenerateRequest& request) const;
  // check_request, then queues (kResourceExhausted when max_queue requests wait already,
  // kInvalidArgument when the id is in use).
  Status enqueue(GenerateRequest request, EventSink sink);
  // Frees the request's KV slots at once and sends each unfinished sample a final kCancelled event.
  // Unknown ids (finished already) are ignored.
  void cancel(RequestId id) { end_request(id, FinishReason::kCancelled, {}); }
  void cancel_all();

  // One step: admit, match, allocate, build the batch, run, sample, stream, finish. Returns false
  // when nothing ran (no work).
  bool step();
  bool idle() const { return waiting_.empty() && running_.empty(); }
  // Whether steps overlap (SchedConfig::overlap on a backend that samples asynchronously).
  bool overlapping() const { return overlap_; }

  // Evicts every unlocked cached prefix; returns the tokens freed.
  int64_t flush_cache();
  int64_t drain_cache_events(std::vector<cache::CacheEvent>& out) { return tree_.drain_events(out); }
  cache::FeedSnapshot cache_snapshot() const { return tree_.snapshot(); }

  // KV transfer between replicas (kv_transfer.cc). export_prefix: the longest cached prefix of tokens
  // (at most max_tokens of it), with its KV; nothing when none is cached. import_prefix: caches
  // p.tokens with p's KV where they are not cached yet (evicting unlocked cache for room) and returns
  // how many tokens it newly cached; kInvalidArgument when p's data does not fit the model's shape,
  // kResourceExhausted when the pool cannot hold it. The imported prefix is an ordinary cache entry:
  // LRU, evictable, published on the change feed.
  KvPrefix export_prefix(std::span<const int32_t> tokens, int64_t max_tokens);
  Result<int64_t> import_prefix(const KvPrefix& p);
  // Floats per token of a KvPrefix for this model: n_layers x 2 x n_kv_heads x head_dim.
  int64_t kv_floats_per_token() const;

  EngineLoad load() const;
  int32_t n_waiting_requests() const;  // requests none of whose samples was admitted yet
  int64_t context_tokens() const { return n_ctx_; }
  const SchedConfig& config() const { return config_; }
  const SchedulerStats& stats() const { return stats_; }
  const cache::KvSlotPool& pool() const { return pool_; }
  const cache::RadixTree& tree() const { return tree_; }
  // The tree's invariants plus slot ownership: every slot is free, cached, or owned by exactly one
  // running sequence; waiting sequences hold nothing; locks match the running set. O(pool + tree).
  Status check_invariants() const;

 private:
  Scheduler(const SchedulerParams& params, int64_t n_ctx, model::KvStorage kv);

  // The steps, one file each.
  void admit();                                                                  // admit.cc
  void match_prefix(Sequence& s);                                                // match_prefix.cc
  void release_match(Sequence& s);                                               // match_prefix.cc
  std::vector<PlanEntry> allocate();                                             // allocate.cc
  bool reserve_slots(Sequence& s, int32_t& n, std::vector<PlanEntry>& planned);  // allocate.cc
  // Evicts unlocked cache (LRU) until n slots are free or nothing is evictable; whether n are free.
  bool evict_for(int64_t n);                                                     // allocate.cc
  void preempt(Sequence& s, std::vector<PlanEntry>& planned);                    // preempt.cc
  StepPlan build_batch(std::vector<PlanEntry> entries) const;                    // build_batch.cc
  Status run(const StepPlan& plan);                                              // run.cc
  void commit(const StepPlan& plan);                                             // run.cc
  std::vector<std::vector<SeqId>> fork_samples(const StepPlan& plan);            // fork.cc
  std::vector<SampledToken> sample(const StepPlan& plan, const std::vector<std::vector<SeqId>>& row_seqs);  // sample.cc
  std::vector<SampledToken> sample_on_device(const std::vector<std::vector<SeqId>>& row_seqs);  // sample_device.cc
  std::vector<SampledToken> device_rows(const std::vector<std::vector<SeqId>>& row_seqs,
                                        std::vector<size_t>& out_of_row);  // sample_device.cc
  // Overlap (overlap.cc): whether this step's samples may stay in flight; sampling them so (their
  // tokens read by the next step); reading and streaming the tokens of the step in flight; dropping
  // rows whose sequence ended (or got forced tokens) while the step in flight was read.
  bool may_overlap(const std::vector<std::vector<SeqId>>& row_seqs) const;
  void launch_sampling(const StepPlan& plan, const std::vector<std::vector<SeqId>>& row_seqs);
  void resolve_in_flight();
  void drop_stale_rows(std::vector<std::vector<SeqId>>& row_seqs) const;
  void stream(std::vector<SampledToken>& sampled);                                                          // stream.cc
  void finish();                                                                                            // finish.cc
  void fail_step(const StepPlan& plan, const Status& error);                                                // run.cc

  // KV hand-over between a sequence and the cache (cache_sequence.cc). cache_in_flight inserts
  // tokens[0, n_computed) into the tree and moves the sequence's lock to the new node (it keeps running
  // on the cached slots); release_to_cache does the same and then lets go (the sequence holds no KV
  // after); drop_kv frees what the sequence owns without caching it. Duplicate slots go to the pool.
  void cache_in_flight(Sequence& s);
  void release_to_cache(Sequence& s);
  void drop_kv(Sequence& s);
  // Unlocks the sequence's node and leaves it holding nothing (root, no slots, nothing computed).
  void detach_from_tree(Sequence& s);

  Sequence& seq(SeqId id) const;
  Group& group_of(const Sequence& s) const;
  std::unique_ptr<Sequence> new_sequence(const Group& g, int32_t index);
  void remove_running(SeqId id);
  void end_request(RequestId id, FinishReason reason, std::string_view error);  // cancel.cc
  void emit_final(Group& g, int32_t index, int32_t n_generated, FinishReason reason, std::string_view error);
  SampledToken sample_one(Sequence& s, std::span<const float> logits, int32_t top_logprobs);
  FinishReason take_token(Sequence& s, const StopConditions& stop, int32_t token, std::string& text,
                          std::string& error);
  FinishReason append_text(Sequence& s, const StopConditions& stop, int32_t token, std::string& text);

  model::Model& model_;
  const tokenizer::Tokenizer& tok_;
  SchedConfig config_;
  int64_t n_ctx_ = 0;  // most tokens one sequence may hold: min(model context, pool)
  int64_t n_vocab_ = 0;
  model::KvStorage kv_;
  cache::KvSlotPool pool_;
  cache::RadixTree tree_;

  std::unordered_map<RequestId, std::unique_ptr<Group>> groups_;
  std::unordered_map<uint64_t, std::unique_ptr<Sequence>> seqs_;  // by SeqId::value
  std::deque<SeqId> waiting_;   // front is admitted first (preempted sequences rejoin there)
  std::vector<SeqId> running_;  // admission order
  uint64_t next_seq_ = 1;
  uint64_t next_admit_ = 1;

  // Sampling on the device (the model's backend can_sample_rows): run() leaves the logits there and
  // only token ids (and the raw rows of requests that want log-probabilities) come back.
  bool device_sampling_ = false;
  backend::Tensor device_logits_;  // [rows, vocab] f32 on the backend, of the last step
  std::vector<backend::DeviceSampleRow> dev_rows_;
  std::vector<backend::DeviceSampleProc> dev_procs_;
  std::vector<uint32_t> dev_masks_;
  std::vector<float> logits_;     // [rows, vocab] of the last step
  std::vector<float> processed_;  // [vocab] one row after logits processors
  std::vector<uint32_t> mask_;    // [ceil(vocab / 32)] allowed tokens of a constrained sequence
  sample::SamplerScratch sampler_scratch_;
  SchedulerStats stats_;

  // Overlap: the step whose sampled tokens are not read yet. rows[k] is the sample of output row k
  // (Sequence::sampled_row); on the device its token is filled in when read, on the host it is known.
  struct InFlight {
    std::vector<SampledToken> rows;
    bool on_device = false;
  };
  bool overlap_ = false;
  std::optional<InFlight> in_flight_;
};

}  // namespace keel::sched
