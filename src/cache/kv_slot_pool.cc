#include "cache/kv_slot_pool.h"

#include <limits>

#include "base/check.h"

namespace keel::cache {

void append_slot_indices(std::span<const SlotId> slots, std::vector<int32_t>& out) {
  out.reserve(out.size() + slots.size());
  for (SlotId s : slots) out.push_back(s.value);
}

KvSlotPool::KvSlotPool(int64_t n_slots) {
  KEEL_CHECK(n_slots > 0 && n_slots <= std::numeric_limits<int32_t>::max(), "KV pool size {} out of range", n_slots);
  in_use_.assign(static_cast<size_t>(n_slots), 0);
  free_.reserve(static_cast<size_t>(n_slots));
  // Pushed in reverse so the first allocation gets slots 0, 1, 2, ...: contiguous rows while the pool
  // is fresh, and predictable indices in tests.
  for (int64_t i = n_slots - 1; i >= 0; --i) free_.push_back(SlotId{static_cast<int32_t>(i)});
}

Status KvSlotPool::alloc(int64_t n, std::vector<SlotId>& out) {
  if (n < 0) return make_error(ErrorCode::kInvalidArgument, "KV slot request of {} slots", n);
  if (n > n_free()) {
    return make_error(ErrorCode::kResourceExhausted, "KV pool has {} free slots of {}, {} requested", n_free(),
                      n_slots(), n);
  }
  out.reserve(out.size() + static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    SlotId s = free_.back();
    free_.pop_back();
    in_use_[static_cast<size_t>(s.value)] = 1;
    out.push_back(s);
  }
  return Status::ok_status();
}

Result<std::vector<SlotId>> KvSlotPool::alloc(int64_t n) {
  std::vector<SlotId> out;
  KEEL_RETURN_IF_ERROR(alloc(n, out));
  return out;
}

void KvSlotPool::free(std::span<const SlotId> slots) {
  for (SlotId s : slots) {
    KEEL_CHECK(s.value >= 0 && s.value < n_slots(), "freeing KV slot {} outside a pool of {}", s.value, n_slots());
    uint8_t& used = in_use_[static_cast<size_t>(s.value)];
    KEEL_CHECK(used == 1, "KV slot {} freed twice", s.value);
    used = 0;
    free_.push_back(s);
  }
}

bool KvSlotPool::is_used(SlotId slot) const {
  return slot.value >= 0 && slot.value < n_slots() && in_use_[static_cast<size_t>(slot.value)] == 1;
}

}  // namespace keel::cache
