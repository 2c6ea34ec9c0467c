// PrefixIndex: for each replica, the prefixes it holds, as sets of chained prefix hashes
// (router/prefix_key.h), one entry per token (or character block). Two sources per replica:
//  - exact: replayed from the replica's cache-event stream (stored/removed spans), complete while the
//    stream is live; a replica whose stream is live is matched against this set only, one whose stream
//    was lost against its last exact set plus the approximate one until a fresh snapshot arrives;
//  - approximate: what this router sent there, bounded to max_approx_entries per replica with
//    least-recently-routed eviction, O(1) per key (router/approx_lru.h: a prefix is touched whenever a
//    longer one is, after it, so eviction keeps the set prefix-closed and match() can binary-search);
//  - in flight and just finished: prompts the router sent there and has not seen finish, plus those
//    that finished successfully within the last recent_ms, at most kMaxRecent of them (the replica
//    publishes a stored prefix up to one feed interval after it answers, and a follower of the same
//    prefix can arrive in between);
//  - pending: prompts the replica itself announced on its feed (`event: pending`) when it admitted
//    them, whichever router sent them: a prefill in flight there, so every router instance sees a
//    group's first placement at once. Dropped when a stored span ending inside the prompt arrives
//    (its prefill was stored), after pending_ms (aborted, or a prefill that stored nothing new), or
//    past kMaxPending per replica (the oldest).
// Thread-safe (one shared mutex): the proxy matches and records on io threads, feeds write from theirs.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "router/approx_lru.h"
#include "router/flat_key_map.h"

namespace keel::router {

using ReplicaId = uint64_t;

class PrefixIndex {
 public:
  // recent_ms: how long a finished prompt still counts as held (covers the exact feed's lag).
  // keel serve answers at the end of an engine step but its feed drains the step's events only
  // between steps (sched/threaded_engine.cc), so the lag can be a whole step: seconds for a CPU
  // replica on a loaded machine.
  static constexpr int64_t kDefaultRecentMs = 5000;
  static constexpr size_t kMaxRecent = 32;  // per replica; the newest are kept
  // pending_ms: how long a prompt the replica announced counts as held without its stored event
  // (covers its wait in the replica's queue plus its prefill: seconds on a loaded CPU replica).
  static constexpr int64_t kDefaultPendingMs = 10'000;
  static constexpr size_t kMaxPending = 64;  // per replica; the newest are kept
  explicit PrefixIndex(int64_t max_approx_entries, int64_t recent_ms = kDefaultRecentMs,
                       int64_t pending_ms = kDefaultPendingMs);

  // Exact source. begin_exact clears the replica's exact set and marks it live (a snapshot follows);
  // end_exact marks it stale (stream lost): until the next snapshot, matching uses the last exact set
  // together with the approximate one (what the router routes there meanwhile).
  void begin_exact(ReplicaId r);
  void end_exact(ReplicaId r);
  // A stored or removed span: tokens following the prefix named parent_hash.
  void add_exact(ReplicaId r, uint64_t parent_hash, std::span<const int32_t> tokens);
  void remove_exact(ReplicaId r, uint64_t parent_hash, std::span<const int32_t> tokens);

  // Approximate source: the router sent a prompt with these prefix hashes to r.
  void record_routed(ReplicaId r, std::span<const uint64_t> hashes);

  // In flight: a prompt the router has sent to r and not yet seen finish. Its prefix is being
  // computed there, so it counts as held even before the exact feed reports it (the feed only
  // knows a prefix once its prefill is done; without this, a burst of one new prefix scatters).
  // A prompt that finished successfully (`served`) still counts for recent_ms (the newest kMaxRecent
  // per replica): the replica answers
  // before its feed publishes the stored prefix, and a closed-loop client's next request of the same
  // prefix arrives within that gap.
  using KeysPtr = std::shared_ptr<const std::vector<uint64_t>>;
  void add_in_flight(ReplicaId r, KeysPtr keys);
  void remove_in_flight(ReplicaId r, const KeysPtr& keys, bool served = false);

  // Pending: replica r announced it admitted a prompt with these prefix keys (from any router).
  void add_pending(ReplicaId r, KeysPtr keys);
  int64_t n_pending(ReplicaId r) const;  // not yet stored nor expired
  // Prompts any replica announced since `since_us` (now_us clock) whose key at `key_index` is `key`
  // (a prompt group: policy.h kGroupTokens), from every router instance: the group's arrivals as the
  // fleet saw them (the newest kMaxAnnounced within kAnnouncedKeepUs). The burst guard's count.
  int64_t announced_since(size_t key_index, uint64_t key, int64_t since_us) const;
  static constexpr size_t kMaxAnnounced = 512;
  static constexpr int64_t kAnnouncedKeepUs = 2'000'000;

  // How many leading entries of `hashes` replica r holds: the longest of its set (exact if live,
  // else approximate), its in-flight prompts, its recently served ones and its pending ones.
  // `stored`, if given, gets how many of them r has stored: its set and its recently served prompts,
  // not the in-flight and pending ones (a prefill not done yet).
  int64_t match(ReplicaId r, std::span<const uint64_t> hashes, int64_t* stored = nullptr) const;
  // What a routing decision needs of each candidate, from one consistent state (one lock, not three
  // per candidate): match(id, hashes), whether its exact feed is live, and the entries of the set it is
  // matched against (exact if live, else approximate: a proxy for the cache it fills).
  struct View {
    int64_t match = 0;
    bool exact_live = false;
    int64_t n_entries = 0;
  };
  void view(std::span<const ReplicaId> ids, std::span<const uint64_t> hashes, std::span<View> out) const;
  bool exact_live(ReplicaId r) const;
  int64_t n_exact(ReplicaId r) const;
  int64_t n_approx(ReplicaId r) const;
  void forget(ReplicaId r);

 private:
  struct PerReplica {
    bool exact_live = false;
    explicit PerReplica(int64_t max_approx) : approx(max_approx) {}
    FlatKeyMap<uint32_t> exact;  // key -> its depth (tokens in the prefix it names; 0 = unknown)
    ApproxLru approx;
    std::vector<KeysPtr> in_flight;
    std::vector<std::pair<KeysPtr, int64_t>> recent;   // served prompt, until this time (us)
    std::vector<std::pair<KeysPtr, int64_t>> pending;  // announced prompt, until this time (us)
  };
  PerReplica& entry(ReplicaId r);  // under the unique lock
  // Under a lock: whether p's set (exact if live, else exact and approximate) holds the key.
  static bool holds(const PerReplica& p, uint64_t key) {
    return p.exact.contains(key) || (!p.exact_live && p.approx.contains(key));
  }
  // Under a lock: the longest common prefix of `hashes` with p's in-flight and pending prompts
  // (.first) and with its recently served ones (.second).
  static std::pair<size_t, size_t> listed_match(const PerReplica& p, std::span<const uint64_t> hashes);
  // Under a lock: match() for p.
  static int64_t match_locked(const PerReplica& p, std::span<const uint64_t> hashes, int64_t* stored);

  int64_t max_approx_entries_;
  int64_t recent_us_;
  int64_t pending_us_;
  mutable std::shared_mutex mu_;
  std::unordered_map<ReplicaId, PerReplica> replicas_;
  std::deque<std::pair<KeysPtr, int64_t>> announced_;  // every replica's, with the time it came (us)
};

}  // namespace keel::router
