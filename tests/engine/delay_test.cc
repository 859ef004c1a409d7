// `on_limit: delay`: a request whose wait is within `max_delay` is admitted
// late, charged as if it arrived after the wait (nginx limit_req without
// nodelay), with the built-in policies on beside it.

#include <chrono>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "mxlimit/decision.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::DelayedPolicy;
using ::mxlimit::testing::Holdable;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using std::chrono::milliseconds;

constexpr const char* kSearch = testing::kPublicRooms;

LimiterConfig ConfigWith(std::vector<Policy> policies) {
  LimiterConfig config;  // built-ins on
  config.policies = std::move(policies);
  return config;
}

MonotonicTime Ms(int64_t ms) { return MonotonicTime::FromMilliseconds(ms); }

template <typename L>
void ExpectGcraDelays(L& limiter) {
  const Request r = Holdable(MakeRequest("GET", kSearch, "203.0.113.5"));
  // The burst passes at once; then each request waits one interval (100 ms)
  // more than the one before, as a GCRA queue does, up to max_delay.
  for (int i = 0; i < 2; ++i) {
    const Decision d = limiter.Check(r, Ms(10'000));
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.delay.count(), 0);
  }
  for (int i = 1; i <= 5; ++i) {
    const Decision d = limiter.Check(r, Ms(10'000));
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.delay, milliseconds(100 * i)) << i;
    EXPECT_EQ(d.policy, "rooms-delayed");
    EXPECT_EQ(d.limited_by, LimitScope::kIp);
  }
  // The next would wait 600 ms: beyond max_delay, denied with that wait.
  const Decision denied = limiter.Check(r, Ms(10'000));
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.delay.count(), 0);
  EXPECT_EQ(denied.retry_after, milliseconds(600));
  // Each delayed request was charged once, at its own later time: 600 ms on,
  // the queue has drained by exactly six intervals, so one passes at once
  // and the next waits again.
  const Decision later = limiter.Check(r, Ms(10'600));
  EXPECT_TRUE(later.allowed);
  EXPECT_EQ(later.delay, milliseconds(0));
  EXPECT_EQ(limiter.Check(r, Ms(10'600)).delay, milliseconds(100));
}

TEST(DelayTest, DelaysFollowTheGcraQueueExactly) {
  auto l = Limiter::Create(ConfigWith({DelayedPolicy()}));
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectGcraDelays(**l);
}

TEST(DelayTest, AShardedLimiterDelaysAlike) {
  auto l = ShardedLimiter::Create(ConfigWith({DelayedPolicy()}), 4);
  ASSERT_TRUE(l.ok()) << l.status();
  ExpectGcraDelays(**l);
}

TEST(DelayTest, PeekReportsTheDelayAndChargesNothing) {
  auto l = *Limiter::Create(ConfigWith({DelayedPolicy()}));
  const Request r = Holdable(MakeRequest("GET", kSearch, "203.0.113.5"));
  l->Check(r, Ms(0));
  l->Check(r, Ms(0));
  for (int i = 0; i < 3; ++i) {
    const Decision peek = l->Peek(r, Ms(0));
    EXPECT_TRUE(peek.allowed);
    EXPECT_EQ(peek.delay, milliseconds(100));
  }
}

TEST(DelayTest, ADenyPolicyDeniingBesideItWins) {
  // A per-user deny policy on the same route, exhausted: the request is
  // denied although the delay policy alone would have admitted it late.
  Policy strict =
      MakePolicy("rooms-user", kSearch, Scope::kUser, 1, TimeUnit::kMinute, 1);
  auto l = *Limiter::Create(ConfigWith({DelayedPolicy(), strict}));
  Request r =
      Holdable(MakeRequest("GET", kSearch, "203.0.113.5", "@a:example.org"));
  EXPECT_TRUE(l->Check(r, Ms(0)).allowed);
  r.user_id = "@b:example.org";
  EXPECT_TRUE(l->Check(r, Ms(0)).allowed);
  r.user_id = "@a:example.org";
  const Decision d = l->Check(r, Ms(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "rooms-user");
  EXPECT_EQ(d.delay.count(), 0);
  // Nothing was charged by the denial: the delay policy still queues the
  // next request one interval on.
  r.user_id = "@c:example.org";
  EXPECT_EQ(l->Check(r, Ms(0)).delay, milliseconds(100));
}

// The default: an embedder that does not say it holds requests never sees a
// delay, so reading only `allowed` stays exact.
TEST(DelayTest, AnEmbedderThatCannotHoldGetsTheDenial) {
  auto l = *Limiter::Create(ConfigWith({DelayedPolicy()}));
  Request r = MakeRequest("GET", kSearch, "203.0.113.5");  // may_delay false
  l->Check(r, Ms(0));
  l->Check(r, Ms(0));
  const Decision d = l->Check(r, Ms(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, milliseconds(100));
  EXPECT_EQ(d.delay.count(), 0);
}

TEST(DelayTest, ValidationNamesTheProblem) {
  Policy p = DelayedPolicy();
  p.max_delay = milliseconds(0);
  EXPECT_NE(OnLimitProblem(p.on_limit, p.max_delay, p.rate), "");
  p.max_delay = std::chrono::seconds(61);
  EXPECT_NE(OnLimitProblem(p.on_limit, p.max_delay, p.rate), "");
  p.max_delay = milliseconds(500);
  p.rate = Rate::Unlimited();
  EXPECT_NE(OnLimitProblem(p.on_limit, p.max_delay, p.rate), "");
  EXPECT_FALSE(Limiter::Create(ConfigWith({p})).ok());
  Policy deny = MakePolicy("d", kSearch, Scope::kIp, 1, TimeUnit::kSecond);
  deny.max_delay = milliseconds(5);
  EXPECT_NE(OnLimitProblem(deny.on_limit, deny.max_delay, deny.rate), "");
}

}  // namespace
}  // namespace mxlimit
