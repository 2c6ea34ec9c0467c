// FlatKeyMap: an open-addressing hash map from 64-bit prefix keys (router/prefix_key.h: xxh3 outputs)
// to small values, for PrefixIndex's per-replica sets. A lookup is one multiply, one shift and a
// linear probe through a dense key array: usually one cache miss, where std::unordered_set pays a
// modulo by a prime, a bucket load and a node load. match() makes about log2(prompt keys) lookups per
// replica on every routing decision (64 replicas x 2,048 tokens: ~700), so this is the decision's
// main cost. Linear probing at load <= 1/2; erase shifts the following entries back (no tombstones).
// Key 0 marks an empty slot, so the key 0 itself is kept beside the table. Not thread-safe.
//
// Growth is incremental. The map lives under PrefixIndex's exclusive lock, which every routing decision
// waits for, and rehashing a table of 2^20 keys at once took 29-38 ms (bench_router_index). So a
// growth only allocates the doubled table (a large one is mapped lazily: no zeroing pass); the old
// table then stays readable while each later set() or erase() moves kMoveSlots of its slots across.
// Until it is drained a lookup that misses the new table probes the old one. Each key is in exactly
// one table: the old table is never written during the move except for its dead flags (keys erased
// or overwritten there, which moved to the new table or left), so its probe runs stay intact.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace keel::router {

template <typename V>
class FlatKeyMap {
  static_assert(std::is_trivially_copyable_v<V> && std::is_trivially_default_constructible_v<V> &&
                    alignof(V) <= alignof(uint64_t),
                "FlatKeyMap stores values in zeroed raw memory after the keys");

 public:
  // Old-table slots moved per set() or erase() while a growth drains. A growth starts at load 1/2 of
  // the old capacity C, so the new table (2C) reaches its own bound only after C/2 more inserts;
  // C / kMoveSlots of them drain the old table long before.
  static constexpr size_t kMoveSlots = 32;

  FlatKeyMap() = default;
  FlatKeyMap(const FlatKeyMap&) = delete;
  FlatKeyMap& operator=(const FlatKeyMap&) = delete;
  FlatKeyMap(FlatKeyMap&&) noexcept = default;
  FlatKeyMap& operator=(FlatKeyMap&&) noexcept = default;

  size_t size() const { return size_ + old_live_ + (has_zero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  size_t capacity() const { return cur_.cap; }
  bool growing() const { return growing_; }

  bool contains(uint64_t key) const {
    if (key == 0) return has_zero_;
    if (cur_.find(key) != kNone) return true;
    return growing() && old_find(key) != kNone;
  }

  // The value of key into `value`; false (value untouched) when absent.
  bool find(uint64_t key, V& value) const {
    if (key == 0) {
      if (has_zero_) value = zero_value_;
      return has_zero_;
    }
    if (size_t i = cur_.find(key); i != kNone) {
      value = cur_.values[i];
      return true;
    }
    if (!growing()) return false;
    if (size_t i = old_find(key); i != kNone) {
      value = cold_->old.values[i];
      return true;
    }
    return false;
  }

  // Inserts key with value, or sets the value of the key already there.
  void set(uint64_t key, V value) {
    if (key == 0) {
      has_zero_ = true;
      zero_value_ = value;
      return;
    }
    // Grow first: a growth turns the current table into the old one, where the key may be.
    if ((size() + 1) * 2 > cur_.cap) grow();
    if (growing()) {
      move_some();
      if (growing()) {
        if (size_t i = old_find(key); i != kNone) kill_old(i);  // it moves to the new table below
      }
    }
    size_t i = cur_.home(key);
    while (cur_.keys[i] != 0 && cur_.keys[i] != key) i = (i + 1) & cur_.mask;
    if (cur_.keys[i] == 0) {
      cur_.keys[i] = key;
      ++size_;
    }
    cur_.values[i] = value;
  }

  void erase(uint64_t key) {
    if (key == 0) {
      has_zero_ = false;
      return;
    }
    if (growing()) {
      move_some();
      if (growing()) {
        if (size_t i = old_find(key); i != kNone) {
          kill_old(i);
          return;
        }
      }
    }
    if (cur_.cap == 0) return;
    size_t i = cur_.home(key);
    while (cur_.keys[i] != key) {
      if (cur_.keys[i] == 0) return;
      i = (i + 1) & cur_.mask;
    }
    // Backward shift: move each following entry of the run into the hole when its home slot does not
    // lie (cyclically) after the hole, so every key stays reachable from its home slot.
    size_t hole = i;
    for (size_t j = (hole + 1) & cur_.mask; cur_.keys[j] != 0; j = (j + 1) & cur_.mask) {
      const size_t home = cur_.home(cur_.keys[j]);
      if (((j - home) & cur_.mask) >= ((j - hole) & cur_.mask)) {
        cur_.keys[hole] = cur_.keys[j];
        cur_.values[hole] = cur_.values[j];
        hole = j;
      }
    }
    cur_.keys[hole] = 0;
    --size_;
  }

  // Keeps the capacity: a set cleared to be filled again (an exact feed's resubscription replays the
  // replica's whole cache) then refills without growing through every size on the way. A growth in
  // progress is dropped with the old table. A large table is replaced by a fresh mapping rather than
  // zeroed (8 MB of keys at 2^20 slots).
  void clear() {
    drop_old();
    if (cur_.cap * sizeof(uint64_t) >= kMapBytes) {
      cur_ = make_table(cur_.cap, cold().cur_blocks);
    } else if (cur_.cap != 0) {
      std::memset(cur_.keys, 0, cur_.cap * sizeof(uint64_t));
    }
    size_ = 0;
    has_zero_ = false;
  }

 private:
  static constexpr size_t kNone = ~size_t{0};

  // Zeroed memory of `bytes`: from the allocator when small, mapped (zero pages on first touch, no
  // zeroing pass now) when large. A large block is unmapped on a thread of its own: unmapping a
  // populated 12 MB table takes about 1 ms (75 us per MB on the dev VM), which the caller's lock
  // would otherwise hold.
  static constexpr size_t kMapBytes = size_t{1} << 20;
  struct Block {
    void* p = nullptr;
    size_t bytes = 0;
    Block() = default;
    explicit Block(size_t n) : bytes(n) {
      if (n >= kMapBytes) {
        p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
      } else {
        p = std::calloc(n, 1);
        if (p == nullptr) throw std::bad_alloc();
      }
    }
    Block(Block&& o) noexcept : p(std::exchange(o.p, nullptr)), bytes(std::exchange(o.bytes, 0)) {}
    Block& operator=(Block&& o) noexcept {
      if (this != &o) {
        release();
        p = std::exchange(o.p, nullptr);
        bytes = std::exchange(o.bytes, 0);
      }
      return *this;
    }
    ~Block() { release(); }
    void release() {
      if (p == nullptr) return;
      if (bytes >= kMapBytes) {
        try {
          std::thread([q = p, n = bytes] { ::munmap(q, n); }).detach();
        } catch (...) {  // no thread to be had: unmap here
          ::munmap(p, bytes);
        }
      } else {
        std::free(p);
      }
      p = nullptr;
    }
  };

  // One power-of-two table: a view of its keys (0 = empty) and values. The blocks behind the two
  // tables are kept apart at the end of the map, so a lookup's fields share a cache line: a decision
  // reads every candidate replica's map once.
  struct Table {
    uint64_t* keys = nullptr;
    V* values = nullptr;
    size_t cap = 0;
    size_t mask = 0;
    int shift = 64;

    // Fibonacci hashing: the top bits of key x 2^64/phi. The keys are hashes already; the multiply
    // guards against keys that differ only in their high bits.
    size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift); }
    size_t find(uint64_t key) const {
      if (cap == 0) return kNone;
      for (size_t i = home(key);; i = (i + 1) & mask) {
        if (keys[i] == key) return i;
        if (keys[i] == 0) return kNone;
      }
    }
  };
  struct Blocks {
    Block keys, values;
  };
  static Table make_table(size_t capacity, Blocks& blocks) {
    blocks.keys = Block(capacity * sizeof(uint64_t));
    blocks.values = Block(capacity * sizeof(V));
    return Table{static_cast<uint64_t*>(blocks.keys.p), static_cast<V*>(blocks.values.p), capacity, capacity - 1,
                 64 - std::countr_zero(capacity)};
  }

