#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <algorithm>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "router/policy.h"
#include "router/prefix_index.h"
#include "router/prefix_key.h"

namespace keel::router {
namespace {

// The chained hash is defined by the replica protocol; this value comes from Python's xxhash
// (xxh3_64_intdigest(struct.pack('<i', 1), seed=0)), an independent implementation.
TEST(PrefixKey, TokenHashMatchesTheReplicaDefinition) {
  std::vector<int32_t> t = {1, 2, 3};
  auto h = token_prefix_hashes(t);
  ASSERT_EQ(h.size(), 3u);
  // h = 0; for t in (1, 2, 3): h = xxhash.xxh3_64_intdigest(struct.pack('<i', t), seed=h)
  EXPECT_EQ(h[0], 15781232456890734344ULL);
  EXPECT_EQ(h[1], 13863542679130171436ULL);
  EXPECT_EQ(h[2], 3049955395977128038ULL);
}

TEST(PrefixKey, CharBlocksShareFullBlocksOnly) {
  auto a = char_prefix_hashes("abcdefgh-one", 4);
  auto b = char_prefix_hashes("abcdefgh-two", 4);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], 7248448420886124688ULL);  // xxhash.xxh3_64_intdigest(b'abcd', seed=0)
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
}

// view() (one lock, lockstep searches) must give every candidate what match(), exact_live() and
// n_exact()/n_approx() give it one by one: replicas with live and stale exact sets, approximate sets,
// in-flight, served and announced prompts, one never seen, and prompts that share 0 to all keys.
TEST(PrefixIndex, ViewGivesEachCandidateWhatTheSingleLookupsGive) {
  std::mt19937 rng(7);
  PrefixIndex idx(50'000);
  std::vector<std::vector<int32_t>> systems(6);
  for (auto& s : systems) {
    s.resize(40 + rng() % 200);
    for (auto& t : s) t = static_cast<int32_t>(rng() % 5000);
  }
  auto prompt = [&](size_t sys, size_t extra) {
    auto p = systems[sys % systems.size()];
    p.resize(p.size() - rng() % (p.size() / 2));  // a prefix of the system prompt...
    for (size_t i = 0; i < extra; ++i) p.push_back(static_cast<int32_t>(rng() % 5000));  // ...and its own tail
    return p;
  };
  const std::vector<ReplicaId> ids = {1, 2, 3, 4, 5, 6, 99};  // 99: never seen
  for (ReplicaId r = 1; r <= 6; ++r) {
    if (r % 3 == 0) {  // exact: live for 3, stale for 6 (its routed prompts count too)
      idx.begin_exact(r);
      for (int k = 0; k < 3; ++k) {
        auto p = prompt(r + static_cast<size_t>(k), 10);
        idx.add_exact(r, 0, p);
      }
      if (r == 6) idx.end_exact(r);
    }
    for (int k = 0; k < 3; ++k) idx.record_routed(r, token_prefix_hashes(prompt(r * 2 + static_cast<size_t>(k), 5)));
    auto in_flight = std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(prompt(r + 1, 30)));
    idx.add_in_flight(r, in_flight);
    if (r % 2 == 0) idx.remove_in_flight(r, in_flight, true);  // served: counts as recent
    if (r == 5) idx.add_pending(r, std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(prompt(0, 50))));
  }
  for (int q = 0; q < 200; ++q) {
    const auto keys = q % 17 == 0 ? std::vector<uint64_t>{} : token_prefix_hashes(prompt(rng(), rng() % 40));
    std::vector<PrefixIndex::View> got(ids.size());
    idx.view(ids, keys, got);
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool live = idx.exact_live(ids[i]);
      EXPECT_EQ(got[i].match, idx.match(ids[i], keys)) << "query " << q << " replica " << ids[i];
      EXPECT_EQ(got[i].exact_live, live) << ids[i];
      EXPECT_EQ(got[i].n_entries, live ? idx.n_exact(ids[i]) : idx.n_approx(ids[i])) << ids[i];
    }
  }
  std::vector<PrefixIndex::View> got(ids.size());
  const auto whole = token_prefix_hashes(systems[2]);
  idx.view(ids, whole, got);
  EXPECT_GT(std::max_element(got.begin(), got.end(), [](auto& a, auto& b) { return a.match < b.match; })->match, 0);
}

