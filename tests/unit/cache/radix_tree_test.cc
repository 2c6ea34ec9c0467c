// RadixTree operations one at a time: match, insert (splits, duplicates, shared prefixes, n > 1),
// lock/unlock, LRU eviction of leaves and chains, counters, and the change feed.
#include "cache/radix_tree.h"

#include <gtest/gtest.h>

#include "cache/prefix_hash.h"
#include "unit/cache/cache_test_util.h"

namespace keel::cache {
namespace {

using Tokens = std::vector<int32_t>;
using Slots = std::vector<SlotId>;

class RadixTreeTest : public ::testing::Test {
 protected:
  // Allocates fresh slots for tokens and inserts them; expects nothing was cached before.
  InsertResult cache(const Tokens& tokens) {
    Slots slots = pool_.alloc(static_cast<int64_t>(tokens.size())).value();
    InsertResult r = tree_.insert(tokens, slots);
    pool_.free(r.duplicate_slots);
    return r;
  }
  Slots slots_of(const Tokens& tokens) { return tree_.match(tokens).slots; }
  void TearDown() override {
    Status s = tree_.check_invariants();
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(pool_.n_free() + tree_.n_cached_tokens(), pool_.n_slots());
  }

  KvSlotPool pool_{64};
  RadixTree tree_{64};
};

TEST_F(RadixTreeTest, EmptyTreeMatchesNothing) {
  PrefixMatch m = tree_.match(Tokens{1, 2, 3});
  EXPECT_EQ(m.prefix_len, 0);
  EXPECT_TRUE(m.slots.empty());
  EXPECT_EQ(m.node, tree_.root());
  EXPECT_EQ(tree_.n_nodes(), 1);
  EXPECT_EQ(tree_.n_cached_tokens(), 0);
}

TEST_F(RadixTreeTest, MatchesLongestPrefixAndSplitsInsideAnEdge) {
  Slots s = pool_.alloc(4).value();
  InsertResult r = tree_.insert(Tokens{1, 2, 3, 4}, s);
  EXPECT_EQ(r.n_cached_before, 0);
  EXPECT_TRUE(r.duplicate_slots.empty());
  EXPECT_EQ(tree_.prefix_len(r.node), 4);
  EXPECT_EQ(tree_.n_nodes(), 2);

  PrefixMatch longer = tree_.match(Tokens{1, 2, 3, 4, 5});
  EXPECT_EQ(longer.prefix_len, 4);
  EXPECT_EQ(longer.slots, s);
  EXPECT_EQ(longer.node, r.node);

  PrefixMatch mid = tree_.match(Tokens{1, 2, 7});
  EXPECT_EQ(mid.prefix_len, 2);
  EXPECT_EQ(mid.slots, Slots(s.begin(), s.begin() + 2));
  EXPECT_EQ(tree_.prefix_len(mid.node), 2);
  EXPECT_EQ(tree_.n_nodes(), 3);  // root, [1 2], [3 4]
  EXPECT_EQ(tree_.n_cached_tokens(), 4);
  // The split left the old handle naming the same prefix end.
  EXPECT_EQ(tree_.prefix_len(r.node), 4);
  EXPECT_EQ(tree_.match(Tokens{1, 2, 3, 4}).node, r.node);
  EXPECT_EQ(tree_.match(Tokens{2, 1}).prefix_len, 0);
}

TEST_F(RadixTreeTest, DivergingInsertSplitsAndReturnsDuplicateSlots) {
  InsertResult a = cache(Tokens{1, 2, 3, 4});
  Slots first = slots_of(Tokens{1, 2, 3, 4});
  Slots mine = pool_.alloc(4).value();
  Slots passed = mine;
  InsertResult b = tree_.insert(Tokens{1, 2, 5, 6}, passed);
  EXPECT_EQ(b.n_cached_before, 2);
  EXPECT_EQ(b.duplicate_slots, Slots(mine.begin(), mine.begin() + 2));
  EXPECT_EQ(passed, (Slots{first[0], first[1], mine[2], mine[3]}));
  pool_.free(b.duplicate_slots);
  EXPECT_EQ(tree_.n_cached_tokens(), 6);
  EXPECT_EQ(tree_.n_nodes(), 4);
  EXPECT_EQ(slots_of(Tokens{1, 2, 5, 6}), passed);
  EXPECT_EQ(slots_of(Tokens{1, 2, 3, 4}), first);
  EXPECT_EQ(tree_.prefix_len(a.node), 4);
  EXPECT_EQ(tree_.prefix_len(b.node), 4);
}

TEST_F(RadixTreeTest, ReinsertingACachedSequenceOnlyReturnsDuplicates) {
  InsertResult a = cache(Tokens{1, 2, 3});
  Slots cached = slots_of(Tokens{1, 2, 3});
  // Same slots (a request that matched them): nothing to free.
  Slots same = cached;
  InsertResult again = tree_.insert(Tokens{1, 2, 3}, same);
  EXPECT_TRUE(again.duplicate_slots.empty());
  EXPECT_EQ(again.n_cached_before, 3);
  EXPECT_EQ(again.node, a.node);
  // Fresh slots for the same tokens (two requests computed it side by side): all are duplicates.
  Slots fresh = pool_.alloc(3).value();
  Slots passed = fresh;
  InsertResult dup = tree_.insert(Tokens{1, 2, 3}, passed);
  EXPECT_EQ(dup.duplicate_slots, fresh);
  EXPECT_EQ(passed, cached);
  pool_.free(dup.duplicate_slots);
  // A shorter sequence splits and returns the node at its end.
  Slots two = pool_.alloc(2).value();
  InsertResult shorter = tree_.insert(Tokens{1, 2}, two);
  EXPECT_EQ(shorter.duplicate_slots.size(), 2u);
  pool_.free(shorter.duplicate_slots);
  EXPECT_EQ(tree_.prefix_len(shorter.node), 2);
  EXPECT_EQ(tree_.n_cached_tokens(), 3);
  EXPECT_EQ(tree_.insert(Tokens{}, std::span<SlotId>{}).node, tree_.root());
}

TEST_F(RadixTreeTest, SamplesOfOneRequestShareThePrompt) {
  // n = 3: the prompt is computed once, each sample appends its own tokens.
  Tokens prompt{10, 11, 12, 13};
  InsertResult p = cache(prompt);
  Slots prompt_slots = slots_of(prompt);
  std::vector<NodeId> held;
  for (int32_t i = 0; i < 3; ++i) {
    PrefixMatch m = tree_.match(prompt);
    ASSERT_EQ(m.prefix_len, 4);
    tree_.lock(m.node);
    Tokens seq = prompt;
    seq.insert(seq.end(), {100 + i, 200 + i});
    Slots slots = m.slots;
    ASSERT_TRUE(pool_.alloc(2, slots).ok());
    InsertResult r = tree_.insert(seq, slots);
    EXPECT_TRUE(r.duplicate_slots.empty());
    EXPECT_EQ(r.n_cached_before, 4);
    tree_.lock(r.node);
    tree_.unlock(m.node);
    held.push_back(r.node);
  }
  EXPECT_EQ(tree_.n_cached_tokens(), 4 + 3 * 2);
  EXPECT_EQ(tree_.lock_ref(p.node), 3);
  EXPECT_EQ(tree_.n_locked_tokens(), 10);
  EXPECT_EQ(tree_.match(Tokens{10, 11, 12, 13, 101, 201}).slots[3], prompt_slots[3]);
  EXPECT_EQ(tree_.evict(100).size(), 0u);
  for (NodeId n : held) tree_.unlock(n);
  EXPECT_EQ(tree_.lock_ref(p.node), 0);
  EXPECT_EQ(tree_.n_evictable_tokens(), 10);
}

TEST_F(RadixTreeTest, LockedNodesAndTheirAncestorsAreNeverEvicted) {
  InsertResult a = cache(Tokens{1, 2, 3, 4});
  tree_.match(Tokens{1, 2});                // split: [1 2] -> [3 4]
  InsertResult b = cache(Tokens{1, 2, 9});  // unlocked sibling leaf
  cache(Tokens{5, 6});                      // unlocked elsewhere
  tree_.lock(a.node);
  EXPECT_EQ(tree_.lock_ref(a.node), 1);
  EXPECT_EQ(tree_.lock_ref(tree_.match(Tokens{1, 2}).node), 1);
  EXPECT_EQ(tree_.lock_ref(b.node), 0);
  EXPECT_EQ(tree_.n_locked_tokens(), 4);
  EXPECT_EQ(tree_.n_evictable_tokens(), 3);
  Slots freed = tree_.evict(100);
  EXPECT_EQ(freed.size(), 3u);
  pool_.free(freed);
  EXPECT_EQ(tree_.match(Tokens{1, 2, 3, 4}).prefix_len, 4);
  EXPECT_EQ(tree_.match(Tokens{1, 2, 9}).prefix_len, 2);
  EXPECT_FALSE(tree_.is_live(b.node));
  tree_.lock(tree_.root());  // no-op
  tree_.unlock(a.node);
  EXPECT_EQ(tree_.n_evictable_tokens(), 4);
  pool_.free(tree_.evict(1));  // the whole [3 4] leaf goes; [1 2] stays
  EXPECT_EQ(tree_.n_cached_tokens(), 2);
  EXPECT_FALSE(tree_.is_live(a.node));
}

TEST_F(RadixTreeTest, SplitCopiesLockCountsToTheNewParent) {
  InsertResult a = cache(Tokens{1, 2, 3, 4, 5});
  tree_.lock(a.node);
  tree_.lock(a.node);
  PrefixMatch m = tree_.match(Tokens{1, 2, 3});
  EXPECT_EQ(tree_.lock_ref(m.node), 2);
  EXPECT_EQ(tree_.n_locked_tokens(), 5);
  tree_.unlock(a.node);
  tree_.unlock(a.node);
  EXPECT_EQ(tree_.lock_ref(m.node), 0);
  EXPECT_EQ(tree_.n_evictable_tokens(), 5);
}

TEST_F(RadixTreeTest, EvictsLeastRecentlyUsedLeafFirst) {
  Slots a = (cache(Tokens{1, 1}), slots_of(Tokens{1, 1}));
  Slots b = (cache(Tokens{2, 2}), slots_of(Tokens{2, 2}));
  Slots c = (cache(Tokens{3, 3}), slots_of(Tokens{3, 3}));
  tree_.match(Tokens{1});        // splits a into [1] -> [1]; touches only the new parent
  tree_.match(Tokens{2, 2, 5});  // b used last
  // Leaves by last use: a's tail (when a was cached), c, then b; a's parent joins when its child goes.
  Slots first = tree_.evict(1);
  EXPECT_EQ(first, Slots{a[1]});
  Slots second = tree_.evict(1);
  EXPECT_EQ(second, c);
  Slots third = tree_.evict(1);
  EXPECT_EQ(third, Slots{a[0]});
  Slots fourth = tree_.evict(1);
  EXPECT_EQ(fourth, b);
  for (const Slots* s : {&first, &second, &third, &fourth}) pool_.free(*s);
  EXPECT_EQ(tree_.n_nodes(), 1);
}

TEST_F(RadixTreeTest, EvictsChainsChildrenBeforeParents) {
  cache(Tokens{1, 2, 3});
  tree_.match(Tokens{1});  // [1] -> [2 3]
  cache(Tokens{1, 7});     // [1] -> {[2 3], [7]}
  std::vector<CacheEvent> events;
  tree_.drain_events(events);  // drop the stored events
  events.clear();
  Slots freed = tree_.evict(1000);
  EXPECT_EQ(freed.size(), 4u);
  pool_.free(freed);
  tree_.drain_events(events);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].tokens, (Tokens{2, 3}));
  EXPECT_EQ(events[1].tokens, (Tokens{7}));
  EXPECT_EQ(events[2].tokens, (Tokens{1}));
  for (const auto& e : events) EXPECT_EQ(e.kind, CacheEventKind::kRemoved);
  EXPECT_EQ(tree_.n_nodes(), 1);
  EXPECT_EQ(tree_.n_cached_tokens(), 0);
}

