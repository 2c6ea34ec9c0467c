#include "router/prefix_index.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "base/clock.h"
#include "router/prefix_key.h"

namespace keel::router {

PrefixIndex::PrefixIndex(int64_t max_approx_entries, int64_t recent_ms, int64_t pending_ms)
    : max_approx_entries_(std::max<int64_t>(max_approx_entries, 1)),
      recent_us_(std::max<int64_t>(recent_ms, 0) * 1000),
      pending_us_(std::max<int64_t>(pending_ms, 0) * 1000) {}

namespace {

// Leading entries two chained-hash key lists share. Equal at i means equal up to i, so the first
// difference is found by binary search: O(log n) per prompt compared.
size_t common_prefix(const std::vector<uint64_t>& a, std::span<const uint64_t> b) {
  size_t lo = 0, hi = std::min(a.size(), b.size());
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (a[mid] == b[mid]) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

PrefixIndex::PerReplica& PrefixIndex::entry(ReplicaId r) {
  return replicas_.try_emplace(r, max_approx_entries_).first->second;
}

void PrefixIndex::begin_exact(ReplicaId r) {
  std::unique_lock lock(mu_);
  auto& p = entry(r);
  p.exact.clear();
  p.exact_live = true;
}

// The last exact view stays usable (stale: it misses changes until the next snapshot) alongside the
// approximate set, which the router fills again while the feed is down: dropping it made every prefix
// the replica held look uncached until the resubscription's snapshot arrived.
void PrefixIndex::end_exact(ReplicaId r) {
  std::unique_lock lock(mu_);
  entry(r).exact_live = false;
}

// A stored span ending inside an announced prompt means that prompt's prefill was stored (the exact
// set now holds what it computed): its pending entry goes. A span ending elsewhere (another prompt)
// leaves it. The exact set keeps each key's depth (tokens in its prefix), so the span's last key is
// looked for at its own position in each announced prompt, not searched through all of it (64
// announced prompts of 2,048 keys: 15 us per stored span under the exclusive lock). A parent the set
// does not know (not expected from keel serve's feed, which stores parents first) leaves the span's
// depths unknown (0) and falls back to the search.
void PrefixIndex::add_exact(ReplicaId r, uint64_t parent_hash, std::span<const int32_t> tokens) {
  std::unique_lock lock(mu_);
  auto& p = entry(r);
  uint32_t depth = 0;  // 0 = unknown
  const bool known = parent_hash == 0 || (p.exact.find(parent_hash, depth) && depth > 0);
  for (int32_t t : tokens) {
    parent_hash = extend_token_hash(parent_hash, t);
    p.exact.set(parent_hash, known ? ++depth : 0);
  }
  if (tokens.empty() || p.pending.empty()) return;
  const uint64_t last = parent_hash;
  if (known) {
    const size_t at = depth - 1;
    std::erase_if(p.pending, [last, at](const auto& e) { return e.first->size() > at && (*e.first)[at] == last; });
    return;
  }
  std::erase_if(p.pending,
                [last](const auto& e) { return std::find(e.first->begin(), e.first->end(), last) != e.first->end(); });
}

void PrefixIndex::remove_exact(ReplicaId r, uint64_t parent_hash, std::span<const int32_t> tokens) {
  std::unique_lock lock(mu_);
  auto& p = entry(r);
  for (int32_t t : tokens) {
    parent_hash = extend_token_hash(parent_hash, t);
    p.exact.erase(parent_hash);
  }
}

void PrefixIndex::record_routed(ReplicaId r, std::span<const uint64_t> hashes) {
  if (hashes.empty()) return;
  std::unique_lock lock(mu_);
  entry(r).approx.touch(hashes);
}

void PrefixIndex::add_in_flight(ReplicaId r, KeysPtr keys) {
  if (!keys || keys->empty()) return;
  std::unique_lock lock(mu_);
  entry(r).in_flight.push_back(std::move(keys));
}

void PrefixIndex::remove_in_flight(ReplicaId r, const KeysPtr& keys, bool served) {
  if (!keys || keys->empty()) return;
  const int64_t now = now_us();
  std::unique_lock lock(mu_);
  auto it = replicas_.find(r);
  if (it == replicas_.end()) return;
  auto& v = it->second.in_flight;
  if (auto pos = std::find(v.begin(), v.end(), keys); pos != v.end()) {
    *pos = std::move(v.back());
    v.pop_back();
  }
  auto& recent = it->second.recent;
  std::erase_if(recent, [now](const auto& e) { return e.second <= now; });
  if (!served || recent_us_ == 0) return;
  // The same prompt again (equal last key: chained hashes) only moves its deadline.
  auto same = std::find_if(recent.begin(), recent.end(), [&](const auto& e) {
    return e.first->size() == keys->size() && e.first->back() == keys->back();
  });
  if (same != recent.end()) {
    same->second = now + recent_us_;
    return;
  }
  if (recent.size() >= kMaxRecent) recent.erase(recent.begin());  // the oldest
  recent.emplace_back(keys, now + recent_us_);
}

void PrefixIndex::add_pending(ReplicaId r, KeysPtr keys) {
  if (!keys || keys->empty() || pending_us_ == 0) return;
  const int64_t now = now_us();
  std::unique_lock lock(mu_);
  auto& pending = entry(r).pending;
  std::erase_if(pending, [now](const auto& e) { return e.second <= now; });
  if (pending.size() >= kMaxPending) pending.erase(pending.begin());  // the oldest
  pending.emplace_back(keys, now + pending_us_);
  while (!announced_.empty() &&
         (announced_.size() >= kMaxAnnounced || announced_.front().second < now - kAnnouncedKeepUs)) {
    announced_.pop_front();
  }
  announced_.emplace_back(std::move(keys), now);
}

int64_t PrefixIndex::announced_since(size_t key_index, uint64_t key, int64_t since_us) const {
  std::shared_lock lock(mu_);
  int64_t n = 0;
  for (auto it = announced_.rbegin(); it != announced_.rend() && it->second >= since_us; ++it) {
    n += it->first->size() > key_index && (*it->first)[key_index] == key ? 1 : 0;
  }
  return n;
}

int64_t PrefixIndex::n_pending(ReplicaId r) const {
  const int64_t now = now_us();
  std::shared_lock lock(mu_);
  auto it = replicas_.find(r);
  if (it == replicas_.end()) return 0;
  return std::count_if(it->second.pending.begin(), it->second.pending.end(),
                       [now](const auto& e) { return now < e.second; });
}

std::pair<size_t, size_t> PrefixIndex::listed_match(const PerReplica& p, std::span<const uint64_t> hashes) {
  size_t best_in_flight = 0, best_recent = 0;
  for (const KeysPtr& k : p.in_flight) best_in_flight = std::max(best_in_flight, common_prefix(*k, hashes));
  const int64_t now = p.recent.empty() && p.pending.empty() ? 0 : now_us();
  for (const auto& [k, until] : p.recent) {
    if (now < until) best_recent = std::max(best_recent, common_prefix(*k, hashes));
  }
  for (const auto& [k, until] : p.pending) {
    if (now < until) best_in_flight = std::max(best_in_flight, common_prefix(*k, hashes));
  }
  return {best_in_flight, best_recent};
}

int64_t PrefixIndex::match_locked(const PerReplica& p, std::span<const uint64_t> hashes, int64_t* stored) {
  if (hashes.empty()) return 0;
  const auto [best_in_flight, best_recent] = listed_match(p, hashes);
  // Prefix-closed sets (and a union of two): find the first index not held by binary search.
  size_t lo = 0, hi = hashes.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (holds(p, hashes[mid])) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (stored) *stored = static_cast<int64_t>(std::max(lo, best_recent));
  return static_cast<int64_t>(std::max({lo, best_recent, best_in_flight}));
}

int64_t PrefixIndex::match(ReplicaId r, std::span<const uint64_t> hashes, int64_t* stored) const {
  if (stored) *stored = 0;
  std::shared_lock lock(mu_);
  auto it = replicas_.find(r);
  return it == replicas_.end() ? 0 : match_locked(it->second, hashes, stored);
}

void PrefixIndex::view(std::span<const ReplicaId> ids, std::span<const uint64_t> hashes, std::span<View> out) const {
  std::shared_lock lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = replicas_.find(ids[i]);
    if (it == replicas_.end()) {
      out[i] = View{};
      continue;
    }
    const PerReplica& p = it->second;
    out[i] = View{.match = match_locked(p, hashes, nullptr),
                  .exact_live = p.exact_live,
                  .n_entries = static_cast<int64_t>(p.exact_live ? p.exact.size() : p.approx.size())};
  }
}

bool PrefixIndex::exact_live(ReplicaId r) const {
  std::shared_lock lock(mu_);
  auto it = replicas_.find(r);
  return it != replicas_.end() && it->second.exact_live;
}

int64_t PrefixIndex::n_exact(ReplicaId r) const {
  std::shared_lock lock(mu_);
  auto it = replicas_.find(r);
  return it == replicas_.end() ? 0 : static_cast<int64_t>(it->second.exact.size());
}

int64_t PrefixIndex::n_approx(ReplicaId r) const {
  std::shared_lock lock(mu_);
  auto it = replicas_.find(r);
  return it == replicas_.end() ? 0 : static_cast<int64_t>(it->second.approx.size());
}

void PrefixIndex::forget(ReplicaId r) {
  std::unique_lock lock(mu_);
  replicas_.erase(r);
}

}  // namespace keel::router
