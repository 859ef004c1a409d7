// The RateLimit-Policy and RateLimit fields as the limiter's decisions make
// them (ratelimit_headers.h over Limiter::Check): the policy named, what
// writes nothing, in-flight and delayed admissions, and `t` against
// Retry-After over random arrivals, every value parsed as a Structured
// Field. The formatting itself: ratelimit_headers_format_test.cc.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/ratelimit_headers.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/ratelimit_field_parser.h"

namespace mxlimit {
namespace ratelimit_headers_limiter_test {

using ::mxlimit::testing::At;
using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using ::mxlimit::testing::ParsedFields;
using ::mxlimit::testing::ParseFields;

constexpr char kSend[] =
    "/_matrix/client/v3/rooms/!abc:example.org/send/m.room.message/t1";

std::unique_ptr<Limiter> MakeLimiter(const LimiterConfig& config) {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

TEST(RateLimitHeadersLimiterTest, DefaultConfigDescribesMessageSends) {
  LimiterConfig config;  // the built-in policies on
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request send =
      MakeRequest("PUT", kSend, "192.0.2.7", "@alice:example.org");
  // message-send: 12 a minute (T = 5 s), burst 10, so w = 50. It is the
  // tightest of the policies a send meets (the per-address ones have far
  // larger bursts).
  Decision d = limiter->Check(send, At(100));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.quota.policy, "message-send");
  EXPECT_EQ(d.quota.burst, 10);
  EXPECT_EQ(d.quota.interval, std::chrono::seconds(5));
  RateLimitHeaderValues v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("message-send";q=10;w=50)");
  EXPECT_EQ(v.ratelimit, R"("message-send";r=9;t=0)");
  for (int i = 0; i < 9; ++i) d = limiter->Check(send, At(100));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=5)");
  // The eleventh is denied: t is the Retry-After value.
  d = limiter->Check(send, At(100));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(RetryAfterValue(d.retry_after, d.never), "5");
  v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("message-send";q=10;w=50)");
  EXPECT_EQ(v.ratelimit, R"("message-send";r=0;t=5)");
  // 2.5 s later half an interval has come back: still nothing left, and a
  // request fits in 2.5 s, said as 3.
  d = limiter->Check(
      send, MonotonicTime::FromNanoseconds(102 * kSecond + kSecond / 2));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=3)");
  EXPECT_EQ(RetryAfterValue(d.retry_after, d.never), "3");
}

TEST(RateLimitHeadersLimiterTest, TheTightestEnforcingPolicyIsNamed) {
  LimiterConfig config;
  config.builtin_policies = false;
  // Two layers on one route: "wide" has the larger burst but the smaller
  // share left after a few requests.
  Policy narrow = MakePolicy("narrow", "/_matrix/client/v3/publicRooms",
                             Scope::kIp, 10, TimeUnit::kMinute, 5);
  Policy wide = MakePolicy("wide", "/_matrix/client/v3/publicRooms", Scope::kIp,
                           60, TimeUnit::kMinute, 3);
  wide.layer = "other";
  Policy trial = MakePolicy("trial", "/_matrix/client/v3/publicRooms",
                            Scope::kIp, 1, TimeUnit::kHour, 1);
  trial.shadow_mode = true;  // shadow policies are never named
  trial.layer = "trial";
  config.policies = {narrow, wide, trial};
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request r =
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.9");
  Decision d = limiter->Check(r, At(10));
  // narrow: 4 of 5 left; wide: 2 of 3 left, the smaller count.
  EXPECT_EQ(d.remaining, 2);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("wide";r=2;t=0)");
  EXPECT_EQ(RateLimitHeaders(d).policy, R"("wide";q=3;w=3)");
  d = limiter->Check(r, At(10));
  d = limiter->Check(r, At(10));
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("wide";r=0;t=1)");
  // Three seconds on, wide is full again and narrow (T = 6 s) is tightest.
  d = limiter->Check(r, At(13));
  EXPECT_EQ(d.remaining, 1);
  EXPECT_EQ(RateLimitHeaders(d).policy, R"("narrow";q=5;w=30)");
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("narrow";r=1;t=0)");
}

