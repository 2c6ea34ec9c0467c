// Test doubles for the Api tests: ReplayEngine implements sched::Engine by replaying a fixed token
// sequence (one event per token per sample, from its own "scheduler" thread), honouring max_tokens,
// logprobs, cancel and drain; ByteTokenizer is a tokenizer whose token i (< 256) is byte i, plus a
// few special tokens. Neither is a model: they make the wire layer's output exactly predictable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sched/engine.h"
#include "tokenizer/tokenizer.h"

namespace keel::server::test {

class ByteTokenizer final : public tokenizer::Tokenizer {
 public:
  static constexpr int32_t kBos = 256, kEos = 257;
  ByteTokenizer() {
    for (int i = 0; i < 256; ++i) {
      bytes_.push_back(std::string(1, static_cast<char>(i)));
      spec_.tokens.push_back(bytes_.back());
      spec_.types.push_back(tokenizer::TokenType::kNormal);
    }
    for (const char* s : {"<s>", "</s>"}) {
      bytes_.push_back(s);
      spec_.tokens.push_back(s);
      spec_.types.push_back(tokenizer::TokenType::kControl);
    }
    spec_.bos_id = kBos;
    spec_.eos_id = kEos;
    spec_.eog_ids = {kEos};
    spec_.add_bos = true;
  }
  std::vector<int32_t> encode(std::string_view text, const tokenizer::EncodeOptions& opts) const override {
    std::vector<int32_t> out;
    if (opts.add_special) out.push_back(kBos);
    for (unsigned char c : text) out.push_back(c);
    return out;
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id >= 256 && skip_special) continue;
      out += bytes_[static_cast<size_t>(id)];
    }
    return out;
  }
  const std::string& token_bytes(int32_t id) const override { return bytes_[static_cast<size_t>(id)]; }
  const tokenizer::VocabSpec& spec() const override { return spec_; }

 private:
  tokenizer::VocabSpec spec_;
  std::vector<std::string> bytes_;
};

class ReplayEngine final : public sched::Engine {
 public:
  // `text` is replayed one byte-token per event; `tick` is the time between events.
  explicit ReplayEngine(std::string text, std::chrono::milliseconds tick = std::chrono::milliseconds(1))
      : text_(std::move(text)), tick_(tick), thread_([this] { run(); }) {}
  ~ReplayEngine() override {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Status submit(sched::GenerateRequest request, sched::EventSink sink) override {
    std::lock_guard lock(mu_);
    if (!reject_.ok()) return reject_;
    if (draining_) return Status(ErrorCode::kUnavailable, "draining");
    submitted_.push_back(request);
    active_.push_back(Active{std::move(request), std::move(sink), std::vector<int32_t>(1, 0)});
    active_.back().pos.assign(static_cast<size_t>(active_.back().req.n), 0);
    cv_.notify_all();
    return {};
  }
  void cancel(sched::RequestId id) override {
    std::lock_guard lock(mu_);
    cancelled_.insert(id);
    cv_.notify_all();
  }
  sched::EngineLoad load() const override {
    std::lock_guard lock(mu_);
    return sched::EngineLoad{.n_queued = 0,
                             .n_running = static_cast<int32_t>(active_.size()),
                             .kv_slots_used = 7,
                             .kv_slots_total = 100,
                             .prefix_hit_ratio = 0.25};
  }
  void drain() override {
    std::unique_lock lock(mu_);
    draining_ = true;
    cv_.wait(lock, [&] { return active_.empty(); });
  }

  // Test controls.
  void set_reject(Status s) {
    std::lock_guard lock(mu_);
    reject_ = std::move(s);
  }
  void set_paused(bool paused) {
    {
      std::lock_guard lock(mu_);
      paused_ = paused;
    }
    cv_.notify_all();
  }
  void set_cached_tokens(int32_t n) {
    std::lock_guard lock(mu_);
    cached_ = n;
  }
  void set_fail_after(int32_t n_tokens) {
    std::lock_guard lock(mu_);
    fail_after_ = n_tokens;
  }
  std::vector<sched::GenerateRequest> submitted() const {
    std::lock_guard lock(mu_);
    return submitted_;
  }
  std::set<sched::RequestId> cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }
  size_t n_active() const {
    std::lock_guard lock(mu_);
    return active_.size();
  }

