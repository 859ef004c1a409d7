#include "mxlimit/rate.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/rate_helpers.h"

namespace mxlimit {
namespace {

using std::chrono::nanoseconds;
using ::testing::HasSubstr;

using ::mxlimit::testing_rate::AtNs;
using ::mxlimit::testing_rate::kSec;
using ::mxlimit::testing_rate::MakeRate;

TEST(RateTest, IntervalIsUnitDividedByRequests) {
  EXPECT_EQ(MakeRate(10, TimeUnit::kSecond).interval_ns(), kSec / 10);
  EXPECT_EQ(MakeRate(1, TimeUnit::kMinute).interval_ns(), 60 * kSec);
  EXPECT_EQ(MakeRate(2, TimeUnit::kHour).interval_ns(), 1800 * kSec);
  EXPECT_EQ(MakeRate(1, TimeUnit::kDay).interval_ns(), 86400 * kSec);
}

TEST(RateTest, BurstDefaultsToRequestsPerUnit) {
  EXPECT_EQ(MakeRate(7, TimeUnit::kMinute).burst(), 7);
  EXPECT_EQ(MakeRate(7, TimeUnit::kMinute, 3).burst(), 3);
}

TEST(RateTest, RejectsOutOfRangeValuesNamingTheField) {
  absl::StatusOr<Rate> negative = Rate::Create(-1, TimeUnit::kSecond);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("requests_per_unit"));
  EXPECT_THAT(negative.status().message(), HasSubstr("-1"));

  absl::StatusOr<Rate> zero_burst = Rate::Create(5, TimeUnit::kSecond, 0);
  ASSERT_FALSE(zero_burst.ok());
  EXPECT_THAT(zero_burst.status().message(), HasSubstr("burst"));

  absl::StatusOr<Rate> huge =
      Rate::Create(Rate::kMaxRequestsPerUnit + 1, TimeUnit::kSecond);
  EXPECT_FALSE(huge.ok());

  // A burst of a billion at one per day would overflow the TAT arithmetic.
  absl::StatusOr<Rate> too_long =
      Rate::Create(1, TimeUnit::kDay, Rate::kMaxBurst);
  ASSERT_FALSE(too_long.ok());
  EXPECT_THAT(too_long.status().message(), HasSubstr("burst"));
}

TEST(RateTest, ParsesUnitNames) {
  EXPECT_EQ(ParseTimeUnit("minute"), TimeUnit::kMinute);
  EXPECT_EQ(ParseTimeUnit("day"), TimeUnit::kDay);
  EXPECT_EQ(ParseTimeUnit("Minute"), std::nullopt);
  EXPECT_EQ(ParseTimeUnit("week"), std::nullopt);
  EXPECT_EQ(MakeRate(10, TimeUnit::kMinute, 3).ToString(), "10/minute burst 3");
}

TEST(GcraTest, FreshBucketAllowsBurstThenOnePerInterval) {
  Rate rate = MakeRate(1, TimeUnit::kSecond, 3);
  GcraState s;
  for (int i = 0; i < 3; ++i) {
    GcraResult r = GcraCheck(rate, s, AtNs(0));
    EXPECT_TRUE(r.allowed) << i;
    EXPECT_EQ(r.remaining, 2 - i);
  }
  GcraResult denied = GcraCheck(rate, s, AtNs(0));
  EXPECT_FALSE(denied.allowed);
  EXPECT_FALSE(denied.never);
  EXPECT_EQ(denied.retry_after, nanoseconds(kSec));
  // Steady state: exactly one more per second.
  for (int sec = 1; sec <= 5; ++sec) {
    EXPECT_TRUE(GcraCheck(rate, s, AtNs(sec * kSec)).allowed) << sec;
    EXPECT_FALSE(GcraCheck(rate, s, AtNs(sec * kSec)).allowed) << sec;
  }
}

TEST(GcraTest, RetryAfterIsExactToTheNanosecond) {
  Rate rate = MakeRate(10, TimeUnit::kMinute, 2);  // T = 6 s
  GcraState s;
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(0)).allowed);
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(0)).allowed);
  GcraResult denied = GcraCheck(rate, s, AtNs(1 * kSec));
  ASSERT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after, nanoseconds(5 * kSec));
  const int64_t retry_at = 1 * kSec + denied.retry_after.count();
  GcraResult early = GcraCheck(rate, s, AtNs(retry_at - 1));
  EXPECT_FALSE(early.allowed);
  EXPECT_EQ(early.retry_after, nanoseconds(1));
  EXPECT_TRUE(GcraCheck(rate, s, AtNs(retry_at)).allowed);
}