TEST(PrefixIndex, ApproximateMatchesTheLongestRoutedPrefix) {
  PrefixIndex idx(1000);
  std::vector<int32_t> sys = {5, 6, 7, 8}, q1 = {5, 6, 7, 8, 1, 2}, q2 = {5, 6, 7, 9};
  idx.record_routed(1, token_prefix_hashes(q1));
  EXPECT_EQ(idx.match(1, token_prefix_hashes(q1)), 6);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(sys)), 4);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(q2)), 3);
  EXPECT_EQ(idx.match(2, token_prefix_hashes(q1)), 0);
}

TEST(PrefixIndex, ApproximateEvictsLeastRecentlyRoutedAndStaysPrefixClosed) {
  PrefixIndex idx(10);
  std::vector<int32_t> old_p = {1, 2, 3, 4, 5, 6}, new_p = {9, 8, 7, 6, 5, 4};
  idx.record_routed(1, token_prefix_hashes(old_p));
  idx.record_routed(1, token_prefix_hashes(new_p));  // 12 > 10: the older prompt's last two keys go
  EXPECT_EQ(idx.n_approx(1), 10);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(new_p)), 6);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(old_p)), 4);
  idx.record_routed(1, token_prefix_hashes(std::vector<int32_t>{7, 7, 7, 7, 7}));  // 5 more: the rest of it
  EXPECT_EQ(idx.match(1, token_prefix_hashes(old_p)), 0);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(new_p)), 5);  // then new_p's last key
}

// Routing over the bound costs each call the keys it evicts, not a pass over the whole set: the
// bulk eviction this replaced sorted every entry (tens of ms at the 2^20 default, Session 14). Counted,
// not timed: after every call the set is exactly at the bound and every call's own prompt is held whole.
TEST(PrefixIndex, ApproximateSetStaysAtItsBoundOneCallAtATime) {
  PrefixIndex idx(1000);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    std::vector<int32_t> p(20);
    for (auto& t : p) t = static_cast<int32_t>(rng() % 100000);
    const auto keys = token_prefix_hashes(p);
    idx.record_routed(4, keys);
    ASSERT_EQ(idx.n_approx(4), std::min<int64_t>(1000, 20 * (i + 1)));
    ASSERT_EQ(idx.match(4, keys), 20);
  }
}

TEST(PrefixIndex, ExactReplaysStoredAndRemovedSpans) {
  PrefixIndex idx(1000);
  std::vector<int32_t> a = {1, 2, 3}, b = {4, 5};
  idx.record_routed(7, token_prefix_hashes(std::vector<int32_t>{1}));
  idx.begin_exact(7);
  idx.add_exact(7, 0, a);
  uint64_t ha = token_prefix_hashes(a).back();
  idx.add_exact(7, ha, b);
  std::vector<int32_t> all = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(idx.match(7, token_prefix_hashes(all)), 5);
  idx.remove_exact(7, ha, b);  // the leaf span was evicted
  EXPECT_EQ(idx.match(7, token_prefix_hashes(all)), 3);
  EXPECT_TRUE(idx.exact_live(7));
  idx.end_exact(7);  // stream lost: the last exact view stays, plus what the router routes there
  EXPECT_FALSE(idx.exact_live(7));
  EXPECT_EQ(idx.match(7, token_prefix_hashes(all)), 3);
  std::vector<int32_t> other = {8, 9};
  idx.record_routed(7, token_prefix_hashes(other));
  EXPECT_EQ(idx.match(7, token_prefix_hashes(other)), 2);
  idx.begin_exact(7);  // resubscribed: the fresh snapshot alone
  EXPECT_EQ(idx.match(7, token_prefix_hashes(all)), 0);
  EXPECT_EQ(idx.match(7, token_prefix_hashes(other)), 0);
  idx.add_exact(7, 0, a);
  EXPECT_EQ(idx.match(7, token_prefix_hashes(all)), 3);
}

TEST(PrefixIndex, InFlightPromptsCountBeforeTheFeedReportsThem) {
  PrefixIndex idx(1000);
  idx.begin_exact(3);  // live feed, nothing cached yet
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 9};
  auto keys = std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(a));
  idx.add_in_flight(3, keys);
  EXPECT_EQ(idx.match(3, token_prefix_hashes(b)), 2);
  EXPECT_EQ(idx.match(3, token_prefix_hashes(a)), 4);
  idx.remove_in_flight(3, keys);
  EXPECT_EQ(idx.match(3, token_prefix_hashes(a)), 0);
}