TEST(RateLimitHeadersLimiterTest, ExemptUnlimitedAndBlockedWriteNothing) {
  LimiterConfig config;
  config.builtin_policies = false;
  Policy open = MakePolicy("open", "/_matrix/client/v3/publicRooms", Scope::kIp,
                           1, TimeUnit::kMinute);
  open.rate = Rate::Unlimited();
  Policy blocked = MakePolicy("blocked", "/_matrix/client/v3/login", Scope::kIp,
                              1, TimeUnit::kMinute);
  blocked.rate = Rate::Blocked();
  config.policies = {open, blocked};
  absl::StatusOr<Cidr> exempt = ParseCidr("198.51.100.0/24");
  ASSERT_TRUE(exempt.ok());
  config.exempt.ips = {*exempt};
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  Decision d = limiter->Check(
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.1"), At(1));
  EXPECT_EQ(d.remaining, kUnlimitedRemaining);
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d = limiter->Check(
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1"), At(1));
  ASSERT_TRUE(d.never);
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d = limiter->Check(
      MakeRequest("POST", "/_matrix/client/v3/login", "198.51.100.4"), At(1));
  ASSERT_TRUE(d.exempt);
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
}

TEST(RateLimitHeadersLimiterTest, InFlightDenialNamesConcurrentRequests) {
  LimiterConfig config;
  config.builtin_policies = false;
  Policy one;
  one.name = "one-at-a-time";
  one.match = {"/_matrix/client/v3/publicRooms"};
  one.concurrency = Concurrency{1, std::chrono::seconds(30)};
  config.policies = {one};
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request r =
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.1");
  Decision d = limiter->Check(r, At(1));
  ASSERT_TRUE(d.allowed);
  // Only an in-flight limit applied: no rate, nothing to say.
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d = limiter->Check(r, At(1));
  ASSERT_FALSE(d.allowed);
  RateLimitHeaderValues v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("one-at-a-time";q=1;qu="concurrent-requests")");
  EXPECT_EQ(v.ratelimit, "\"one-at-a-time\";r=0;t=" +
                             RetryAfterValue(d.retry_after, d.never));
}

TEST(RateLimitHeadersLimiterTest, DelayedAdmissionIsDescribedWhenServed) {
  LimiterConfig config;
  config.builtin_policies = false;
  config.policies = {::mxlimit::testing::DelayedPolicy()};  // 10/s, burst 2
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request r = ::mxlimit::testing::Holdable(
      MakeRequest("GET", ::mxlimit::testing::kPublicRooms, "192.0.2.1"));
  limiter->Check(r, At(1));
  limiter->Check(r, At(1));
  const Decision d = limiter->Check(r, At(1));
  ASSERT_TRUE(d.allowed);
  ASSERT_EQ(d.delay, std::chrono::milliseconds(100));
  // As of the moment it is served: the bucket just emptied.
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("rooms-delayed";r=0;t=1)");
}

// Random arrivals against the default config and an awkward rate: on every
// denial `t` is exactly the Retry-After value, the same request passes
// `t` seconds later and not a second earlier, every value parses, and an
// allowed `t` is 0 exactly when something is left.
TEST(RateLimitHeadersLimiterTest, WaitNeverUndercutsRetryAfter) {
  LimiterConfig builtin;
  LimiterConfig awkward;
  // Operator policy for sends: 7 a minute (T = 8.571428571 s), burst 3.
  Policy odd = MakePolicy("odd-sends", "/_matrix/client/v3/rooms/*/send/*",
                          Scope::kUser, 7, TimeUnit::kMinute, 3);
  awkward.policies = {odd};
  std::mt19937_64 rng(33);
  for (const LimiterConfig* config : {&builtin, &awkward}) {
    std::unique_ptr<Limiter> limiter = MakeLimiter(*config);
    ASSERT_NE(limiter, nullptr);
    const Request send =
        MakeRequest("PUT", kSend, "192.0.2.7", "@bob:example.org");
    int64_t now = 1000 * kSecond;
    int denials = 0;
    for (int i = 0; i < 3000; ++i) {
      // Mostly bursts, sometimes a pause of up to ten seconds.
      now += (rng() % 4 == 0) ? static_cast<int64_t>(rng() % (10 * kSecond))
                              : static_cast<int64_t>(rng() % (kSecond / 4));
      const MonotonicTime at = MonotonicTime::FromNanoseconds(now);
      const Decision d = limiter->Check(send, at);
      const RateLimitHeaderValues v = RateLimitHeaders(d);
      const std::optional<ParsedFields> f = ParseFields(v);
      ASSERT_TRUE(f.has_value()) << v.policy << " / " << v.ratelimit;
      EXPECT_EQ(f->w,
                (f->q * d.quota.interval.count() + kSecond - 1) / kSecond);
      if (d.allowed) {
        EXPECT_EQ(f->r, d.remaining);
        EXPECT_EQ(f->t == 0, f->r > 0) << v.ratelimit;
        continue;
      }
      ++denials;
      ASSERT_FALSE(d.never);
      const int64_t retry_after = RetryAfterSeconds(d.retry_after);
      EXPECT_EQ(f->r, 0);
      EXPECT_GE(f->t, retry_after);
      EXPECT_EQ(RetryAfterValue(d.retry_after, d.never), std::to_string(f->t));
      EXPECT_TRUE(
          limiter
              ->Peek(send, MonotonicTime::FromNanoseconds(now + f->t * kSecond))
              .allowed);
      if (f->t > 0) {
        EXPECT_FALSE(limiter
                         ->Peek(send, MonotonicTime::FromNanoseconds(
                                          now + (f->t - 1) * kSecond))
                         .allowed);
      }
    }
    EXPECT_GT(denials, 100);
  }
}

}  // namespace ratelimit_headers_limiter_test
}  // namespace mxlimit