TEST_F(RadixTreeTest, EvictFreesWholeLeavesAndStopsOnceEnoughIsFree) {
  cache(Tokens{1, 2, 3, 4, 5});
  cache(Tokens{9});
  EXPECT_EQ(tree_.evict(0).size(), 0u);
  Slots freed = tree_.evict(2);
  EXPECT_EQ(freed.size(), 5u);  // the older leaf, whole
  pool_.free(freed);
  EXPECT_EQ(tree_.match(Tokens{9}).prefix_len, 1);
  std::vector<SlotId> out{SlotId{-7}};
  EXPECT_EQ(tree_.evict(50, out), 1);  // asks for more than is cached
  EXPECT_EQ(out.size(), 2u);
  pool_.free(std::span(out).subspan(1));
  EXPECT_EQ(tree_.stats().n_evicted_tokens, 6);
}

TEST_F(RadixTreeTest, CountsHitsAndInsertedTokens) {
  cache(Tokens{1, 2, 3});
  tree_.match(Tokens{1, 2, 3, 4});
  tree_.match(Tokens{1, 5});
  tree_.match(Tokens{8});
  const RadixStats& st = tree_.stats();
  EXPECT_EQ(st.n_match_calls, 3);
  EXPECT_EQ(st.n_match_tokens, 7);
  EXPECT_EQ(st.n_hit_tokens, 4);
  EXPECT_EQ(st.n_inserted_tokens, 3);
}

