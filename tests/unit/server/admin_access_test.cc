// Admin API access: the key when one is set, else loopback clients only.
#include "server/http/admin_access.h"

#include <gtest/gtest.h>

namespace keel::server::http {
namespace {

TEST(AdminAccess, WithAKeyOnlyTheExactBearerPasses) {
  EXPECT_EQ(admin_access("s3cret", "Bearer s3cret", "203.0.113.9"), AdminAccess::kAllowed);
  EXPECT_EQ(admin_access("s3cret", "Bearer s3cret", "127.0.0.1"), AdminAccess::kAllowed);
  EXPECT_EQ(admin_access("s3cret", "", "127.0.0.1"), AdminAccess::kUnauthorized);  // the key, even on loopback
  EXPECT_EQ(admin_access("s3cret", "Bearer s3cre", "127.0.0.1"), AdminAccess::kUnauthorized);
  EXPECT_EQ(admin_access("s3cret", "Bearer s3cretx", "127.0.0.1"), AdminAccess::kUnauthorized);
  EXPECT_EQ(admin_access("s3cret", "bearer s3cret", "127.0.0.1"), AdminAccess::kUnauthorized);
  EXPECT_EQ(admin_access("s3cret", "s3cret", "127.0.0.1"), AdminAccess::kUnauthorized);
}

TEST(AdminAccess, WithoutAKeyOnlyLoopbackClients) {
  for (const char* ip : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_EQ(admin_access("", "", ip), AdminAccess::kAllowed) << ip;
  }
  for (const char* ip : {"10.0.0.1", "192.168.1.2", "203.0.113.9", "::ffff:10.0.0.1", "fe80::1", "2001:db8::1",
                         "0.0.0.0", "", "not an address"}) {
    EXPECT_EQ(admin_access("", "Bearer anything", ip), AdminAccess::kForbidden) << ip;
  }
}

}  // namespace
}  // namespace keel::server::http
