// The token-granular KV slot pool: a fixed number of slots (one per cached token, indices into the
// model's KvStorage rows) handed out and taken back in O(1) per slot. It never hands out more than it
// holds. Owned by the scheduler thread (single-threaded by design; no locking).
// Callers: sched/allocate (alloc, and free of evicted or duplicate slots), spec/ rollback (free).
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace keel::cache {

// Index of one token's row in the KV storage (model::KvStorage, model::Batch::slots).
struct SlotId {
  int32_t value = -1;
  friend auto operator<=>(const SlotId&, const SlotId&) = default;
};

// Appends the plain indices model::Batch wants (slots, ctx_slots).
void append_slot_indices(std::span<const SlotId> slots, std::vector<int32_t>& out);

class KvSlotPool {
 public:
  // n_slots in [1, INT32_MAX] (CacheConfig::resolve_kv_slots computes it); KEEL_CHECKs the range.
  explicit KvSlotPool(int64_t n_slots);

  KvSlotPool(const KvSlotPool&) = delete;
  KvSlotPool& operator=(const KvSlotPool&) = delete;

  // Appends n free slots to out, or returns kResourceExhausted (and appends nothing) when fewer than
  // n are free. n < 0 is kInvalidArgument.
  Status alloc(int64_t n, std::vector<SlotId>& out);
  Result<std::vector<SlotId>> alloc(int64_t n);

  // Returns slots to the pool. Freeing a slot that is free or out of range is a bug (KEEL_CHECK).
  void free(std::span<const SlotId> slots);

  int64_t n_slots() const { return static_cast<int64_t>(in_use_.size()); }
  int64_t n_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t n_used() const { return n_slots() - n_free(); }
  bool is_used(SlotId slot) const;

 private:
  std::vector<SlotId> free_;     // stack of free slots; the top is handed out first
  std::vector<uint8_t> in_use_;  // [n_slots] 1 while handed out
};

}  // namespace keel::cache
