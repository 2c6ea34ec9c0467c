#include "sched/sched_config.h"

#include <gtest/gtest.h>

namespace keel::sched {
namespace {

TEST(SchedConfig, DefaultsAreValid) { EXPECT_TRUE(SchedConfig{}.validate().ok()); }

TEST(SchedConfig, RejectsOutOfRangeFieldsByName) {
  struct Case {
    SchedConfig config;
    const char* field;
  };
  const Case cases[] = {
      {{.kv_tokens = -1}, "kv_tokens"},
      {{.max_batch_tokens = 0}, "max_batch_tokens"},
      {{.prefill_chunk = 0}, "prefill_chunk"},
      {{.max_running = 0}, "max_running"},
      {{.max_batch_tokens = 8, .max_running = 16}, "max_batch_tokens"},
      {{.max_queue = 0}, "max_queue"},
      {{.event_queue_capacity = -5}, "event_queue_capacity"},
  };
  for (const Case& c : cases) {
    Status s = c.config.validate();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << c.field;
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
}

TEST(SchedConfig, PolicyNames) {
  EXPECT_EQ(*parse_policy("fcfs"), Policy::kFcfs);
  EXPECT_EQ(*parse_policy("lpm"), Policy::kLongestPrefix);
  EXPECT_EQ(*parse_policy("longest-prefix"), Policy::kLongestPrefix);
  EXPECT_EQ(parse_policy("random").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(policy_name(Policy::kLongestPrefix), "lpm");
}

}  // namespace
}  // namespace keel::sched
