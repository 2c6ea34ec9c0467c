// Scheduler::cancel / end_request: ends a request wherever it is. Running samples free their KV slots at once (what
// the radix tree already holds stays cached, unlocked); waiting ones hold none. Every sample that had
// not finished gets a final event: kCancelled, or kError when the scheduler fails the request.
#include <algorithm>

#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::end_request(RequestId id, FinishReason reason, std::string_view error) {
  auto it = groups_.find(id);
  if (it == groups_.end()) return;
  Group& g = *it->second;
  std::vector<int32_t> n_generated(g.finished.size(), 0);
  for (SeqId sid : g.live) {
    Sequence& s = seq(sid);
    // By membership, not state: under overlap a sample that just finished may still be in either list.
    if (std::find(running_.begin(), running_.end(), sid) != running_.end()) {
      drop_kv(s);
      remove_running(sid);
    } else {
      std::erase(waiting_, sid);
    }
    n_generated[static_cast<size_t>(s.index)] = s.n_generated;
    seqs_.erase(sid.value);
  }
  g.live.clear();
  for (size_t i = 0; i < g.finished.size(); ++i) {
    if (g.finished[i]) continue;
    emit_final(g, static_cast<int32_t>(i), n_generated[i], reason, error);
    ++stats_.n_finished;
  }
  groups_.erase(it);
}

void Scheduler::cancel_all() {
  std::vector<RequestId> ids;
  for (const auto& [id, g] : groups_) ids.push_back(id);
  for (RequestId id : ids) cancel(id);
}

void Scheduler::emit_final(Group& g, int32_t index, int32_t n_generated, FinishReason reason, std::string_view error) {
  g.finished[static_cast<size_t>(index)] = 1;
  ++g.n_finished;
  g.sink(StreamEvent{.id = g.request.id,
                     .index = index,
                     .finish = reason,
                     .error = std::string(error),
                     .prompt_tokens = static_cast<int32_t>(g.request.prompt.size()),
                     .cached_tokens = g.cached_tokens,
                     .completion_tokens = n_generated});
}

}  // namespace keel::sched
