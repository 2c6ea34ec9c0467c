// FlatKeyMap against std::unordered_map over random operations, with key sets built to collide (keys
// that share their home slot, the key 0, keys equal in their low bits), so that probing, growth and the
// backward-shift erase are all exercised.
#include "router/flat_key_map.h"

#include <cstdio>
#include <random>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

namespace keel::router {
namespace {

void expect_same(const FlatKeyMap<uint64_t>& flat, const std::unordered_map<uint64_t, uint64_t>& ref,
                 const std::vector<uint64_t>& universe) {
  ASSERT_EQ(flat.size(), ref.size());
  for (uint64_t k : universe) {  // every key either holds is in the universe
    ASSERT_EQ(flat.contains(k), ref.contains(k)) << k;
    uint64_t v = 0;
    ASSERT_EQ(flat.find(k, v), ref.contains(k)) << k;
    if (ref.contains(k)) {
      EXPECT_EQ(v, ref.at(k)) << k;
    }
  }
}

// Keys drawn from a small universe so that inserts, overwrites and erases of present keys are common.
std::vector<uint64_t> universe_of(std::mt19937_64& rng, int kind) {
  std::vector<uint64_t> u;
  for (int i = 0; i < 600; ++i) {
    switch (kind) {
      case 0: u.push_back(rng()); break;                             // hash-like
      case 1: u.push_back(static_cast<uint64_t>(i)); break;          // small, includes 0
      case 2: u.push_back(static_cast<uint64_t>(i) << 40); break;    // differ in high bits only
      default: u.push_back((rng() & 0xFFFF) | (uint64_t{7} << 32)); // many equal, dense low bits
    }
  }
  return u;
}

TEST(FlatKeyMap, MatchesUnorderedMapOverRandomOperations) {
  for (int kind = 0; kind < 4; ++kind) {
    std::mt19937_64 rng(1234 + static_cast<uint64_t>(kind));
    const auto universe = universe_of(rng, kind);
    FlatKeyMap<uint64_t> flat;
    std::unordered_map<uint64_t, uint64_t> ref;
    for (int op = 0; op < 40'000; ++op) {
      const uint64_t k = universe[rng() % universe.size()];
      const uint64_t v = rng();
      switch (rng() % 8) {
        case 0:
        case 1:
        case 2:
          flat.set(k, v);
          ref[k] = v;
          break;
        case 3:
        case 4:
          flat.erase(k);
          ref.erase(k);
          break;
        case 5:
          ASSERT_EQ(flat.contains(k), ref.contains(k)) << "kind " << kind << " op " << op;
          break;
        case 6:
          if (rng() % 200 == 0) {  // drop about half at once, by value: many backward shifts in a row
            for (const auto& [key, val] : ref) {
              if (val & 1) flat.erase(key);
            }
            std::erase_if(ref, [](const auto& kv) { return kv.second & 1; });
          }
          break;
        default:
          if (rng() % 2000 == 0) {
            flat.clear();
            ref.clear();
          }
      }
      if (op % 5000 == 0) expect_same(flat, ref, universe);
    }
    expect_same(flat, ref, universe);
  }
}

// A growth drains the old table over the following writes (kMoveSlots slots each). Every operation
// while both tables are live is checked against the reference: lookups that must fall through to the
// old table, overwrites and erases of keys still there (they must not come back, nor count twice),
// erases of keys already moved, fresh inserts, and a clear() in the middle of a drain.
TEST(FlatKeyMap, OperationsWhileAGrowthDrainsMatchUnorderedMap) {
  for (int kind = 0; kind < 4; ++kind) {
    std::mt19937_64 rng(99 + static_cast<uint64_t>(kind));
    std::vector<uint64_t> universe;
    for (int i = 0; i < 20'000; ++i) {
      switch (kind) {
        case 0: universe.push_back(rng()); break;
        case 1: universe.push_back(static_cast<uint64_t>(i)); break;
        case 2: universe.push_back(static_cast<uint64_t>(i) << 40); break;
        default: universe.push_back((rng() & 0x3FFFF) | (uint64_t{7} << 32));
      }
    }
    FlatKeyMap<uint64_t> flat;
    std::unordered_map<uint64_t, uint64_t> ref;
    int growths = 0, ops_while_growing = 0, cleared_while_growing = 0;
    for (int op = 0; op < 120'000; ++op) {
      const bool was_growing = flat.growing();
      const uint64_t k = universe[rng() % universe.size()];
      const uint64_t v = rng();
      const unsigned what = rng() % 16;
      if (what < 9) {
        flat.set(k, v);
        ref[k] = v;
      } else if (what < 14) {
        flat.erase(k);
        ref.erase(k);
      } else if (what == 14 && was_growing && growths == 7 && cleared_while_growing == 0) {  // in the 7th drain
        flat.clear();
        ref.clear();
        ++cleared_while_growing;
      } else {
        ASSERT_EQ(flat.contains(k), ref.contains(k)) << "kind " << kind << " op " << op;
      }
      growths += !was_growing && flat.growing();
      if (was_growing || flat.growing()) {
        ++ops_while_growing;
        // While both tables hold keys, check a sample after every operation (the whole set would
        // make the test quadratic).
        ASSERT_EQ(flat.size(), ref.size()) << "kind " << kind << " op " << op;
        for (int j = 0; j < 8; ++j) {
          const uint64_t q = universe[rng() % universe.size()];
          uint64_t got = 0;
          ASSERT_EQ(flat.find(q, got), ref.contains(q)) << "kind " << kind << " op " << op << " key " << q;
          if (ref.contains(q)) {
            ASSERT_EQ(got, ref.at(q)) << "kind " << kind << " op " << op;
          }
        }
      }
      if (op % 20'000 == 0) expect_same(flat, ref, universe);
    }
    expect_same(flat, ref, universe);
    // The sets reach ~12,000 keys: growths up to 32,768 slots, each drained over (slots / 32) writes.
    EXPECT_GE(growths, 8) << kind;
    EXPECT_GE(ops_while_growing, 500) << kind;
    EXPECT_EQ(cleared_while_growing, 1) << kind;
    std::printf("kind %d: %d growths, %d operations while growing, %d clears\n", kind, growths, ops_while_growing,
                cleared_while_growing);
  }
}

TEST(FlatKeyMap, AGrowthDrainsWithinTheWritesBeforeTheNextOne) {
  FlatKeyMap<uint32_t> flat;
  std::mt19937_64 rng(5);
  size_t capacity = 0;
  int incremental = 0;
  for (uint32_t i = 0; i < 300'000; ++i) {
    const bool was_growing = flat.growing();
    flat.set(rng() | 1, i);
    if (flat.capacity() != capacity) {
      // The previous growth was drained by the writes since, not all at once by this one.
      ASSERT_FALSE(was_growing) << i;
      // A table of more than kMoveSlots slots drains over later writes.
      ASSERT_EQ(flat.growing(), capacity > FlatKeyMap<uint32_t>::kMoveSlots) << i;
      incremental += flat.growing();
      capacity = flat.capacity();
    }
    ASSERT_LE(flat.size() * 2, flat.capacity()) << i;
  }
  EXPECT_EQ(flat.size(), 300'000u);
  EXPECT_EQ(incremental, 14);  // 64 -> 128 ... 2^19 -> 2^20
}

TEST(FlatKeyMap, EraseKeepsTheRestOfAProbeRunReachable) {
  // Keys that all start probing at one slot form one run; erasing from its middle must not cut off
  // the keys behind the hole.
  FlatKeyMap<uint64_t> flat;
  flat.set(1, 1);  // sizes the table to 16 slots: slot = top 4 bits of key x constant
  std::vector<uint64_t> same_home;
  const uint64_t home = (uint64_t{1} * 0x9E3779B97F4A7C15ULL) >> 60;
  for (uint64_t k = 2; same_home.size() < 6; ++k) {
    if (((k * 0x9E3779B97F4A7C15ULL) >> 60) == home) same_home.push_back(k);
  }
  for (uint64_t k : same_home) flat.set(k, k);
  ASSERT_EQ(flat.size(), 7u);
  flat.erase(same_home[1]);
  flat.erase(1);
  EXPECT_FALSE(flat.contains(same_home[1]));
  EXPECT_FALSE(flat.contains(1));
  for (size_t i = 0; i < same_home.size(); ++i) {
    if (i == 1) continue;
    EXPECT_TRUE(flat.contains(same_home[i])) << i;
  }
  EXPECT_EQ(flat.size(), 5u);
}

TEST(FlatKeyMap, KeyZeroIsAKeyLikeAnyOther) {
  FlatKeyMap<uint8_t> s;
  EXPECT_FALSE(s.contains(0));
  s.set(0, 1);
  EXPECT_TRUE(s.contains(0));
  EXPECT_EQ(s.size(), 1u);
  s.set(5, 1);
  s.erase(0);
  EXPECT_FALSE(s.contains(0));
  EXPECT_TRUE(s.contains(5));
  EXPECT_EQ(s.size(), 1u);
}

}  // namespace
}  // namespace keel::router
