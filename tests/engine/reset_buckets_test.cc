// ResetBuckets with the built-in policies on: an operator unblocks a user,
// an address or a network now, and nobody else's buckets change.

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::AllowedAtOnce;
using ::mxlimit::testing::At;
using ::mxlimit::testing::MakeRequest;

constexpr std::string_view kResetSend =
    "/_matrix/client/v3/rooms/!r%3Aexample.org/send/m.room.message/t1";
constexpr std::string_view kResetLogin = "/_matrix/client/v3/login";

// Requests allowed at one instant before the first denial.
template <typename L>
void ResetsAUsersBucketsAlone(L& limiter) {
  const Request alice =
      MakeRequest("PUT", kResetSend, "203.0.113.1", "@alice:example.org");
  const Request bob =
      MakeRequest("PUT", kResetSend, "203.0.113.2", "@bob:example.org");
  EXPECT_EQ(AllowedAtOnce(limiter, alice, At(1)), 10);  // message-send's burst
  EXPECT_EQ(AllowedAtOnce(limiter, bob, At(1)), 10);
  absl::StatusOr<size_t> dropped = limiter.ResetBuckets("@alice:example.org");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_GE(*dropped, 1u);
  EXPECT_EQ(AllowedAtOnce(limiter, alice, At(1)), 10);  // a full burst again
  EXPECT_EQ(AllowedAtOnce(limiter, bob, At(1)), 0);     // still drained
}

TEST(ResetBucketsTest, ResetsAUsersBucketsAndNobodyElses) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  ResetsAUsersBucketsAlone(*limiter);
}

TEST(ResetBucketsTest, ResetsAUserOnEveryShard) {
  auto limiter = *ShardedLimiter::Create(LimiterConfig{}, 4);
  ResetsAUsersBucketsAlone(*limiter);
}

TEST(ResetBucketsTest, ResetsALongUserIdKeptAsADigest) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  const std::string user = "@" + std::string(60, 'a') + ":example.org";
  const Request r = MakeRequest("PUT", kResetSend, "203.0.113.1", user);
  EXPECT_EQ(AllowedAtOnce(*limiter, r, At(1)), 10);
  ASSERT_TRUE(limiter->ResetBuckets(user).ok());
  EXPECT_EQ(AllowedAtOnce(*limiter, r, At(1)), 10);
}

TEST(ResetBucketsTest, AnAddressResetsItsOwnAndItsNetworksBuckets) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  const Request one = MakeRequest("POST", kResetLogin, "192.0.2.7");
  const Request two = MakeRequest("POST", kResetLogin, "192.0.2.8");
  EXPECT_EQ(AllowedAtOnce(*limiter, one, At(1)), 5);  // login-per-ip's burst
  EXPECT_EQ(AllowedAtOnce(*limiter, two, At(1)), 5);
  absl::StatusOr<size_t> dropped = limiter->ResetBuckets("192.0.2.7");
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  // Its per-address bucket and its /24's (login-per-network).
  EXPECT_GE(*dropped, 2u);
  EXPECT_EQ(AllowedAtOnce(*limiter, one, At(1)), 5);
  EXPECT_EQ(AllowedAtOnce(*limiter, two, At(1)), 0);  // its own bucket is kept
}

TEST(ResetBucketsTest, ANetworkResetsEveryAddressInsideIt) {
  auto limiter = *ShardedLimiter::Create(LimiterConfig{}, 4);
  const Request one = MakeRequest("POST", kResetLogin, "2001:db8:1::7");
  const Request two = MakeRequest("POST", kResetLogin, "2001:db8:2::8");
  const Request outside = MakeRequest("POST", kResetLogin, "2001:db9::1");
  for (const Request* r : {&one, &two, &outside}) {
    EXPECT_EQ(AllowedAtOnce(*limiter, *r, At(1)), 5);
  }
  ASSERT_TRUE(limiter->ResetBuckets("2001:db8::/32").ok());
  EXPECT_EQ(AllowedAtOnce(*limiter, one, At(1)), 5);
  EXPECT_EQ(AllowedAtOnce(*limiter, two, At(1)), 5);
  EXPECT_EQ(AllowedAtOnce(*limiter, outside, At(1)), 0);
}

TEST(ResetBucketsTest, ABadSubjectIsAnErrorAndChangesNothing) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  const Request r = MakeRequest("POST", kResetLogin, "192.0.2.7");
  EXPECT_EQ(AllowedAtOnce(*limiter, r, At(1)), 5);
  for (const std::string& bad :
       {std::string(), std::string("alice"), std::string("10.0.0.0/33"),
        std::string(size_t{64} * 1024, '@')}) {
    absl::StatusOr<size_t> dropped = limiter->ResetBuckets(bad);
    EXPECT_EQ(dropped.status().code(), absl::StatusCode::kInvalidArgument)
        << bad.substr(0, 20);
  }
  EXPECT_EQ(AllowedAtOnce(*limiter, r, At(1)), 0);
  const Request next = MakeRequest("POST", kResetLogin, "192.0.2.99");
  EXPECT_EQ(AllowedAtOnce(*limiter, next, At(1)), 5);
}

}  // namespace
}  // namespace mxlimit
