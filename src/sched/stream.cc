// Scheduler::stream: appends each sampled token to its sequence, turns it into text (incremental
// detokenizer, then the stop-string matcher, which holds back text that may start a stop string),
// decides whether the sample ends (stop string, stop id, end of generation unless ignore_eos,
// max_tokens, context full) and sends the StreamEvent to the request's sink.
#include <algorithm>

#include "sample/logits_processors.h"
#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::stream(std::vector<SampledToken>& sampled) {
  for (SampledToken& t : sampled) {
    Sequence& s = seq(t.seq);
    Group& g = group_of(s);
    StreamEvent ev{.id = g.request.id, .index = s.index, .tokens = {t.token}};
    if (t.has_logprobs) {
      ev.logprobs.push_back(t.logprob);
      ev.top_logprobs.push_back(std::move(t.top));
    }
    s.tokens.push_back(t.token);
    ++s.n_generated;
    if (sample::has_processors(s.params)) s.history.add_output(t.token);
    ev.finish = append_text(s, g.request.stop, t.token, ev.text);
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

FinishReason Scheduler::append_text(Sequence& s, const StopConditions& stop, int32_t token, std::string& text) {
  const bool stop_id =
      (!stop.ignore_eos && tok_.is_eog(token)) ||
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
