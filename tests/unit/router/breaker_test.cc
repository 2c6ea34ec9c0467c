#include <gtest/gtest.h>

#include "router/breaker.h"
#include "router/rate_limit.h"
#include "router/tenants.h"

namespace keel::router {
namespace {

TEST(CircuitBreaker, OpensAfterThresholdThenProbesOnceHalfOpen) {
  CircuitBreaker b({.failure_threshold = 3, .open_ms = 100});
  b.record_failure(0);
  b.record_failure(1);
  EXPECT_EQ(b.state(2), BreakerState::kClosed);
  b.record_failure(2);
  EXPECT_EQ(b.state(3), BreakerState::kOpen);
  EXPECT_FALSE(b.allow(50));
  EXPECT_EQ(b.state(102), BreakerState::kHalfOpen);
  EXPECT_TRUE(b.allow(102));   // the one probe
  EXPECT_FALSE(b.allow(103));  // no second probe while it runs
  b.record_failure(104);       // probe failed: open again for a full period
  EXPECT_EQ(b.state(150), BreakerState::kOpen);
  EXPECT_TRUE(b.allow(205));
  b.record_success();
  EXPECT_EQ(b.state(206), BreakerState::kClosed);
  EXPECT_EQ(b.n_opened(), 1);
}

TEST(CircuitBreaker, SuccessResetsTheFailureCount) {
  CircuitBreaker b({.failure_threshold = 2, .open_ms = 100});
  b.record_failure(0);
  b.record_success();
  b.record_failure(1);
  EXPECT_EQ(b.state(2), BreakerState::kClosed);
}

TEST(TokenBucket, AllowsBurstThenRefillsAtRate) {
  TokenBucket t(2.0, 3.0);  // 2/s, burst 3
  EXPECT_EQ(t.try_take(0), 0);
  EXPECT_EQ(t.try_take(0), 0);
  EXPECT_EQ(t.try_take(0), 0);
  EXPECT_EQ(t.try_take(0), 1);          // empty: a token in 0.5 s -> Retry-After 1
  EXPECT_EQ(t.try_take(500'000), 0);    // one token back after 0.5 s
  EXPECT_GT(t.try_take(500'000), 0);
}

// A rate so small that the wait overflows an int64 (found by router_config_fuzz under UBSan): capped.
TEST(TokenBucket, ATinyRateGivesTheCappedRetryAfter) {
  TokenBucket t(1e-300, 1.0);
  EXPECT_EQ(t.try_take(0), 0);
  EXPECT_EQ(t.try_take(0), TokenBucket::kMaxRetryAfterS);
  TokenBucket slow(0.25, 1.0);  // one every 4 s: below the cap, exact
  EXPECT_EQ(slow.try_take(0), 0);
  EXPECT_EQ(slow.try_take(0), 4);
}

TEST(Tenants, KeysAreLookedUpByDigestAndConfigErrorsAreClear) {
  // sha256("abc") from Python's hashlib (independent of OpenSSL).
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto t = TenantTable::parse(R"({"tenants": [{"name": "a", "pool": "pa", "rate_per_s": 1, "burst": 1,
                                   "api_keys_sha256": [")" + sha256_hex("key-a") + R"("]}]})");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  KeyEntry* e = (*t)->find_key("key-a");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->tenant->pool, "pa");
  EXPECT_EQ((*t)->find_key("key-b"), nullptr);
  EXPECT_EQ((*t)->find_key(sha256_hex("key-a")), nullptr);  // the digest itself is not a key
  EXPECT_FALSE(TenantTable::parse("[]").ok());
  EXPECT_FALSE(TenantTable::parse(R"({"tenants": [{"name": "a", "api_keys_sha256": ["short"]}]})").ok());
  EXPECT_FALSE(TenantTable::parse(R"({"tenants": [{"name": "a", "api_keys_sha256": [], "colour": 1}]})").ok());
  EXPECT_FALSE(TenantTable::parse(R"({"tenants": [{"api_keys_sha256": []}]})").ok());
}

}  // namespace
}  // namespace keel::router
