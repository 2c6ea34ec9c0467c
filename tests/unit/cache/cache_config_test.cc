#include "cache/cache_config.h"

#include <gtest/gtest.h>

namespace keel::cache {
namespace {

TEST(CacheConfig, ValidateNamesTheField) {
  EXPECT_TRUE(CacheConfig{}.validate().ok());
  Status s = CacheConfig{.kv_tokens = -1}.validate();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kv_tokens"), std::string::npos);
  s = CacheConfig{.kv_memory_fraction = 0.0}.validate();
  EXPECT_NE(s.message().find("kv_memory_fraction"), std::string::npos);
  EXPECT_FALSE(CacheConfig{.kv_memory_fraction = 1.5}.validate().ok());
  EXPECT_FALSE(CacheConfig{.event_queue_capacity = -3}.validate().ok());
}

TEST(CacheConfig, ResolvesFromTokensOrMemoryFraction) {
  // 1 GiB free; SmolLM2-135M's f16 K+V per token: 30 layers x 2 x 3 KV heads x 64 dims x 2 bytes.
  constexpr int64_t kFree = int64_t{1} << 30;
  constexpr int64_t kPerToken = 30 * 2 * 3 * 64 * 2;
  auto by_tokens = CacheConfig{.kv_tokens = 4096}.resolve_kv_slots(kFree, kPerToken);
  ASSERT_TRUE(by_tokens.ok());
  EXPECT_EQ(*by_tokens, 4096);
  auto by_fraction = CacheConfig{.kv_memory_fraction = 0.5}.resolve_kv_slots(kFree, kPerToken);
  ASSERT_TRUE(by_fraction.ok());
  EXPECT_EQ(*by_fraction, (kFree / 2) / kPerToken);
}

TEST(CacheConfig, ResolveRejectsWhatDoesNotFit) {
  auto too_many = CacheConfig{.kv_tokens = 1000}.resolve_kv_slots(999 * 64, 64);
  EXPECT_EQ(too_many.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(too_many.status().message().find("kv_tokens 1000"), std::string::npos);
  EXPECT_TRUE(CacheConfig{.kv_tokens = 1000}.resolve_kv_slots(1000 * 64, 64).ok());
  EXPECT_EQ(CacheConfig{}.resolve_kv_slots(10, 64).status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(CacheConfig{}.resolve_kv_slots(1 << 20, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CacheConfig{.kv_tokens = -5}.resolve_kv_slots(1 << 20, 64).status().code(), ErrorCode::kInvalidArgument);
  // Huge memory caps at the largest slot index.
  auto capped = CacheConfig{.kv_memory_fraction = 1.0}.resolve_kv_slots(int64_t{1} << 50, 2);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(*capped, 2147483647);
}

}  // namespace
}  // namespace keel::cache