TEST(GcraTest, DenialChangesNoState) {
  Rate rate = MakeRate(1, TimeUnit::kSecond, 1);
  GcraState s;
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(0)).allowed);
  const GcraState before = s;
  for (int i = 0; i < 100; ++i)
    EXPECT_FALSE(GcraCheck(rate, s, AtNs(i)).allowed);
  EXPECT_EQ(s.tat, before.tat);
  EXPECT_TRUE(GcraCheck(rate, s, AtNs(kSec)).allowed);
}

TEST(GcraTest, CostIsAllOrNothing) {
  Rate rate = MakeRate(1, TimeUnit::kSecond, 5);
  GcraState s;
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(0), 3).allowed);
  GcraResult r = GcraCheck(rate, s, AtNs(0), 3);  // only 2 left
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.retry_after, nanoseconds(kSec));
  EXPECT_TRUE(GcraCheck(rate, s, AtNs(0), 2).allowed);
  EXPECT_FALSE(GcraCheck(rate, s, AtNs(0), 1).allowed);
}

TEST(GcraTest, CostAboveBurstIsNeverRatherThanAWait) {
  Rate rate = MakeRate(100, TimeUnit::kSecond, 5);
  GcraState s;
  GcraResult r = GcraCheck(rate, s, AtNs(0), 6);
  EXPECT_FALSE(r.allowed);
  EXPECT_TRUE(r.never);
  EXPECT_EQ(r.retry_after, nanoseconds(0));
  EXPECT_EQ(s.tat, GcraState::kFresh);
  EXPECT_TRUE(GcraCheck(rate, s, AtNs(0), 5).allowed);
}

TEST(GcraTest, BlockedDeniesEverythingAndUnlimitedAllowsEverything) {
  GcraState s;
  GcraResult blocked = GcraCheck(Rate::Blocked(), s, AtNs(0));
  EXPECT_FALSE(blocked.allowed);
  EXPECT_TRUE(blocked.never);
  ASSERT_TRUE(Rate::Create(0, TimeUnit::kMinute).ok());
  EXPECT_TRUE(Rate::Create(0, TimeUnit::kMinute)->blocked());
  // A blocked rate takes no burst (the YAML loader reports the same).
  absl::StatusOr<Rate> with_burst = Rate::Create(0, TimeUnit::kMinute, 5);
  ASSERT_FALSE(with_burst.ok());
  EXPECT_EQ(with_burst.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with_burst.status().message(),
            "burst: got 5, but requests_per_unit is 0, which blocks every "
            "request: a blocked policy has no burst; remove it");
  for (int i = 0; i < 1000; ++i) {
    GcraResult r = GcraCheck(Rate::Unlimited(), s, AtNs(0), 1000);
    ASSERT_TRUE(r.allowed);
    EXPECT_EQ(r.remaining, kUnlimitedRemaining);
  }
}

TEST(GcraTest, ClockGoingBackwardsGrantsNothing) {
  Rate rate = MakeRate(1, TimeUnit::kSecond, 2);
  GcraState s;
  const int64_t t0 = 1000 * kSec;
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(t0)).allowed);
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(t0)).allowed);
  // Back by a second, by a day: still empty.
  EXPECT_FALSE(GcraCheck(rate, s, AtNs(t0 - kSec)).allowed);
  GcraResult day_back = GcraCheck(rate, s, AtNs(t0 - 86400 * kSec));
  EXPECT_FALSE(day_back.allowed);
  // The wait never exceeds tau (burst * T), whatever the jump.
  EXPECT_GT(day_back.retry_after, nanoseconds(0));
  EXPECT_LE(day_back.retry_after, nanoseconds(rate.tolerance_ns()));
  // And the reported wait is honoured on the new timeline.
  const int64_t retry_at = t0 - 86400 * kSec + day_back.retry_after.count();
  EXPECT_FALSE(GcraCheck(rate, s, AtNs(retry_at - 1)).allowed);
  EXPECT_TRUE(GcraCheck(rate, s, AtNs(retry_at)).allowed);
}