// The replica answers before its feed publishes the stored prefix: a prompt it served keeps counting
// for the grace period, one that failed does not, and after the grace the exact set alone decides.
TEST(PrefixIndex, ServedPromptsCountUntilTheFeedCatchesUp) {
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 7};
  auto keys = std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(a));
  PrefixIndex idx(1000, /*recent_ms=*/60'000);
  idx.begin_exact(3);
  idx.add_in_flight(3, keys);
  idx.remove_in_flight(3, keys, /*served=*/true);
  EXPECT_EQ(idx.match(3, token_prefix_hashes(b)), 3);
  auto failed = std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(a));
  idx.begin_exact(4);
  idx.add_in_flight(4, failed);
  idx.remove_in_flight(4, failed, /*served=*/false);
  EXPECT_EQ(idx.match(4, token_prefix_hashes(b)), 0);

  PrefixIndex expired(1000, /*recent_ms=*/0);  // no grace: only the feed's set
  expired.begin_exact(3);
  expired.add_in_flight(3, keys);
  expired.remove_in_flight(3, keys, /*served=*/true);
  EXPECT_EQ(expired.match(3, token_prefix_hashes(b)), 0);
  expired.add_exact(3, 0, a);
  EXPECT_EQ(expired.match(3, token_prefix_hashes(b)), 3);
}

using KeysPtr = PrefixIndex::KeysPtr;
KeysPtr keys_of(const std::vector<int32_t>& t) {
  return std::make_shared<const std::vector<uint64_t>>(token_prefix_hashes(t));
}

