// Randomized property test: thousands of interleaved request lifecycles (match + lock, compute KV in
// chunks, in-flight and final inserts, aborts), lookups and evictions against a naive reference model
// that keeps every cached prefix in a std::map. Checks match lengths and slots, duplicate slots on
// insert, slot ownership (each slot is free, cached or owned by one request; none lost), lock counts,
// the eviction contract (only unlocked, whole suffixes, least recently used first), and that the
// change feed, replayed by a subscriber (with snapshot resync when it dropped events), names exactly
// the cached prefixes.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "cache/prefix_hash.h"
#include "cache/radix_tree.h"
#include "unit/cache/cache_test_util.h"

namespace keel::cache {
namespace {

using Tokens = std::vector<int32_t>;
using Slots = std::vector<SlotId>;

struct RefEntry {
  SlotId slot;
  uint64_t hash = 0;
  uint64_t last_use = 0;
};

struct Request {
  Tokens tokens;           // the whole sequence it will compute
  Slots slots;             // [n_done] KV slots of tokens[0, n_done)
  int64_t n_in_tree = 0;   // slots[0, n_in_tree) are the tree's; the rest this request owns
  NodeId locked;           // root when nothing is locked
  int64_t locked_len = 0;  // prefix length of `locked`
};

struct Counts {
  int64_t matches = 0, hits = 0, duplicates = 0, evicted = 0, aborts = 0, resyncs = 0;
};

class Harness {
 public:
  Harness(uint32_t seed, int64_t pool_size, int64_t feed_capacity)
      : rng_(seed), pool_(pool_size), tree_(feed_capacity) {
    for (int i = 0; i < 4; ++i) bases_.push_back(random_tokens(2 + rng_() % 6));
  }

  void run(int n_ops) {
    for (int op = 0; op < n_ops; ++op) {
      switch (rng_() % 10) {
        case 0:
        case 1: start(); break;
        case 2:
        case 3:
        case 4:
          if (!reqs_.empty()) step(pick());
          break;
        case 5:
          if (!reqs_.empty()) finish(pick());
          break;
        case 6:
          if (!reqs_.empty() && rng_() % 3 == 0) abort(pick());
          break;
        case 7: lookup(); break;
        case 8: evict(static_cast<int64_t>(rng_() % 24)); break;
        default: drain_and_compare(); break;
      }
      check_all();
      if (testing::Test::HasFatalFailure()) return;
    }
    while (!reqs_.empty()) finish(0);
    evict(pool_.n_slots());
    check_all();
    drain_and_compare();
    EXPECT_EQ(tree_.n_cached_tokens(), 0);
    EXPECT_EQ(pool_.n_free(), pool_.n_slots());
  }

  const Counts& counts() const { return counts_; }

 private:
  Tokens random_tokens(size_t n) {
    Tokens t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng_() % 4);  // few symbols: many shared prefixes and splits
    return t;
  }
  size_t pick() { return rng_() % reqs_.size(); }

  // Reference: longest cached prefix, marking it used.
  int64_t ref_match(std::span<const int32_t> tokens, Slots* slots) {
    ++tick_;
    Tokens p;
    int64_t n = 0;
    for (int32_t t : tokens) {
      p.push_back(t);
      auto it = ref_.find(p);
      if (it == ref_.end()) break;
      it->second.last_use = tick_;
      slots->push_back(it->second.slot);
      ++n;
    }
    return n;
  }

  PrefixMatch checked_match(std::span<const int32_t> tokens) {
    Slots expected;
    int64_t expected_len = ref_match(tokens, &expected);
    PrefixMatch m = tree_.match(tokens);
    EXPECT_EQ(m.prefix_len, expected_len);
    EXPECT_EQ(m.slots, expected);
    EXPECT_EQ(tree_.prefix_len(m.node), m.prefix_len);
    ++counts_.matches;
    counts_.hits += m.prefix_len;
    return m;
  }

  void start() {
    if (reqs_.size() >= 6) return;
    Request r;
    r.tokens = bases_[rng_() % bases_.size()];
    Tokens tail = random_tokens(rng_() % 14);
    r.tokens.insert(r.tokens.end(), tail.begin(), tail.end());
    if (rng_() % 4 == 0) r.tokens.resize(1 + rng_() % r.tokens.size());
    PrefixMatch m = checked_match(std::span(r.tokens).first(r.tokens.size() - 1));
    tree_.lock(m.node);
    r.slots = m.slots;
    r.n_in_tree = m.prefix_len;
    r.locked = m.node;
    r.locked_len = m.prefix_len;
    reqs_.push_back(std::move(r));
  }

