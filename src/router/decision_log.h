// DecisionLog (`keel router --decision-log PATH`): one JSON line per routing decision, for tracing how
// the policy decided (the benchmark's burst traces, docs/router.md): the monotonic time (us, the same
// clock in every process on the host, so several instances' logs interleave), the prompt group, whether
// the peers were synced, the burst guard's inputs, every candidate's figures as the policy saw them,
// and the pick. Off (and free) without the flag; written under the decision mutex, so a line's figures
// are the ones that decision used. A file that cannot be opened is a start-up error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "router/policy.h"
#include "router/replica.h"

namespace keel::router {

struct DecisionRecord {
  int64_t t_us = 0;
  uint64_t group = 0;
  bool synced = false;
  int64_t group_recent = 0;
  int64_t group_in_flight = 0;
  int64_t group_gap_ms = 0;
  Pick pick;
};

class DecisionLog {
 public:
  DecisionLog() = default;
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;
  ~DecisionLog();

  // Opens (appends to) `path`; an empty path leaves the log off.
  Status open(const std::string& path);
  bool on() const { return file_ != nullptr; }
  // One line: `views[i]` is the policy's view of `*replicas[i]` (own and peers' in-flight counts added
  // from the replica). Call only when on().
  void write(const DecisionRecord& rec, std::span<const CandidateView> views,
             std::span<const ReplicaPtr* const> replicas);

 private:
  std::FILE* file_ = nullptr;
  std::string line_;  // reused: the caller holds the decision mutex
};

}  // namespace keel::router
