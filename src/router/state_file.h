// The router's state file (`keel router --state-file PATH`): the replica set as the admin API left it
// (URLs, labels, drain state), rewritten atomically after every admin change and read back at start-up,
// so a restarted router comes back with the replicas it had, not only its `--workers` (docs/router.md).
// Format: {"version": 1, "replicas": [{"url": "...", "labels": {"region": ..., "cloud": ..., "pool": ...},
// "state": "active" | "draining"}, ...]}. Pure file I/O; callers serialise writes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "router/replica.h"

namespace keel::router {

struct SavedReplica {
  std::string url;
  ReplicaLabels labels;
  bool draining = false;
};

// The replicas of a state file's text; kInvalidArgument naming the problem when it is malformed.
Result<std::vector<SavedReplica>> parse_state(std::string_view text);
std::string render_state(const ReplicaList& replicas);

// nullopt when the file does not exist (a first start); an error when it cannot be read or parsed.
Result<std::optional<std::vector<SavedReplica>>> load_state_file(const std::string& path);
// Writes PATH.tmp, flushes it to disk and renames it over PATH: a reader (or a restart after a crash
// at any point) sees the old file or the new one, never a partial one.
Status save_state_file(const std::string& path, const ReplicaList& replicas);

}  // namespace keel::router
