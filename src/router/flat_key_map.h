// FlatKeyMap: an open-addressing hash map from 64-bit prefix keys (router/prefix_key.h: xxh3 outputs)
// to small values, for PrefixIndex's per-replica sets. A lookup is one multiply, one shift and a
// linear probe through a dense key array: usually one cache miss, where std::unordered_set pays a
// modulo by a prime, a bucket load and a node load. match() makes about log2(prompt keys) lookups per
// replica on every routing decision (64 replicas x 2,048 tokens: ~700), so this is the decision's
// main cost. Linear probing at load <= 1/2; erase shifts the following entries back (no tombstones).
// Key 0 marks an empty slot, so the key 0 itself is kept beside the table. Not thread-safe.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace keel::router {

template <typename V>
class FlatKeyMap {
 public:
  size_t size() const { return size_ + (has_zero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }

  bool contains(uint64_t key) const {
    if (key == 0) return has_zero_;
    if (keys_.empty()) return false;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return true;
      if (keys_[i] == 0) return false;
    }
  }

  // The value of key into `value`; false (value untouched) when absent.
  bool find(uint64_t key, V& value) const {
    if (key == 0) {
      if (has_zero_) value = zero_value_;
      return has_zero_;
    }
    if (keys_.empty()) return false;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        value = values_[i];
        return true;
      }
      if (keys_[i] == 0) return false;
    }
  }

  // Inserts key with value, or sets the value of the key already there.
  void set(uint64_t key, V value) {
    if (key == 0) {
      has_zero_ = true;
      zero_value_ = value;
      return;
    }
    if ((size_ + 1) * 2 > keys_.size()) grow();
    size_t i = slot(key);
    while (keys_[i] != 0 && keys_[i] != key) i = (i + 1) & mask_;
    if (keys_[i] == 0) {
      keys_[i] = key;
      ++size_;
    }
    values_[i] = value;
  }

  void erase(uint64_t key) {
    if (key == 0) {
      has_zero_ = false;
      return;
    }
    if (keys_.empty()) return;
    size_t i = slot(key);
    while (keys_[i] != key) {
      if (keys_[i] == 0) return;
      i = (i + 1) & mask_;
    }
    // Backward shift: move each following entry of the run into the hole when its home slot does not
    // lie (cyclically) after the hole, so every key stays reachable from its home slot.
    size_t hole = i;
    for (size_t j = (hole + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
      const size_t home = slot(keys_[j]);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        keys_[hole] = keys_[j];
        values_[hole] = values_[j];
        hole = j;
      }
    }
    keys_[hole] = 0;
    --size_;
  }

  // Keeps the capacity: a set cleared to be filled again (an exact feed's resubscription replays the
  // replica's whole cache) then refills without growing through every size on the way (each growth
  // rehashes the table: ~20-40 ms at 2^20 entries).
  void clear() {
    std::fill(keys_.begin(), keys_.end(), 0);
    size_ = 0;
    has_zero_ = false;
  }

 private:
  // Fibonacci hashing: the top bits of key x 2^64/phi. The keys are hashes already; the multiply
  // guards against keys that differ only in their high bits.
  size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_); }

  void grow() {
    const size_t capacity = keys_.empty() ? 16 : keys_.size() * 2;
    std::vector<uint64_t> old_keys(capacity, 0);
    std::vector<V> old_values(capacity);
    old_keys.swap(keys_);
    old_values.swap(values_);
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] == 0) continue;
      size_t j = slot(old_keys[i]);
      while (keys_[j] != 0) j = (j + 1) & mask_;
      keys_[j] = old_keys[i];
      values_[j] = std::move(old_values[i]);
      ++size_;
    }
  }

  std::vector<uint64_t> keys_;  // 0 = empty; the capacity is a power of two
  std::vector<V> values_;       // parallel to keys_
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;  // non-zero keys in keys_
  bool has_zero_ = false;
  V zero_value_{};
};

}  // namespace keel::router