// A prompt the replica announced (`event: pending`) counts as held there until its stored span
// arrives; then the exact set holds it and the pending entry is gone. A stored span of another prompt
// (ending outside this one) leaves it pending.
TEST(PrefixIndex, PendingCountsUntilItsStoredSpanArrives) {
  std::vector<int32_t> a = {1, 2, 3, 4, 5}, follower = {1, 2, 3, 4, 9}, other = {1, 2, 8};
  PrefixIndex idx(1000, /*recent_ms=*/0, /*pending_ms=*/60'000);
  idx.begin_exact(2);
  idx.add_exact(2, 0, std::vector<int32_t>{1, 2});  // cached before: a's prefill stores only {3, 4, 5}
  EXPECT_EQ(idx.match(2, token_prefix_hashes(follower)), 2);
  idx.add_pending(2, keys_of(a));
  EXPECT_EQ(idx.n_pending(2), 1);
  EXPECT_EQ(idx.match(2, token_prefix_hashes(follower)), 4);
  EXPECT_EQ(idx.match(3, token_prefix_hashes(follower)), 0);  // another replica: not held
  idx.add_exact(2, 0, other);                                 // another prompt's span
  EXPECT_EQ(idx.n_pending(2), 1);
  // a's prefill stored after the existing node: the span ends inside a.
  idx.add_exact(2, token_prefix_hashes(std::vector<int32_t>{1, 2}).back(), std::vector<int32_t>{3, 4, 5});
  EXPECT_EQ(idx.n_pending(2), 0);
  EXPECT_EQ(idx.match(2, token_prefix_hashes(follower)), 4);  // now from the exact set
  idx.remove_exact(2, token_prefix_hashes(std::vector<int32_t>{1, 2}).back(), std::vector<int32_t>{3, 4, 5});
  EXPECT_EQ(idx.match(2, token_prefix_hashes(follower)), 2);  // evicted: nothing pending props it up
}

// A stored span clears the announced prompt it ends inside: looked up at the span's depth when the
// parent's depth is known (from the root, or a stored parent), searched for when it is not.
TEST(PrefixIndex, PendingIsClearedByItsSpanWhetherOrNotTheParentIsKnown) {
  std::vector<int32_t> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9}, c = {7, 8, 9, 10};
  PrefixIndex idx(1000, /*recent_ms=*/0, /*pending_ms=*/60'000);
  idx.begin_exact(2);
  idx.add_pending(2, keys_of(a));
  idx.add_pending(2, keys_of(b));
  idx.add_pending(2, keys_of(c));
  // a's {4, 5} under a parent the router never saw stored ({1, 2, 3}): depth unknown, found by search.
  idx.add_exact(2, token_prefix_hashes(std::vector<int32_t>{1, 2, 3}).back(), std::vector<int32_t>{4, 5});
  EXPECT_EQ(idx.n_pending(2), 2);
  idx.add_exact(2, 0, std::vector<int32_t>{7, 8});     // from the root: depth 2, ends inside b and c
  EXPECT_EQ(idx.n_pending(2), 0);
  idx.add_pending(2, keys_of(c));
  // {9, 10} under the stored {7, 8} (depth 2): ends at c's last key (depth 4), which b (3 keys) lacks.
  idx.add_pending(2, keys_of(b));
  idx.add_exact(2, token_prefix_hashes(std::vector<int32_t>{7, 8}).back(), std::vector<int32_t>{9, 10});
  EXPECT_EQ(idx.n_pending(2), 1);  // c cleared, b still pending
  EXPECT_EQ(idx.match(2, token_prefix_hashes(c)), 4);
}

// match()'s `stored` count: the set and the recently served prompts, not a prompt in flight nor one
// the replica announced (its prefill not done): the few-holders rule's "still prefilling".
TEST(PrefixIndex, StoredCountsOnlyWhatThePrefillStored) {
  std::vector<int32_t> a = {1, 2, 3, 4, 5}, follower = {1, 2, 3, 4, 9};
  PrefixIndex idx(1000, /*recent_ms=*/60'000, /*pending_ms=*/60'000);
  idx.begin_exact(2);
  idx.add_exact(2, 0, std::vector<int32_t>{1, 2});
  int64_t stored = -1;
  auto sent = keys_of(a);
  idx.add_in_flight(2, sent);
  EXPECT_EQ(idx.match(2, token_prefix_hashes(follower), &stored), 4);
  EXPECT_EQ(stored, 2);
  idx.add_pending(3, keys_of(a));  // another replica announced it (another router's request)
  EXPECT_EQ(idx.match(3, token_prefix_hashes(follower), &stored), 4);
  EXPECT_EQ(stored, 0);
  idx.remove_in_flight(2, sent, /*served=*/true);  // answered: stored there, the feed not caught up
  EXPECT_EQ(idx.match(2, token_prefix_hashes(follower), &stored), 4);
  EXPECT_EQ(stored, 4);
  EXPECT_EQ(idx.match(9, token_prefix_hashes(follower), &stored), 0);  // unknown replica
  EXPECT_EQ(stored, 0);
}

// An announced prompt whose stored span never comes (aborted, or it stored nothing new) stops counting
// after pending_ms; the per-replica list keeps only the newest kMaxPending.
TEST(PrefixIndex, PendingExpiresAndIsBounded) {
  std::vector<int32_t> a = {1, 2, 3, 4};
  PrefixIndex idx(1000, 0, /*pending_ms=*/1);
  idx.begin_exact(1);
  idx.add_pending(1, keys_of(a));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(idx.n_pending(1), 0);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(a)), 0);

  PrefixIndex off(1000, 0, /*pending_ms=*/0);  // pending disabled
  off.add_pending(1, keys_of(a));
  EXPECT_EQ(off.match(1, token_prefix_hashes(a)), 0);

  PrefixIndex bounded(1000, 0, 60'000);
  for (int32_t g = 0; g < static_cast<int32_t>(PrefixIndex::kMaxPending) + 5; ++g)
    bounded.add_pending(1, keys_of({g, 100, 101}));
  EXPECT_EQ(bounded.n_pending(1), static_cast<int64_t>(PrefixIndex::kMaxPending));
  EXPECT_EQ(bounded.match(1, token_prefix_hashes(std::vector<int32_t>{0, 100, 101})), 0);  // the oldest went
  const int32_t newest = static_cast<int32_t>(PrefixIndex::kMaxPending) + 4;
  EXPECT_EQ(bounded.match(1, token_prefix_hashes(std::vector<int32_t>{newest, 100, 101})), 3);
}

