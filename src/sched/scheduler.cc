#include "sched/scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "base/clock.h"
#include "base/log.h"
#include "sample/logits_processors.h"

namespace keel::sched {

Result<std::unique_ptr<Scheduler>> Scheduler::create(const SchedulerParams& params) {
  KEEL_CHECK(params.model != nullptr && params.tokenizer != nullptr, "Scheduler needs a model and a tokenizer");
  KEEL_RETURN_IF_ERROR(params.config.validate());
  const model::ModelConfig& mc = params.model->config();
  if (params.tokenizer->n_vocab() > mc.vocab_size) {
    return make_error(ErrorCode::kInvalidArgument, "the tokenizer has {} tokens, more than the model's {}",
                      params.tokenizer->n_vocab(), mc.vocab_size);
  }
  const int64_t n_slots = params.config.kv_tokens > 0 ? params.config.kv_tokens : mc.max_positions;
  if (n_slots < 2) return make_error(ErrorCode::kInvalidArgument, "kv_tokens = {} leaves no room to generate", n_slots);
  KEEL_ASSIGN_OR_RETURN(model::KvStorage kv, params.model->make_kv_storage(n_slots));
  const int64_t n_ctx = std::min<int64_t>(n_slots, mc.max_positions > 0 ? mc.max_positions : n_slots);
  // Decode-step graphs (cuda) for every batch size the scheduler can run, before the first request.
  const int64_t t0 = now_us();
  KEEL_ASSIGN_OR_RETURN(int64_t n_graphs, params.model->capture_decode_graphs(kv, params.config.max_running,
                                                                             params.config.max_batch_tokens, n_ctx));
  if (n_graphs > 0) {
    KEEL_LOG_INFO("captured {} decode-step graphs (batch sizes up to {}) in {:.0f} ms", n_graphs,
                  params.config.max_running, static_cast<double>(now_us() - t0) / 1e3);
  }
  auto sched = std::unique_ptr<Scheduler>(new Scheduler(params, n_ctx, std::move(kv)));
  if (params.model->backend().can_sample_async()) {
    KEEL_LOG_INFO("overlap scheduling {}", sched->overlap_ ? "on" : "off (--no-overlap or KEEL_OVERLAP=0)");
  }
  return sched;
}

Scheduler::Scheduler(const SchedulerParams& params, int64_t n_ctx, model::KvStorage kv)
    : model_(*params.model),
      tok_(*params.tokenizer),
      config_(params.config),
      n_ctx_(n_ctx),
      n_vocab_(params.model->config().vocab_size),
      kv_(std::move(kv)),
      pool_(kv_.n_slots),
      tree_(params.config.event_queue_capacity),
      device_sampling_(params.model->backend().can_sample_rows()) {
  const char* env = std::getenv("KEEL_OVERLAP");
  const bool env_off = env != nullptr && std::string_view(env) == "0";
  const bool async = device_sampling_ && model_.backend().can_sample_async();
  overlap_ = config_.overlap && !env_off && (async || config_.overlap_on_host);
}

Scheduler::~Scheduler() { cancel_all(); }

Status Scheduler::check_request(const GenerateRequest& r) const {
  const auto n_prompt = static_cast<int64_t>(r.prompt.size());
  if (n_prompt == 0) return make_error(ErrorCode::kInvalidArgument, "the prompt is empty");
  if (n_prompt + 1 > n_ctx_) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the prompt has {} tokens, {} more than the context of {} tokens allows (it must leave room "
                      "for one generated token)",
                      n_prompt, n_prompt + 1 - n_ctx_, n_ctx_);
  }
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= n_vocab_) {
      return make_error(ErrorCode::kInvalidArgument, "prompt token {} = {} is outside the vocabulary of {}", i,
                        r.prompt[i], n_vocab_);
    }
  }
  if (r.n < 1 || r.n > config_.max_running) {
    return make_error(ErrorCode::kInvalidArgument, "n = {} is outside [1, {}] (max_running)", r.n, config_.max_running);
  }
  if (r.stop.max_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens = {} must be at least 1", r.stop.max_tokens);
  }
  if (r.top_logprobs < -1 || r.top_logprobs > 20) {
    return make_error(ErrorCode::kInvalidArgument, "top_logprobs = {} is outside [-1, 20]", r.top_logprobs);
  }
  for (int32_t id : r.stop.stop_token_ids) {
    if (id < 0 || id >= n_vocab_) {
      return make_error(ErrorCode::kInvalidArgument, "stop token id {} is outside the vocabulary of {}", id, n_vocab_);
    }
  }
  KEEL_RETURN_IF_ERROR(r.sampling.validate());
  return sample::validate_for_vocab(r.sampling, static_cast<int32_t>(n_vocab_));
}

