#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

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
  idx.record_routed(1, token_prefix_hashes(new_p));  // 12 > 10: the older prompt goes
  EXPECT_LE(idx.n_approx(1), 10);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(new_p)), 6);
  EXPECT_EQ(idx.match(1, token_prefix_hashes(old_p)), 0);
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

}  // namespace
}  // namespace keel::router