  // The logprob the double reports for token t, and its alternatives' tokens (t+1, t+2, ...).
  static float logprob_of(int32_t t) { return -0.25f * static_cast<float>(t % 7); }

 private:
  struct Active {
    sched::GenerateRequest req;
    sched::EventSink sink;
    std::vector<int32_t> pos;  // per sample: tokens sent
  };

  sched::StreamEvent step(Active& a, int32_t index) {
    auto& pos = a.pos[static_cast<size_t>(index)];
    sched::StreamEvent ev{.id = a.req.id, .index = index};
    int32_t limit = std::min<int32_t>(a.req.stop.max_tokens, static_cast<int32_t>(text_.size()));
    if (fail_after_ >= 0 && pos >= fail_after_) {
      ev.finish = sched::FinishReason::kError;
      ev.error = "replay engine failure";
      return ev;
    }
    if (pos < limit) {
      auto t = static_cast<int32_t>(static_cast<unsigned char>(text_[static_cast<size_t>(pos)]));
      ev.tokens = {t};
      ev.text = text_.substr(static_cast<size_t>(pos), 1);
      if (a.req.top_logprobs >= 0) {
        ev.logprobs = {{t, logprob_of(t)}};
        std::vector<sched::TokenLogprob> alts;
        for (int32_t k = 0; k < a.req.top_logprobs; ++k) alts.push_back({(t + 1 + k) % 256, logprob_of(t) - 1.0f - k});
        ev.top_logprobs = {alts};
      }
      ++pos;
    }
    if (pos >= limit) {
      ev.finish = pos >= static_cast<int32_t>(text_.size()) ? sched::FinishReason::kStop : sched::FinishReason::kLength;
      ev.prompt_tokens = static_cast<int32_t>(a.req.prompt.size());
      ev.cached_tokens = cached_;
      ev.completion_tokens = pos;
    }
    return ev;
  }

  void run() {
    std::unique_lock lock(mu_);
    while (!quit_) {
      cv_.wait_for(lock, tick_, [&] { return quit_ || (!paused_ && !active_.empty()) || !cancelled_.empty(); });
      if (quit_) break;
      for (auto it = active_.begin(); it != active_.end();) {
        if (cancelled_.contains(it->req.id)) {
          for (int32_t i = 0; i < it->req.n; ++i)
            it->sink(sched::StreamEvent{.id = it->req.id, .index = i, .finish = sched::FinishReason::kCancelled});
          it = active_.erase(it);
          continue;
        }
        if (paused_) {
          ++it;
          continue;
        }
        bool all_done = true;
        for (int32_t i = 0; i < it->req.n; ++i) {
          if (it->pos[static_cast<size_t>(i)] < 0) continue;
          auto ev = step(*it, i);
          bool finished = ev.finish != sched::FinishReason::kNone;
          it->sink(std::move(ev));
          if (finished)
            it->pos[static_cast<size_t>(i)] = -1;
          else
            all_done = false;
        }
        it = all_done ? active_.erase(it) : std::next(it);
      }
      cv_.notify_all();
      lock.unlock();
      std::this_thread::sleep_for(tick_);
      lock.lock();
    }
  }

  std::string text_;
  std::chrono::milliseconds tick_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Active> active_;
  std::vector<sched::GenerateRequest> submitted_;
  std::set<sched::RequestId> cancelled_;
  Status reject_;
  bool paused_ = false;
  bool draining_ = false;
  bool quit_ = false;
  int32_t cached_ = 0;
  int32_t fail_after_ = -1;
  std::thread thread_;
};

}  // namespace keel::server::test
