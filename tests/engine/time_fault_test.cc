// Clock faults at the Limiter level: the embedder's monotonic clock jumping
// backwards (by seconds, by days), standing still, and leaping forward by
// years or to the ends of the int64 range. Whatever the clock does, no
// request passes beyond what the burst plus the elapsed time allow, nothing
// crashes, and every retry time lies in [0, period x burst].

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;

constexpr int64_t kDay = 86'400 * kSecond;
constexpr int64_t kYear = 365 * kDay;
// 6 per minute, burst 3: T = 10 s, period x burst (tau) = 30 s.
constexpr int64_t kBurst = 3;
constexpr int64_t kInterval = 10 * kSecond;
constexpr int64_t kTau = kBurst * kInterval;

MonotonicTime Ns(int64_t ns) { return MonotonicTime::FromNanoseconds(ns); }

class TimeFaultTest : public ::testing::Test {
 protected:
  TimeFaultTest() {
    LimiterConfig config;
    config.builtin_policies = false;
    // Both scopes, so the all-or-nothing path sees the faults too.
    config.policies.push_back(MakePolicy("sync-ip", "/_matrix/client/v3/sync",
                                         Scope::kIp, 6, TimeUnit::kMinute,
                                         kBurst));
    config.policies.push_back(MakePolicy("sync-user", "/_matrix/client/v3/sync",
                                         Scope::kUser, 12, TimeUnit::kMinute,
                                         2 * kBurst));
    limiter_ = *Limiter::Create(config);
  }

  // Checks once at `now` and asserts the retry bounds.
  bool Check(int64_t now) {
    const Decision d = limiter_->Check(request_, Ns(now));
    EXPECT_GE(d.retry_after.count(), 0);
    EXPECT_LE(d.retry_after.count(), kTau) << "at " << now;
    EXPECT_FALSE(d.never);
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "sync-ip");
    }
    return d.allowed;
  }

  int CheckMany(int64_t now, int n) {
    int allowed = 0;
    for (int i = 0; i < n; ++i) allowed += Check(now);
    return allowed;
  }

  std::unique_ptr<Limiter> limiter_;
  Request request_ = MakeRequest("GET", "/_matrix/client/v3/sync",
                                 "203.0.113.9", "@alice:example.org");
};