TEST_F(RadixTreeTest, ChangeFeedNamesSpansByChainedHashes) {
  cache(Tokens{1, 2, 3});
  tree_.match(Tokens{1});  // a split publishes nothing: the cached content did not change
  cache(Tokens{1, 4});
  std::vector<CacheEvent> events;
  EXPECT_EQ(tree_.drain_events(events), 2);
  ASSERT_EQ(events.size(), 2u);
  uint64_t h1 = extend_prefix_hash(kRootPrefixHash, 1);
  EXPECT_EQ(events[0].seq, 1u);
  EXPECT_EQ(events[0].kind, CacheEventKind::kStored);
  EXPECT_EQ(events[0].parent_hash, kRootPrefixHash);
  EXPECT_EQ(events[0].hash, extend_prefix_hash(kRootPrefixHash, Tokens{1, 2, 3}));
  EXPECT_EQ(events[0].prefix_len, 3);
  EXPECT_EQ(events[0].tokens, (Tokens{1, 2, 3}));
  EXPECT_EQ(events[1].seq, 2u);
  EXPECT_EQ(events[1].parent_hash, h1);
  EXPECT_EQ(events[1].hash, extend_prefix_hash(h1, 4));
  EXPECT_EQ(events[1].prefix_len, 2);
  EXPECT_EQ(events[1].tokens, Tokens{4});
  EXPECT_EQ(tree_.drain_events(events), 0);

  pool_.free(tree_.evict(1));  // oldest leaf: [2 3] under [1]
  events.clear();
  tree_.drain_events(events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].seq, 3u);
  EXPECT_EQ(events[0].kind, CacheEventKind::kRemoved);
  EXPECT_EQ(events[0].parent_hash, h1);
  EXPECT_EQ(events[0].hash, extend_prefix_hash(kRootPrefixHash, Tokens{1, 2, 3}));
  EXPECT_EQ(events[0].prefix_len, 3);
  EXPECT_EQ(events[0].tokens, (Tokens{2, 3}));
}

