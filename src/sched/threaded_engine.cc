#include "sched/threaded_engine.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

namespace keel::sched {

Result<std::unique_ptr<ThreadedEngine>> ThreadedEngine::create(const SchedulerParams& params) {
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> sched, Scheduler::create(params));
  return std::unique_ptr<ThreadedEngine>(new ThreadedEngine(std::move(sched)));
}

ThreadedEngine::ThreadedEngine(std::unique_ptr<Scheduler> sched)
    : sched_(std::move(sched)), max_queue_(sched_->config().max_queue), n_ctx_(sched_->context_tokens()),
      max_events_(static_cast<size_t>(sched_->config().event_queue_capacity)) {
  load_ = sched_->load();
  thread_ = std::thread([this] { loop(); });
}

ThreadedEngine::~ThreadedEngine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  settled_.notify_all();
  thread_.join();
  for (Command& c : inbox_) {  // never applied: their requests were accepted, so they get an ending
    if (auto* s = std::get_if<Submit>(&c)) {
      s->sink(StreamEvent{.id = s->request.id, .finish = FinishReason::kCancelled});
    }
  }
  sched_.reset();  // cancels what the scheduler still holds
}

Status ThreadedEngine::submit(GenerateRequest request, EventSink sink) {
  KEEL_RETURN_IF_ERROR(sched_->check_request(request));  // reads only immutable state
  {
    std::lock_guard lock(mu_);
    if (draining_ || stop_)
      return make_error(ErrorCode::kUnavailable, "the engine is draining and accepts no new requests");
    if (load_.n_queued + n_in_transit_ + n_inbox_submits_ >= max_queue_) {
      return make_error(ErrorCode::kResourceExhausted, "the queue is full ({} requests wait)", max_queue_);
    }
    inbox_.emplace_back(Submit{std::move(request), std::move(sink)});
    ++n_inbox_submits_;
  }
  wake_.notify_one();
  return {};
}

void ThreadedEngine::cancel(RequestId id) {
  {
    std::lock_guard lock(mu_);
    inbox_.emplace_back(Cancel{id});
  }
  wake_.notify_one();
}

void ThreadedEngine::call(const std::function<void(Scheduler&)>& fn) {
  std::unique_lock lock(mu_);
  const uint64_t ticket = ++n_calls_;
  inbox_.emplace_back(Call{.fn = &fn, .ticket = ticket});
  wake_.notify_one();
  settled_.wait(lock, [&] { return n_calls_done_ >= ticket || stop_; });
}

Status ThreadedEngine::flush_cache() {
  call([](Scheduler& s) { s.flush_cache(); });
  return {};
}

int64_t ThreadedEngine::drain_cache_events(std::vector<cache::CacheEvent>& out) {
  std::lock_guard lock(mu_);
  const auto n = static_cast<int64_t>(events_.size());
  out.insert(out.end(), std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return n;
}

KvPrefix ThreadedEngine::export_prefix(std::span<const int32_t> tokens, int64_t max_tokens) {
  KvPrefix out;
  call([&](Scheduler& s) { out = s.export_prefix(tokens, max_tokens); });
  return out;
}

Result<int64_t> ThreadedEngine::import_prefix(const KvPrefix& p) {
  Result<int64_t> out = int64_t{0};
  call([&](Scheduler& s) { out = s.import_prefix(p); });
  return out;
}

cache::FeedSnapshot ThreadedEngine::cache_snapshot() {
  cache::FeedSnapshot snap;
  call([&](Scheduler& s) { snap = s.cache_snapshot(); });
  return snap;
}

EngineLoad ThreadedEngine::load() const {
  std::lock_guard lock(mu_);
  EngineLoad l = load_;
  l.n_queued += n_in_transit_ + n_inbox_submits_;
  return l;
}

void ThreadedEngine::drain() {
  std::unique_lock lock(mu_);
  draining_ = true;
  settled_.wait(lock, [&] { return inbox_.empty() && n_in_transit_ == 0 && idle_; });
}

void ThreadedEngine::loop() {
  std::vector<Command> commands;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || !inbox_.empty() || progressed_; });
      if (stop_) return;
      commands.assign(std::make_move_iterator(inbox_.begin()), std::make_move_iterator(inbox_.end()));
      inbox_.clear();
      n_in_transit_ += n_inbox_submits_;
      n_inbox_submits_ = 0;
    }
    uint64_t last_call = 0;
    for (Command& c : commands) apply(c, last_call);
    commands.clear();
    // A caller waits for its call, not for the step after it: a KV pull's import (or the export on
    // its source) would otherwise also wait out a whole forward pass, which on a busy CPU replica
    // takes longer than the transfer itself.
    if (last_call > 0) publish(last_call, std::nullopt);
    publish(last_call, sched_->step());
  }
}

void ThreadedEngine::apply(Command& command, uint64_t& last_call) {
  if (auto* s = std::get_if<Submit>(&command)) {
    const RequestId id = s->request.id;
    EventSink sink = s->sink;
    if (Status st = sched_->enqueue(std::move(s->request), std::move(s->sink)); !st.ok()) {
      sink(StreamEvent{.id = id, .finish = FinishReason::kError, .error = st.to_string()});
    }
  } else if (auto* c = std::get_if<Cancel>(&command)) {
    sched_->cancel(c->id);
  } else if (auto* call_cmd = std::get_if<Call>(&command)) {
    (*call_cmd->fn)(*sched_);
    last_call = call_cmd->ticket;
  }
}

void ThreadedEngine::publish(uint64_t last_call, std::optional<bool> progressed) {
  events_fresh_.clear();
  sched_->drain_cache_events(events_fresh_);
  {
    std::lock_guard lock(mu_);
    events_.insert(events_.end(), std::make_move_iterator(events_fresh_.begin()),
                   std::make_move_iterator(events_fresh_.end()));
    if (events_.size() > max_events_) {
      events_.erase(events_.begin(), events_.end() - static_cast<std::ptrdiff_t>(max_events_));
    }
    n_calls_done_ = std::max(n_calls_done_, last_call);
    load_ = sched_->load();
    n_in_transit_ = 0;  // every command taken was applied: the load counts the submits among them
    idle_ = sched_->idle();
    if (progressed) progressed_ = *progressed;
  }
  settled_.notify_all();
}

}  // namespace keel::sched
