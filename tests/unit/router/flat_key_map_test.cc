// FlatKeyMap against std::unordered_map over random operations, with key sets built to collide (keys
// that share their home slot, the key 0, keys equal in their low bits), so that probing, growth and the
// backward-shift erase are all exercised.
#include "router/flat_key_map.h"

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
