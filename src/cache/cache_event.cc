#include "cache/cache_event.h"

#include "base/check.h"

namespace keel::cache {

std::string_view cache_event_kind_name(CacheEventKind kind) {
  switch (kind) {
    case CacheEventKind::kStored: return "stored";
    case CacheEventKind::kRemoved: return "removed";
  }
  return "unknown";
}

EventFeed::EventFeed(int64_t capacity) : capacity_(capacity) {
  KEEL_CHECK(capacity >= 0, "event feed capacity {}", capacity);
}

void EventFeed::push(CacheEventKind kind, uint64_t parent_hash, uint64_t hash, int64_t prefix_len,
                     std::span<const int32_t> tokens) {
  ++last_seq_;
  if (!enabled()) return;
  if (n_queued() == capacity_) {
    queue_.pop_front();
    ++n_dropped_;
  }
  queue_.push_back(CacheEvent{.seq = last_seq_,
                              .kind = kind,
                              .parent_hash = parent_hash,
                              .hash = hash,
                              .prefix_len = prefix_len,
                              .tokens = {tokens.begin(), tokens.end()}});
}

int64_t EventFeed::drain(std::vector<CacheEvent>& out) {
  auto n = n_queued();
  out.reserve(out.size() + queue_.size());
  for (CacheEvent& e : queue_) out.push_back(std::move(e));
  queue_.clear();
  return n;
}

}  // namespace keel::cache
