// Scheduler::stream: appends each sampled token to its sequence (and its structured-output
// constraint), turns it into text (incremental detokenizer, then the stop-string matcher, which holds
// back text that may start a stop string), decides whether the sample ends (stop string, stop id, end
// of generation unless ignore_eos, the grammar's end, max_tokens, context full), appends the tokens a
// grammar then forces when jump-forward is on, and sends the StreamEvent to the request's sink.
#include <algorithm>
#include <optional>

#include "sample/logits_processors.h"
#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::stream(std::vector<SampledToken>& sampled) {
  for (SampledToken& t : sampled) {
    Sequence& s = seq(t.seq);
    Group& g = group_of(s);
    StreamEvent ev{.id = g.request.id, .index = s.index};
    if (!t.error.empty()) {
      ev.finish = FinishReason::kError;
      ev.error = std::move(t.error);
    } else {
      ev.tokens.push_back(t.token);
      if (t.has_logprobs) {
        ev.logprobs.push_back(t.logprob);
        ev.top_logprobs.push_back(std::move(t.top));
      }
      ev.finish = take_token(s, g.request.stop, t.token, ev.text, ev.error);
      // Jump-forward: tokens the grammar forces need no sampling (none when logprobs are asked for,
      // which would need the logits of a row never computed).
      while (ev.finish == FinishReason::kNone && config_.jump_forward && s.constraint && !t.has_logprobs) {
        std::optional<int32_t> forced = s.constraint->forced_token();
        if (!forced) break;
        ev.tokens.push_back(*forced);
        ++stats_.n_jump_forward_tokens;
        std::string more;
        ev.finish = take_token(s, g.request.stop, *forced, more, ev.error);
        ev.text += more;
      }
    }
    if (ev.finish != FinishReason::kNone) {
      ev.prompt_tokens = s.n_prompt;
      ev.cached_tokens = g.cached_tokens;
      ev.completion_tokens = s.n_generated;
      s.state = SeqState::kFinished;
      g.finished[static_cast<size_t>(s.index)] = 1;
      ++g.n_finished;
      ++stats_.n_finished;
    }
    g.sink(std::move(ev));
  }
}

FinishReason Scheduler::take_token(Sequence& s, const StopConditions& stop, int32_t token, std::string& text,
                                   std::string& error) {
  s.tokens.push_back(token);
  ++s.n_generated;
  if (sample::has_processors(s.params)) s.history.add_output(token);
  if (s.constraint && !s.constraint->accept_token(token)) {  // the mask allowed it: a grammar bug
    error = fmt::format("structured output: the grammar refused token {} that its mask allowed", token);
    return FinishReason::kError;
  }
  return append_text(s, stop, token, text);
}

FinishReason Scheduler::append_text(Sequence& s, const StopConditions& stop, int32_t token, std::string& text) {
  // A grammar that took an end-of-sequence token is complete: it ends the sample even with ignore_eos.
  const bool stop_id =
      (!stop.ignore_eos && tok_.is_eog(token)) || (s.constraint && s.constraint->is_terminated()) ||
      std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), token) != stop.stop_token_ids.end();
  if (!stop_id) {  // a stop id's own text is never emitted
    sample::StopMatcher::Step step = s.stop.push(s.detok.push(token));
    text = std::move(step.text);
    if (step.stopped) return FinishReason::kStop;
    if (s.n_generated < stop.max_tokens && static_cast<int64_t>(s.tokens.size()) < n_ctx_) return FinishReason::kNone;
  }
  // End of the stream: release held-back bytes and text (which may still complete a stop string).
  sample::StopMatcher::Step tail = s.stop.push(s.detok.flush());
  text += tail.text;
  if (tail.stopped) return FinishReason::kStop;
  text += s.stop.flush();
  return stop_id ? FinishReason::kStop : FinishReason::kLength;
}

}  // namespace keel::sched
