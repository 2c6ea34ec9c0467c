// ApproxLru against a plain list-and-set LRU model, and the prefix closure PrefixIndex::match relies on.
#include "router/approx_lru.h"

#include <algorithm>
#include <list>
#include <random>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "router/prefix_key.h"

namespace keel::router {
namespace {

// The model: a list from least to most recent; touching moves the prompt's keys to the back, longest
// first; then the front goes while over the bound.
class ModelLru {
 public:
  explicit ModelLru(size_t max) : max_(max) {}
  void touch(const std::vector<uint64_t>& keys) {
    for (size_t i = keys.size(); i-- > 0;) {
      order_.remove(keys[i]);
      order_.push_back(keys[i]);
    }
    while (order_.size() > max_) order_.pop_front();
  }
  std::vector<uint64_t> keys() const { return {order_.begin(), order_.end()}; }

 private:
  size_t max_;
  std::list<uint64_t> order_;
};

// Prompts of a few shared system prompts with their own tails, as prefix keys of their tokens.
std::vector<uint64_t> random_prompt(std::mt19937& rng) {
  std::vector<int32_t> tokens;
  const int32_t sys = static_cast<int32_t>(rng() % 5);
  const size_t shared = 1 + rng() % 12;
  for (size_t i = 0; i < shared; ++i) tokens.push_back(sys * 100 + static_cast<int32_t>(i));
  const size_t own = rng() % 6;
  for (size_t i = 0; i < own; ++i) tokens.push_back(1000 + static_cast<int32_t>(rng() % 50));
  return token_prefix_hashes(tokens);
}

TEST(ApproxLru, MatchesTheModelAndStaysPrefixClosed) {
  for (size_t max : {1, 7, 40, 300}) {
    std::mt19937 rng(static_cast<uint32_t>(max));
    ApproxLru lru(static_cast<int64_t>(max));
    ModelLru model(max);
    std::vector<std::vector<uint64_t>> seen;
    for (int i = 0; i < 3000; ++i) {
      auto keys = random_prompt(rng);
      lru.touch(keys);
      model.touch(keys);
      seen.push_back(std::move(keys));
      ASSERT_LE(lru.size(), max);
      // Eviction keeps pace with the keys coming in, so the node pool never passes the bound nor
      // reallocates past its reserve (prompts here are longer than the smaller bounds).
      ASSERT_LE(lru.pool_nodes(), max);
      if (i % 100 != 0) continue;
      ASSERT_EQ(lru.keys_oldest_first(), model.keys()) << "max " << max << " step " << i;
      // Every prompt routed so far keeps a prefix of its keys: held keys never follow a missing one.
      for (const auto& prompt : seen) {
        bool missing = false;
        for (uint64_t k : prompt) {
          if (!lru.contains(k)) {
            missing = true;
          } else {
            ASSERT_FALSE(missing) << "max " << max << ": a key is held past a missing prefix";
          }
        }
      }
    }
  }
}

// A full set of a power-of-two bound fills its key map to exactly half: one key over the bound would
// double the map (at the 2^20 default, 24 MB more per replica).
TEST(ApproxLru, AFullSetNeverPassesItsBound) {
  std::mt19937 rng(3);
  ApproxLru lru(256);
  for (int i = 0; i < 2000; ++i) {
    lru.touch(random_prompt(rng));
    ASSERT_LE(lru.size(), 256u);
    ASSERT_LE(lru.pool_nodes(), 256u);
  }
  EXPECT_EQ(lru.size(), 256u);
  EXPECT_EQ(lru.map_capacity(), 512u);
}

TEST(ApproxLru, RetouchingAPromptKeepsItAndEvictsTheOthersTailsFirst) {
  ApproxLru lru(6);
  const std::vector<uint64_t> a = {11, 12, 13, 14}, b = {21, 22, 23};
  lru.touch(a);
  lru.touch(b);  // 7 > 6: a's longest key goes
  EXPECT_EQ(lru.size(), 6u);
  EXPECT_FALSE(lru.contains(14));
  EXPECT_TRUE(lru.contains(13));
  lru.touch(std::vector<uint64_t>{11, 12});  // a's head is the most recent now, its 13 the least
  lru.touch(std::vector<uint64_t>{31});      // so 13 goes, not b's older-routed 23
  EXPECT_FALSE(lru.contains(13));
  EXPECT_TRUE(lru.contains(11) && lru.contains(12) && lru.contains(23) && lru.contains(21));
  EXPECT_EQ(lru.keys_oldest_first(), (std::vector<uint64_t>{23, 22, 21, 12, 11, 31}));
}

}  // namespace
}  // namespace keel::router