Status Scheduler::enqueue(GenerateRequest request, EventSink sink) {
  KEEL_RETURN_IF_ERROR(check_request(request));
  if (groups_.contains(request.id)) {
    return make_error(ErrorCode::kInvalidArgument, "request id {} is already in use", request.id);
  }
  if (n_waiting_requests() >= config_.max_queue) {
    return make_error(ErrorCode::kResourceExhausted, "the queue is full ({} requests wait)", config_.max_queue);
  }
  auto g = std::make_unique<Group>();
  g->finished.assign(static_cast<size_t>(request.n), 0);
  g->request = std::move(request);
  g->sink = std::move(sink);
  std::unique_ptr<Sequence> s = new_sequence(*g, 0);
  g->live.push_back(s->id);
  waiting_.push_back(s->id);
  seqs_.emplace(s->id.value, std::move(s));
  const RequestId id = g->request.id;
  groups_.emplace(id, std::move(g));
  return {};
}

std::unique_ptr<Sequence> Scheduler::new_sequence(const Group& g, int32_t index) {
  const GenerateRequest& r = g.request;
  auto s = std::make_unique<Sequence>(tok_, r.stop.stop_strings);
  s->id = SeqId{next_seq_++};
  s->request = r.id;
  s->index = index;
  s->priority = r.priority;
  s->tokens = r.prompt;
  s->n_prompt = static_cast<int32_t>(r.prompt.size());
  s->node = tree_.root();
  s->params = r.sampling;
  s->params.seed = sample_seed(r.sampling.seed, index);
  if (sample::has_processors(s->params)) s->history.add_prompt(r.prompt);
  if (r.constraint) s->constraint = r.constraint->make();
  return s;
}

// Under overlap the previous step's tokens are read (resolve_in_flight) after this step's forward is
// queued, so the device runs it while the host streams them; this step's samples then stay in flight.
// Without overlap nothing is in flight and the order is the plain one: run, sample, stream, finish.
bool Scheduler::step() {
  admit();
  std::vector<PlanEntry> entries = allocate();
  if (entries.empty()) {
    if (!in_flight_) return false;
    resolve_in_flight();
    finish();
    return true;
  }
  StepPlan plan = build_batch(std::move(entries));
  const Status ran = run(plan);
  resolve_in_flight();
  if (!ran.ok()) {
    fail_step(plan, ran);
    finish();
    return true;
  }
  commit(plan);
  std::vector<std::vector<SeqId>> row_seqs = fork_samples(plan);
  drop_stale_rows(row_seqs);
  if (overlap_ && may_overlap(row_seqs)) {
    launch_sampling(plan, row_seqs);
  } else {
    std::vector<SampledToken> sampled = device_sampling_ ? sample_on_device(row_seqs) : sample(plan, row_seqs);
    stream(sampled);
  }
  finish();
  return true;
}

int64_t Scheduler::flush_cache() {
  std::vector<cache::SlotId> freed;
  tree_.evict(tree_.n_evictable_tokens(), freed);
  pool_.free(freed);
  return static_cast<int64_t>(freed.size());
}

int32_t Scheduler::n_waiting_requests() const {
  int32_t n = 0;
  for (const auto& [id, g] : groups_) n += g->admitted ? 0 : 1;
  return n;
}

EngineLoad Scheduler::load() const {
  return EngineLoad{
      .n_queued = n_waiting_requests(),
      .n_running = static_cast<int32_t>(running_.size()),
      .kv_slots_used = pool_.n_used(),
      .kv_slots_total = pool_.n_slots(),
      .prefix_hit_ratio = stats_.n_prompt_tokens == 0 ? 0.0
                                                      : static_cast<double>(stats_.n_cached_prompt_tokens) /
                                                            static_cast<double>(stats_.n_prompt_tokens),
      .n_jump_forward_tokens = stats_.n_jump_forward_tokens,
  };
}

Sequence& Scheduler::seq(SeqId id) const {
  auto it = seqs_.find(id.value);
  KEEL_CHECK(it != seqs_.end(), "unknown sequence {}", id.value);
  return *it->second;
}

Group& Scheduler::group_of(const Sequence& s) const {
  auto it = groups_.find(s.request);
  KEEL_CHECK(it != groups_.end(), "sequence {} has no request {}", s.id.value, s.request);
  return *it->second;
}

void Scheduler::remove_running(SeqId id) {
  auto it = std::find(running_.begin(), running_.end(), id);
  KEEL_CHECK(it != running_.end(), "sequence {} is not running", id.value);
  running_.erase(it);
}

}  // namespace keel::sched
