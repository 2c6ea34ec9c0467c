// Scheduler::finish: retires the samples that ended this step. Each one's computed tokens (prompt and
// output) go into the radix tree for later requests, its lock is dropped and its duplicate slots go
// back to the pool; a request leaves once all n samples ended.
#include <algorithm>

#include "sched/scheduler.h"

namespace keel::sched {

void Scheduler::finish() {
  std::vector<SeqId> done;
  for (SeqId id : running_) {
    if (seq(id).state == SeqState::kFinished) done.push_back(id);
  }
  // Overlap: a sequence preempted while its last token was in flight ends in the queue (it holds no KV).
  for (SeqId id : waiting_) {
    if (seq(id).state == SeqState::kFinished) done.push_back(id);
  }
  std::erase_if(waiting_, [&](SeqId id) { return seq(id).state == SeqState::kFinished; });
  for (SeqId id : done) {
    Sequence& s = seq(id);
    Group& g = group_of(s);
    if (std::find(running_.begin(), running_.end(), id) != running_.end()) {
      release_to_cache(s);
      remove_running(id);
    }
    std::erase(g.live, id);
    const bool last = g.live.empty() && g.n_finished == g.request.n;
    const RequestId request = g.request.id;
    seqs_.erase(id.value);
    if (last) groups_.erase(request);
  }
}

}  // namespace keel::sched