// The burst guard's fleet-wide count: prompts every replica announced since a time, whose key at the
// group's index is the group's; other groups, shorter prompts and older announcements do not count;
// at most kMaxAnnounced are kept.
TEST(PrefixIndex, AnnouncedSinceCountsAGroupsPromptsOnEveryReplica) {
  PrefixIndex idx(1000, 0, 60'000);
  const auto group = token_prefix_hashes(std::vector<int32_t>{5, 6, 7});
  idx.add_pending(1, keys_of({5, 6, 7, 1}));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const int64_t later = now_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  idx.add_pending(2, keys_of({5, 6, 7, 2}));
  idx.add_pending(3, keys_of({5, 6, 7}));
  idx.add_pending(1, keys_of({5, 6, 8, 2}));  // another group
  idx.add_pending(2, keys_of({5, 6}));        // too short to have the key
  EXPECT_EQ(idx.announced_since(2, group[2], 0), 3);
  EXPECT_EQ(idx.announced_since(2, group[2], later), 2);
  EXPECT_EQ(idx.announced_since(1, group[1], 0), 5);  // by a shorter group key all five share it
  EXPECT_EQ(idx.announced_since(2, group[1], 0), 0);  // a key at another index is no match

  PrefixIndex bounded(1000, 0, 60'000);
  for (size_t i = 0; i < PrefixIndex::kMaxAnnounced + 10; ++i)
    bounded.add_pending(static_cast<ReplicaId>(i % 4), keys_of({5, 6, 7}));
  EXPECT_EQ(bounded.announced_since(2, group[2], 0), static_cast<int64_t>(PrefixIndex::kMaxAnnounced));
}

// Two replicas each announce a prompt of one group (two router instances placed it twice): both hold
// it, each until its own stored span arrives; one replica's stored span does not clear the other's.
TEST(PrefixIndex, PendingOnTwoReplicasIsKeptPerReplica) {
  std::vector<int32_t> a = {7, 7, 1}, b = {7, 7, 2}, next = {7, 7, 3};
  PrefixIndex idx(1000, 0, 60'000);
  idx.begin_exact(1);
  idx.begin_exact(2);
  idx.add_pending(1, keys_of(a));
  idx.add_pending(2, keys_of(b));
  EXPECT_EQ(idx.match(1, token_prefix_hashes(next)), 2);
  EXPECT_EQ(idx.match(2, token_prefix_hashes(next)), 2);
  idx.add_exact(1, 0, a);
  EXPECT_EQ(idx.n_pending(1), 0);
  EXPECT_EQ(idx.n_pending(2), 1);
  EXPECT_EQ(idx.match(2, token_prefix_hashes(next)), 2);
  idx.forget(2);
  EXPECT_EQ(idx.n_pending(2), 0);
}

// Round 3's failure, two router instances on one feed: instance A sends a new group's first request to
// replica 2; before its prefill ends, instance B (which did not send it, so has nothing in flight)
// gets the group's second request. Without pending B sees no holder and picks by load (another
// replica: a copy); with replica 2's pending event both instances' indexes hold the prefix there and B
// picks replica 2 too.
TEST(PrefixIndex, SecondInstancePicksTheReplicaPrefillingTheGroup) {
  std::vector<int32_t> first = {3, 1, 4, 1, 5, 9, 2, 6, 10}, second = {3, 1, 4, 1, 5, 9, 2, 6, 11};
  constexpr int kReplicas = 4;
  auto pick = [&](const PrefixIndex& idx, const std::vector<int32_t>& prompt, std::vector<int64_t> load) {
    auto policy = make_cache_aware({});
    auto keys = token_prefix_hashes(prompt);
    std::vector<CandidateView> c(kReplicas);
    for (int r = 0; r < kReplicas; ++r) {
      c[static_cast<size_t>(r)] = {
          .load = load[static_cast<size_t>(r)], .match = idx.match(r, keys), .free_cache = 1000};
    }
    return policy->pick({.n_keys = static_cast<int64_t>(keys.size())}, c).index;
  };
  // Replica 2 is the one the first request went to, so it reports one request more (external load).
  const std::vector<int64_t> load = {0, 0, 1, 0};
  PrefixIndex a(1000, 0, 60'000), b(1000, 0, 60'000), b_without(1000, 0, 0);
  for (PrefixIndex* idx : {&a, &b, &b_without}) {
    for (int r = 0; r < kReplicas; ++r) idx->begin_exact(r);
  }
  a.add_in_flight(2, keys_of(first));  // A's own record of what it sent
  // Replica 2's feed announces the admitted prompt to every subscriber (what cache_feed.cc does).
  for (PrefixIndex* idx : {&a, &b, &b_without}) idx->add_pending(2, keys_of(first));
  EXPECT_EQ(pick(a, second, load), 2);
  EXPECT_EQ(pick(b, second, load), 2);
  EXPECT_NE(pick(b_without, second, load), 2);  // the round-3 copy
}

}  // namespace
}  // namespace keel::router