TEST_F(TimeFaultTest, StandingStillGrantsExactlyTheBurst) {
  EXPECT_EQ(CheckMany(1000 * kSecond, 10'000), kBurst);
  // And the retry time is exact: one interval after the burst is spent.
  const Decision d = limiter_->Check(request_, Ns(1000 * kSecond));
  EXPECT_EQ(d.retry_after.count(), kInterval);
}

TEST_F(TimeFaultTest, BackwardsBySecondsGrantsNothing) {
  const int64_t t = 1000 * kSecond;
  EXPECT_EQ(CheckMany(t, kBurst), kBurst);
  int64_t now = t;
  for (int64_t back : {1, 5, 29, 30, 31, 300}) {
    now = t - back * kSecond;
    EXPECT_EQ(CheckMany(now, 10), 0) << back << " s back";
  }
  // The clock's new timeline rules from the last step on: one per interval,
  // no burst for free.
  EXPECT_EQ(CheckMany(now + kInterval - 1, 10), 0);
  EXPECT_EQ(CheckMany(now + kInterval, 10), 1);
  EXPECT_EQ(CheckMany(now + 2 * kInterval, 10), 1);
}

TEST_F(TimeFaultTest, BackwardsByDaysWaitsAtMostTau) {
  const int64_t t = 10 * kDay;
  EXPECT_EQ(CheckMany(t, kBurst), kBurst);
  const int64_t back = t - 3 * kDay;
  const Decision d = limiter_->Check(request_, Ns(back));
  EXPECT_FALSE(d.allowed);
  // The stored state is pulled back to the emptiest legitimate one: the
  // client waits one interval in the new timeline, not three days.
  EXPECT_EQ(d.retry_after.count(), kInterval);
  // From then on the new timeline rules: no burst for free, one per T.
  EXPECT_EQ(CheckMany(back + kInterval - 1, 10), 0);
  EXPECT_EQ(CheckMany(back + kInterval, 10), 1);
  EXPECT_EQ(CheckMany(back + 2 * kInterval, 10), 1);
}

// Regression: the limiter reported a retry of one interval after the clock
// stepped back, but kept the stored state days ahead, so the client was
// denied again at the promised time, until the clock caught up with the old
// timeline. A denial now persists the pull-back, as GcraCheck does.
TEST_F(TimeFaultTest, RetryAfterIsHonouredAfterTheClockStepsBack) {
  const int64_t t = 30 * kDay;
  EXPECT_EQ(CheckMany(t, kBurst), kBurst);
  for (int64_t back : {int64_t{31} * kSecond, kDay, 20 * kDay}) {
    const int64_t now = t - back;
    const Decision d = limiter_->Check(request_, Ns(now));
    ASSERT_FALSE(d.allowed);
    const int64_t retry = d.retry_after.count();
    EXPECT_FALSE(limiter_->Peek(request_, Ns(now + retry - 1)).allowed);
    EXPECT_TRUE(limiter_->Check(request_, Ns(now + retry)).allowed)
        << "clock stepped back " << back / kSecond << " s";
  }
}

TEST_F(TimeFaultTest, ForwardByYearsRefillsToTheBurstOnly) {
  EXPECT_EQ(CheckMany(0, kBurst), kBurst);
  for (int64_t years : {1, 50, 100, 200}) {
    // The forward leap refills the bucket, never past its burst.
    EXPECT_EQ(CheckMany(years * kYear, 100), kBurst) << years << " years";
  }
}

TEST_F(TimeFaultTest, EndsOfTheInt64RangeNeverOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(CheckMany(kMin, 100), kBurst);
  EXPECT_EQ(CheckMany(kMax, 100), kBurst);
  // Near the top, time stands still (see rate.h): nothing more is granted
  // however far the clock runs on.
  EXPECT_EQ(CheckMany(kMax - kYear, 100), 0);
  EXPECT_EQ(CheckMany(kMax, 100), 0);
  // Then all the way back: waits are still bounded by tau.
  EXPECT_EQ(CheckMany(0, 10), 0);
  EXPECT_EQ(CheckMany(kTau, 10), kBurst);
}

// A random walk of the clock: steps forward, standing still, back by seconds
// or days, forward by years. Within every stretch where the clock does not go
// back, the allowed count is at most burst + elapsed / T.
TEST_F(TimeFaultTest, RandomClockWalkNeverGrantsMoreThanBurstPlusElapsed) {
  std::mt19937_64 rng(7);
  int64_t now = 5 * kYear;
  int64_t segment_start = now;
  int64_t allowed_in_segment = 0;
  for (int i = 0; i < 200'000; ++i) {
    const int64_t before = now;
    switch (rng() % 16) {
      case 0:
        now -= static_cast<int64_t>(rng() % 60) * kSecond;
        break;
      case 1:
        now -= static_cast<int64_t>(rng() % 30) * kDay;
        break;
      case 2:
        // Forward by years; once 100 years out, back to the start (the
        // int64 ceiling has its own test).
        now = now < 100 * kYear ? now + static_cast<int64_t>(rng() % 3) * kYear
                                : 5 * kYear;
        break;
      case 3:
      case 4:
      case 5:
        break;  // Standing still.
      default:
        now += static_cast<int64_t>(rng() % (2 * kSecond));
        break;
    }
    if (now < before) {
      segment_start = now;
      allowed_in_segment = 0;
    }
    allowed_in_segment += Check(now);
    ASSERT_LE(allowed_in_segment, kBurst + (now - segment_start) / kInterval)
        << "step " << i;
  }
}

}  // namespace
}  // namespace mxlimit
