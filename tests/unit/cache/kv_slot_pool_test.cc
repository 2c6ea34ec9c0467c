#include "cache/kv_slot_pool.h"

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "unit/cache/cache_test_util.h"

namespace keel::cache {
namespace {

TEST(KvSlotPool, AllocatesDistinctSlotsAndNeverMoreThanItHolds) {
  KvSlotPool pool(10);
  EXPECT_EQ(pool.n_slots(), 10);
  EXPECT_EQ(pool.n_free(), 10);
  auto a = pool.alloc(4);
  ASSERT_TRUE(a.ok());
  auto b = pool.alloc(6);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_EQ(pool.n_used(), 10);
  std::set<int32_t> seen;
  for (SlotId s : *a) seen.insert(s.value);
  for (SlotId s : *b) seen.insert(s.value);
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 9);

  auto c = pool.alloc(1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("0 free slots of 10"), std::string::npos) << c.status().message();
}

TEST(KvSlotPool, FailedAllocLeavesPoolAndOutputUntouched) {
  KvSlotPool pool(3);
  std::vector<SlotId> out{SlotId{42}};
  ASSERT_TRUE(pool.alloc(2, out).ok());
  EXPECT_EQ(out.size(), 3u);
  Status s = pool.alloc(2, out);
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(pool.n_free(), 1);
  EXPECT_EQ(pool.alloc(-1, out).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(pool.alloc(0, out).ok());
  EXPECT_EQ(out.size(), 3u);
}

TEST(KvSlotPool, FreeReturnsSlotsForReuse) {
  KvSlotPool pool(4);
  auto a = pool.alloc(4).value();
  EXPECT_TRUE(pool.is_used(a[2]));
  pool.free(std::span(a).subspan(1, 2));
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_FALSE(pool.is_used(a[1]));
  EXPECT_FALSE(pool.is_used(a[2]));
  EXPECT_TRUE(pool.is_used(a[0]));
  auto b = pool.alloc(2).value();
  std::set<SlotId> got(b.begin(), b.end());
  EXPECT_EQ(got, (std::set<SlotId>{a[1], a[2]}));
  EXPECT_FALSE(pool.is_used(SlotId{-1}));
  EXPECT_FALSE(pool.is_used(SlotId{4}));
}

TEST(KvSlotPool, RandomAllocFreeKeepsCountsExact) {
  constexpr int64_t kSize = 257;
  KvSlotPool pool(kSize);
  std::mt19937 rng(7);
  std::vector<SlotId> held;
  for (int step = 0; step < 5000; ++step) {
    if (rng() % 2 == 0) {
      int64_t n = static_cast<int64_t>(rng() % 40);
      int64_t n_free_before = kSize - static_cast<int64_t>(held.size());
      Status s = pool.alloc(n, held);
      EXPECT_EQ(s.ok(), n <= n_free_before);
    } else if (!held.empty()) {
      std::shuffle(held.begin(), held.end(), rng);
      size_t n = rng() % (held.size() + 1);
      pool.free(std::span(held).first(n));
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n));
    }
    ASSERT_EQ(pool.n_used(), static_cast<int64_t>(held.size()));
    ASSERT_EQ(pool.n_free() + pool.n_used(), kSize);
    ASSERT_LE(pool.n_used(), kSize);
  }
  std::set<SlotId> unique(held.begin(), held.end());
  EXPECT_EQ(unique.size(), held.size());
  for (SlotId s : held) EXPECT_TRUE(pool.is_used(s));
}

TEST(KvSlotPool, AppendsPlainIndicesForBatches) {
  std::vector<SlotId> slots{SlotId{3}, SlotId{1}, SlotId{2}};
  std::vector<int32_t> out{9};
  append_slot_indices(slots, out);
  EXPECT_EQ(out, (std::vector<int32_t>{9, 3, 1, 2}));
}

TEST(KvSlotPoolDeathTest, DoubleFreeAborts) {
  KvSlotPool pool(2);
  auto a = pool.alloc(1).value();
  pool.free(a);
  EXPECT_DEATH(pool.free(a), "freed twice");
  EXPECT_DEATH(pool.free(std::vector<SlotId>{SlotId{2}}), "outside a pool of 2");
}

}  // namespace
}  // namespace keel::cache