TEST(GcraTest, GapsOfYearsAndInt64ExtremesDoNotOverflow) {
  Rate rate = MakeRate(5, TimeUnit::kSecond, 5);
  GcraState s;
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(GcraCheck(rate, s, AtNs(kMin)).allowed);
  // Years later: a full bucket, not more.
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    allowed +=
        GcraCheck(rate, s, AtNs(kMin + 200LL * 365 * 86400 * kSec)).allowed;
  }
  EXPECT_EQ(allowed, 5);
  GcraState t;
  allowed = 0;
  for (int i = 0; i < 10; ++i)
    allowed += GcraCheck(rate, t, AtNs(kMax)).allowed;
  EXPECT_EQ(allowed, 5);
  GcraResult r = GcraCheck(rate, t, AtNs(kMax));
  EXPECT_FALSE(r.allowed);
  EXPECT_GE(r.retry_after, nanoseconds(0));
  EXPECT_LE(r.retry_after, nanoseconds(rate.tolerance_ns()));
  // From the far future straight back to the far past: still nothing free.
  EXPECT_FALSE(GcraCheck(rate, t, AtNs(kMin)).allowed);
}

TEST(GcraTest, PeekNeverChargesAndAgreesWithCheck) {
  Rate rate = MakeRate(2, TimeUnit::kSecond, 2);
  GcraState s;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(GcraPeek(rate, s, AtNs(0)).allowed);
  EXPECT_EQ(s.tat, GcraState::kFresh);
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(0)).allowed);
  ASSERT_TRUE(GcraCheck(rate, s, AtNs(0)).allowed);
  GcraResult peek = GcraPeek(rate, s, AtNs(1));
  GcraResult check = GcraCheck(rate, s, AtNs(1));
  EXPECT_EQ(peek.allowed, check.allowed);
  EXPECT_EQ(peek.retry_after, check.retry_after);
}

TEST(GcraTest, ChargeDrainsToEmptyAndNegativeChargeRefundsToFull) {
  Rate rate = MakeRate(1, TimeUnit::kSecond, 3);
  GcraState s;
  GcraCharge(rate, s, AtNs(0), 2);
  EXPECT_EQ(GcraPeek(rate, s, AtNs(0)).remaining, 0);  // one left, 0 after it
  GcraCharge(rate, s, AtNs(0), 100);                   // saturates at empty
  GcraResult denied = GcraPeek(rate, s, AtNs(0));
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after, nanoseconds(kSec));
  GcraCharge(rate, s, AtNs(0), -1);  // refund one
  EXPECT_TRUE(GcraPeek(rate, s, AtNs(0)).allowed);
  GcraCharge(rate, s, AtNs(0), -100);  // refund saturates at full
  EXPECT_TRUE(GcraIsDrained(rate, s, AtNs(0)));
  EXPECT_EQ(GcraPeek(rate, s, AtNs(0)).remaining, 2);
}

// Property: for any arrival sequence, the requests allowed within any window
// [a, a + L] never exceed burst + L / T.
TEST(GcraPropertyTest, AllowedInAnyWindowIsBoundedByBurstPlusRate) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t requests = 1 + rng() % 20;
    const int64_t burst = 1 + rng() % 10;
    Rate rate = MakeRate(requests, TimeUnit::kSecond, burst);
    const int64_t t = rate.interval_ns();
    GcraState s;
    std::vector<int64_t> allowed_at;
    int64_t now = static_cast<int64_t>(rng() % 1000);
    for (int i = 0; i < 3000; ++i) {
      now += static_cast<int64_t>(rng() %
                                  (2 * t / std::max<int64_t>(1, burst) + 1));
      if (GcraCheck(rate, s, AtNs(now)).allowed) allowed_at.push_back(now);
    }
    ASSERT_FALSE(allowed_at.empty());
    for (int64_t window : {t / 2, t, 3 * t, 10 * t, 50 * t}) {
      size_t lo = 0;
      for (size_t hi = 0; hi < allowed_at.size(); ++hi) {
        while (allowed_at[hi] - allowed_at[lo] > window) ++lo;
        const int64_t count = static_cast<int64_t>(hi - lo + 1);
        ASSERT_LE(count, burst + window / t)
            << "trial " << trial << " window " << window;
      }
    }
  }
}

}  // namespace
}  // namespace mxlimit