TEST(RadixTreeFeed, DropsOldestWhenFullAndSnapshotResyncs) {
  KvSlotPool pool(32);
  RadixTree tree(/*event_queue_capacity=*/2);
  for (int32_t t = 0; t < 5; ++t) {
    Slots s = pool.alloc(2).value();
    (void)tree.insert(Tokens{7, t}, s);
  }
  std::vector<CacheEvent> events;
  EXPECT_EQ(tree.drain_events(events), 2);
  EXPECT_EQ(events[0].seq, 4u);  // a subscriber that saw seq 0 sees the gap
  EXPECT_EQ(events[1].seq, 5u);
  EXPECT_EQ(tree.event_feed().n_dropped(), 3);
  FeedSnapshot snap = tree.snapshot();
  EXPECT_EQ(snap.seq, 5u);
  // [7 0] was split into [7] -> [0] by the second insert: the snapshot shows today's edges.
  ASSERT_EQ(snap.stored.size(), 6u);
  EXPECT_EQ(snap.stored[0].tokens, Tokens{7});
  EXPECT_EQ(snap.stored[0].parent_hash, kRootPrefixHash);
  for (size_t i = 1; i < 6; ++i) {
    EXPECT_EQ(snap.stored[i].tokens, Tokens{static_cast<int32_t>(i - 1)});
    EXPECT_EQ(snap.stored[i].parent_hash, snap.stored[0].hash);
    EXPECT_EQ(snap.stored[i].prefix_len, 2);
    EXPECT_EQ(snap.stored[i].seq, 5u);
  }
}

TEST(RadixTreeFeed, OffFeedKeepsNoEvents) {
  KvSlotPool pool(4);
  RadixTree tree;  // capacity 0
  Slots s = pool.alloc(2).value();
  (void)tree.insert(Tokens{1, 2}, s);
  std::vector<CacheEvent> events;
  EXPECT_EQ(tree.drain_events(events), 0);
  EXPECT_EQ(tree.event_feed().last_seq(), 1u);
  EXPECT_EQ(tree.event_feed().n_dropped(), 0);
  EXPECT_FALSE(tree.event_feed().enabled());
}

TEST(RadixTreeDeathTest, MisuseAborts) {
  KvSlotPool pool(8);
  RadixTree tree;
  Slots s = pool.alloc(2).value();
  InsertResult r = tree.insert(Tokens{1, 2}, s);
  EXPECT_DEATH(tree.unlock(r.node), "not locked");
  Slots one = pool.alloc(1).value();
  EXPECT_DEATH((void)tree.insert(Tokens{3, 4}, one), "insert of 2 tokens with 1 slots");
  pool.free(tree.evict(2));
  EXPECT_DEATH(tree.lock(r.node), "used after it was evicted");
}

}  // namespace
}  // namespace keel::cache