  // Computes the next chunk of one request, evicting when the pool is short; inserts in flight
  // half of the time.
  void step(size_t i) {
    Request& r = reqs_[i];
    auto n_left = static_cast<int64_t>(r.tokens.size() - r.slots.size());
    if (n_left == 0) return finish(i);
    int64_t k = 1 + static_cast<int64_t>(rng_() % std::min<int64_t>(n_left, 6));
    if (pool_.n_free() < k) evict(k - pool_.n_free());
    if (pool_.n_free() < k) return abort(i);
    ASSERT_TRUE(pool_.alloc(k, r.slots).ok());
    if (rng_() % 2 == 0) insert_done(r);
  }

  void insert_done(Request& r) {
    std::span<const int32_t> done = std::span(r.tokens).first(r.slots.size());
    ++tick_;
    Slots expected_dups;
    Tokens p;
    for (size_t j = 0; j < done.size(); ++j) {
      p.push_back(done[j]);
      auto [it, fresh] = ref_.try_emplace(p);
      if (fresh) {
        uint64_t parent = j == 0 ? kRootPrefixHash : ref_.at(Tokens(done.begin(), done.begin() + j)).hash;
        it->second.slot = r.slots[j];
        it->second.hash = extend_prefix_hash(parent, done[j]);
      } else if (it->second.slot != r.slots[j]) {
        expected_dups.push_back(r.slots[j]);
      }
      it->second.last_use = tick_;
    }
    Slots expected_slots;
    for (size_t j = 0; j < done.size(); ++j)
      expected_slots.push_back(ref_.at(Tokens(done.begin(), done.begin() + j + 1)).slot);
    InsertResult res = tree_.insert(done, r.slots);
    EXPECT_EQ(res.duplicate_slots, expected_dups);
    EXPECT_EQ(r.slots, expected_slots);
    EXPECT_EQ(tree_.prefix_len(res.node), static_cast<int64_t>(done.size()));
    counts_.duplicates += static_cast<int64_t>(res.duplicate_slots.size());
    pool_.free(res.duplicate_slots);
    r.n_in_tree = static_cast<int64_t>(done.size());
    tree_.lock(res.node);
    tree_.unlock(r.locked);
    r.locked = res.node;
    r.locked_len = r.n_in_tree;
  }