  // The old-table slot of a key still held there (not moved, not dead), or kNone.
  size_t old_find(uint64_t key) const {
    const size_t i = cold_->old.find(key);
    return i != kNone && i >= cold_->old_next && !cold_->old_dead[i] ? i : kNone;
  }

  void kill_old(size_t i) {
    cold_->old_dead[i] = true;
    --old_live_;
  }

  void drop_old() {
    if (cold_) {
      cold_->old = Table{};
      cold_->old_blocks = Blocks{};
      cold_->old_dead = {};
      cold_->old_next = 0;
    }
    old_live_ = 0;
    growing_ = false;
  }

  // Into the new table, which cannot hold the key already (each key lives in one table).
  void place(uint64_t key, V value) {
    size_t j = cur_.home(key);
    while (cur_.keys[j] != 0) j = (j + 1) & cur_.mask;
    cur_.keys[j] = key;
    cur_.values[j] = value;
    ++size_;
  }

  void move_some() { move_slots(kMoveSlots); }

  void move_slots(size_t n) {
    Cold& c = *cold_;
    const size_t end = std::min(c.old.cap, c.old_next + n);
    for (size_t i = c.old_next; i < end; ++i) {
      if (c.old.keys[i] == 0 || c.old_dead[i]) continue;
      place(c.old.keys[i], c.old.values[i]);
      --old_live_;
    }
    c.old_next = end;
    if (c.old_next == c.old.cap) drop_old();
  }

  void grow() {
    if (growing()) move_slots(cold_->old.cap);  // not expected (see kMoveSlots), but the bound must hold
    const size_t capacity = cur_.cap == 0 ? 16 : cur_.cap * 2;
    Blocks blocks;
    const Table fresh = make_table(capacity, blocks);
    if (size_ != 0) {  // the current table drains into the fresh one
      Cold& c = cold();
      c.old = cur_;
      c.old_blocks = std::move(c.cur_blocks);
      c.old_dead.assign(c.old.cap, false);
      c.old_next = 0;
      old_live_ = size_;
      size_ = 0;
      growing_ = true;
    }
    cur_ = fresh;
    cold().cur_blocks = std::move(blocks);
  }

  // Read by every lookup, kept together.
  Table cur_;
  size_t size_ = 0;  // non-zero keys in cur_
  bool growing_ = false;
  bool has_zero_ = false;
  V zero_value_{};
  size_t old_live_ = 0;  // keys still held in the old table while growing_
  // The rest is read only while growing_ or at a growth, and lives apart: the maps of every candidate
  // replica are read on each decision, and a larger object spreads their hot fields over more lines.
  // While growing_, old's slots below old_next have moved; old_dead flags keys erased or overwritten
  // since the growth (they are in the new table or gone).
  struct Cold {
    Table old;
    size_t old_next = 0;
    std::vector<bool> old_dead;
    Blocks cur_blocks, old_blocks;
  };
  std::unique_ptr<Cold> cold_;
  Cold& cold() {
    if (!cold_) cold_ = std::make_unique<Cold>();
    return *cold_;
  }
};

}  // namespace keel::router