  void finish(size_t i) {
    if (!reqs_[i].slots.empty()) insert_done(reqs_[i]);
    tree_.unlock(reqs_[i].locked);
    reqs_.erase(reqs_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void abort(size_t i) {
    Request& r = reqs_[i];
    pool_.free(std::span(r.slots).subspan(static_cast<size_t>(r.n_in_tree)));
    tree_.unlock(r.locked);
    reqs_.erase(reqs_.begin() + static_cast<std::ptrdiff_t>(i));
    ++counts_.aborts;
  }

  void lookup() {
    Tokens t = bases_[rng_() % bases_.size()];
    Tokens tail = random_tokens(rng_() % 10);
    t.insert(t.end(), tail.begin(), tail.end());
    checked_match(t);
  }

  bool ref_locked(const Tokens& p) const {
    for (const Request& r : reqs_) {
      if (static_cast<int64_t>(p.size()) <= r.locked_len && std::equal(p.begin(), p.end(), r.tokens.begin())) {
        return true;
      }
    }
    return false;
  }

  // The eviction contract, checked against the reference before and after.
  void evict(int64_t n) {
    std::map<SlotId, Tokens> evictable;  // slot -> prefix
    for (const auto& [p, e] : ref_) {
      if (!ref_locked(p)) evictable.emplace(e.slot, p);
    }
    ASSERT_EQ(tree_.n_evictable_tokens(), static_cast<int64_t>(evictable.size()));
    Slots freed = tree_.evict(n);
    auto n_freed = static_cast<int64_t>(freed.size());
    if (static_cast<int64_t>(evictable.size()) >= n) {
      EXPECT_GE(n_freed, n);
    } else {
      EXPECT_EQ(n_freed, static_cast<int64_t>(evictable.size()));
    }
    uint64_t newest_evicted = 0;
    for (SlotId s : freed) {
      auto it = evictable.find(s);
      ASSERT_NE(it, evictable.end()) << "evicted slot " << s.value << " was locked or not cached";
      newest_evicted = std::max(newest_evicted, ref_.at(it->second).last_use);
      ref_.erase(it->second);
      evictable.erase(it);
    }
    for (const auto& [slot, p] : evictable) {
      EXPECT_LE(newest_evicted, ref_.at(p).last_use) << "kept a less recently used prefix";
    }
    for (const auto& [p, e] : ref_) {  // what is left is still prefix-closed
      if (p.size() > 1) {
        ASSERT_TRUE(ref_.contains(Tokens(p.begin(), p.end() - 1)));
      }
    }
    counts_.evicted += n_freed;
    pool_.free(freed);
  }

  void check_all() {
    Status s = tree_.check_invariants();
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(tree_.n_cached_tokens(), static_cast<int64_t>(ref_.size()));
    // Ownership: each slot is cached, owned by one request, or free; none lost.
    std::set<SlotId> held;
    for (const auto& [p, e] : ref_) {
      EXPECT_TRUE(pool_.is_used(e.slot));
      held.insert(e.slot);
    }
    int64_t n_owned = 0;
    for (const Request& r : reqs_) {
      for (size_t j = static_cast<size_t>(r.n_in_tree); j < r.slots.size(); ++j) {
        EXPECT_TRUE(held.insert(r.slots[j]).second) << "slot " << r.slots[j].value << " held twice";
        ++n_owned;
      }
    }
    ASSERT_EQ(pool_.n_free() + static_cast<int64_t>(ref_.size()) + n_owned, pool_.n_slots());
    ASSERT_EQ(static_cast<int64_t>(held.size()), pool_.n_used());
    // Locks: each request's node names its prefix and counts the requests at or below it.
    for (const Request& r : reqs_) {
      if (r.locked == tree_.root()) continue;
      ASSERT_TRUE(tree_.is_live(r.locked));
      EXPECT_EQ(tree_.prefix_len(r.locked), r.locked_len);
      int32_t expected = 0;
      for (const Request& o : reqs_) {
        expected += o.locked_len >= r.locked_len &&
                    std::equal(r.tokens.begin(), r.tokens.begin() + r.locked_len, o.tokens.begin());
      }
      EXPECT_EQ(tree_.lock_ref(r.locked), expected);
    }
  }

  // Replays the feed as a router would: per-token prefix hashes; resync from a snapshot on a gap.
  void drain_and_compare() {
    std::vector<CacheEvent> events;
    tree_.drain_events(events);
    if (!events.empty() && events.front().seq != seen_seq_ + 1) {
      ++counts_.resyncs;
      FeedSnapshot snap = tree_.snapshot();
      replica_.clear();
      for (const CacheEvent& e : snap.stored) apply(e);
      seen_seq_ = snap.seq;
    } else {
      for (const CacheEvent& e : events) {
        EXPECT_EQ(e.seq, seen_seq_ + 1);
        seen_seq_ = e.seq;
        apply(e);
      }
    }
    std::set<uint64_t> expected;
    for (const auto& [p, e] : ref_) expected.insert(e.hash);
    EXPECT_EQ(replica_, expected);
  }

  void apply(const CacheEvent& e) {
    uint64_t h = e.parent_hash;
    for (int32_t t : e.tokens) {
      h = extend_prefix_hash(h, t);
      if (e.kind == CacheEventKind::kStored) {
        EXPECT_TRUE(replica_.insert(h).second) << "stored twice";
      } else {
        EXPECT_EQ(replica_.erase(h), 1u) << "removed what was not stored";
      }
    }
    EXPECT_EQ(h, e.hash);
  }

  std::mt19937 rng_;
  KvSlotPool pool_;
  RadixTree tree_;
  std::vector<Tokens> bases_;  // shared "system prompts"
  std::vector<Request> reqs_;
  std::map<Tokens, RefEntry> ref_;  // every cached prefix (length >= 1)
  uint64_t tick_ = 0;
  std::set<uint64_t> replica_;  // the subscriber's view: hashes of cached prefixes
  uint64_t seen_seq_ = 0;
  Counts counts_;
};

class RadixTreeProperty : public testing::TestWithParam<uint32_t> {};

TEST_P(RadixTreeProperty, AgreesWithNaiveReference) {
  Harness h(GetParam(), /*pool_size=*/96, /*feed_capacity=*/1 << 20);
  h.run(4000);
  const Counts& c = h.counts();
  // The run must have exercised the interesting paths.
  EXPECT_GT(c.hits, 0);
  EXPECT_GT(c.duplicates, 0);
  EXPECT_GT(c.evicted, 0);
  EXPECT_GT(c.aborts, 0);
  EXPECT_EQ(c.resyncs, 0);
}

TEST_P(RadixTreeProperty, SubscriberResyncsAfterDrops) {
  Harness h(GetParam() + 1000, /*pool_size=*/64, /*feed_capacity=*/4);
  h.run(3000);
  EXPECT_GT(h.counts().resyncs, 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RadixTreeProperty, testing::Range<uint32_t>(1, 9));

}  // namespace
}  // namespace keel::cache
