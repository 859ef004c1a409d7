// GcraEvaluate, GcraApply and GcraRemaining: the two steps that GcraCheck
// composes and the engine's Evaluate and Settle call separately. The
// reference below is the one-step GCRA that rate.h implemented before the
// split, kept verbatim, so a randomized run pins that the steps change nothing.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>

#include "gtest/gtest.h"
#include "mxlimit/rate.h"
#include "tests/testing/rate_helpers.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing_rate::AtNs;
using ::mxlimit::testing_rate::kSec;
using ::mxlimit::testing_rate::MakeRate;

// The single-step GCRA of rate.h before it was split (GcraPeek, then the
// write of GcraCheck), with its own copy of the lead.
int64_t ReferenceLead(const Rate& rate, const GcraState& state, int64_t now) {
  if (state.tat <= now) return 0;
  uint64_t lead = static_cast<uint64_t>(state.tat) - static_cast<uint64_t>(now);
  return static_cast<int64_t>(
      std::min(lead, static_cast<uint64_t>(rate.tolerance_ns())));
}

GcraResult ReferenceCheck(const Rate& rate, GcraState& state, MonotonicTime at,
                          int64_t cost) {
  GcraResult r;
  if (rate.unlimited()) {
    r.allowed = true;
    r.remaining = kUnlimitedRemaining;
    return r;
  }
  if (rate.blocked()) {
    r.never = true;
    return r;
  }
  const int64_t now = internal::ClampNow(at);
  const int64_t lead = ReferenceLead(rate, state, now);
  if (cost > rate.burst()) {
    r.never = true;
  } else {
    cost = std::max<int64_t>(cost, 0);
    const int64_t t = rate.interval_ns();
    const int64_t tau = rate.tolerance_ns();
    const int64_t wait = lead + cost * t - tau;
    if (wait > 0) {
      r.retry_after = std::chrono::nanoseconds(wait);
    } else {
      r.allowed = true;
      r.remaining =
          lead == 0 ? rate.burst() - cost : (tau - (lead + cost * t)) / t;
    }
  }
  if (r.allowed) {
    state.tat = now + lead + cost * rate.interval_ns();
  } else if (lead > 0) {
    state.tat = now + lead;
  }
  return r;
}

TEST(GcraEvaluateTest, FreshBucketHasNoLeadAndTheWholeBurstAsSlack) {
  const Rate rate = MakeRate(10, TimeUnit::kSecond, 4);
  const GcraVerdict v = GcraEvaluate(rate, GcraState{}, AtNs(5 * kSec), 1);
  EXPECT_TRUE(v.allowed);
  EXPECT_FALSE(v.never);
  EXPECT_EQ(v.retry_after.count(), 0);
  EXPECT_EQ(v.lead, 0);
  EXPECT_EQ(v.slack, rate.tolerance_ns() - rate.interval_ns());
  EXPECT_EQ(GcraRemaining(rate, v, 1), 3);
}

TEST(GcraEvaluateTest, LeadIsHowFarTheTatIsAheadOfNowCappedAtTau) {
  const Rate rate = MakeRate(10, TimeUnit::kSecond, 4);  // T 100 ms, tau 400
  const int64_t now = 100 * kSec;
  EXPECT_EQ(GcraEvaluate(rate, GcraState{now - 1}, AtNs(now)).lead, 0);
  EXPECT_EQ(GcraEvaluate(rate, GcraState{now}, AtNs(now)).lead, 0);
  EXPECT_EQ(GcraEvaluate(rate, GcraState{now + 250}, AtNs(now)).lead, 250);
  // Only a clock that stepped back leaves a TAT beyond now + tau.
  EXPECT_EQ(GcraEvaluate(rate, GcraState{now + 3600 * kSec}, AtNs(now)).lead,
            rate.tolerance_ns());
}

TEST(GcraEvaluateTest, DeniedVerdictCarriesTheExactWaitAndNoSlack) {
  const Rate rate = MakeRate(10, TimeUnit::kSecond, 2);
  const int64_t now = 7 * kSec;
  // One interval short of empty plus 30 ns: the next request waits 30 ns.
  const GcraState state{now + rate.tolerance_ns() - rate.interval_ns() + 30};
  const GcraVerdict v = GcraEvaluate(rate, state, AtNs(now));
  EXPECT_FALSE(v.allowed);
  EXPECT_FALSE(v.never);
  EXPECT_EQ(v.retry_after.count(), 30);
  EXPECT_EQ(v.slack, 0);
  EXPECT_EQ(GcraRemaining(rate, v), 0);
  EXPECT_TRUE(GcraEvaluate(rate, state, AtNs(now + 30)).allowed);
}

TEST(GcraEvaluateTest, CostAboveBurstIsNeverButStillReportsTheLead) {
  const Rate rate = MakeRate(10, TimeUnit::kSecond, 3);
  const GcraVerdict v = GcraEvaluate(rate, GcraState{kSec + 77}, AtNs(kSec), 4);
  EXPECT_TRUE(v.never);
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.lead, 77);
}

TEST(GcraEvaluateTest, UnlimitedAndBlockedHaveNoLead) {
  const GcraState far{std::numeric_limits<int64_t>::max()};
  const GcraVerdict open = GcraEvaluate(Rate::Unlimited(), far, AtNs(0), 1000);
  EXPECT_TRUE(open.allowed);
  EXPECT_EQ(open.lead, 0);
  EXPECT_EQ(GcraRemaining(Rate::Unlimited(), open), kUnlimitedRemaining);
  const GcraVerdict shut = GcraEvaluate(Rate::Blocked(), far, AtNs(0));
  EXPECT_TRUE(shut.never);
  EXPECT_EQ(shut.lead, 0);
}

TEST(GcraApplyTest, ChargeMovesTatToNowPlusLeadPlusCost) {
  const Rate rate = MakeRate(10, TimeUnit::kSecond, 5);
  const int64_t now = 9 * kSec;
  GcraState state{now + 120};
  const GcraVerdict v = GcraEvaluate(rate, state, AtNs(now), 2);
  ASSERT_TRUE(v.allowed);
  GcraApply(rate, state, AtNs(now), 2, v, /*charge=*/true);
  EXPECT_EQ(state.tat, now + 120 + 2 * rate.interval_ns());
}

TEST(GcraApplyTest, AllowedButNotChargedLeavesTheBucketAlone) {
  // Another bucket of the same request denied it: nothing is charged.
  const Rate rate = MakeRate(10, TimeUnit::kSecond, 5);
  const int64_t now = 9 * kSec;
  GcraState fresh;
  GcraApply(rate, fresh, AtNs(now), 1, GcraEvaluate(rate, fresh, AtNs(now)),
            false);
  EXPECT_EQ(fresh.tat, GcraState::kFresh);
  GcraState idle{now - kSec};
  GcraApply(rate, idle, AtNs(now), 1, GcraEvaluate(rate, idle, AtNs(now)),
            false);
  EXPECT_EQ(idle.tat, now - kSec);
  GcraState busy{now + 40};
  GcraApply(rate, busy, AtNs(now), 1, GcraEvaluate(rate, busy, AtNs(now)),
            false);
  EXPECT_EQ(busy.tat, now + 40);
}

TEST(GcraApplyTest, UnchargedApplyPersistsAPullBackFromABackwardsClock) {
  const Rate rate = MakeRate(1, TimeUnit::kMinute, 2);
  const int64_t now = 50 * kSec;
  GcraState state{now + 86400 * kSec};  // the clock stepped back a day
  const GcraVerdict v = GcraEvaluate(rate, state, AtNs(now));
  ASSERT_FALSE(v.allowed);
  EXPECT_EQ(v.retry_after.count(), rate.interval_ns());
  GcraApply(rate, state, AtNs(now), 1, v, false);
  EXPECT_EQ(state.tat, now + rate.tolerance_ns());
}

TEST(GcraApplyTest, UnlimitedAndBlockedRatesKeepNoState) {
  GcraState state{123};
  GcraApply(Rate::Unlimited(), state, AtNs(0), 1,
            GcraEvaluate(Rate::Unlimited(), state, AtNs(0)), true);
  GcraApply(Rate::Blocked(), state, AtNs(0), 1,
            GcraEvaluate(Rate::Blocked(), state, AtNs(0)), false);
  EXPECT_EQ(state.tat, 123);
}

TEST(GcraRemainingTest, AgreesWithSlackOverInterval) {
  const Rate rate = MakeRate(7, TimeUnit::kMinute, 9);
  for (int64_t lead : {int64_t{0}, int64_t{1}, rate.interval_ns() - 1,
                       rate.interval_ns(), 3 * rate.interval_ns() + 5}) {
    for (int64_t cost : {0, 1, 3}) {
      const GcraVerdict v =
          GcraEvaluate(rate, GcraState{kSec + lead}, AtNs(kSec), cost);
      ASSERT_TRUE(v.allowed) << lead << " " << cost;
      EXPECT_EQ(GcraRemaining(rate, v, cost), v.slack / rate.interval_ns())
          << lead << " " << cost;
    }
  }
}

// Evaluate then apply (what GcraCheck and the engine do) against the
// one-step reference, over random rates, costs and clocks that jump both
// ways, including the int64 extremes.
TEST(GcraStepsPropertyTest, EvaluateThenApplyMatchesTheOneStepReference) {
  std::mt19937_64 rng(19);
  const Rate rates[] = {MakeRate(1, TimeUnit::kSecond),
                        MakeRate(10, TimeUnit::kSecond, 3),
                        MakeRate(7, TimeUnit::kMinute, 2),
                        MakeRate(3, TimeUnit::kDay, 50),
                        MakeRate(1'000'000'000, TimeUnit::kSecond, 1),
                        Rate::Unlimited(),
                        Rate::Blocked()};
  for (const Rate& rate : rates) {
    GcraState steps;
    GcraState check;
    GcraState reference;
    int64_t now = 0;
    for (int i = 0; i < 20000; ++i) {
      switch (rng() % 8) {
        case 0:
          now -= static_cast<int64_t>(rng() % (1000 * kSec));
          break;
        case 1:
          now = std::numeric_limits<int64_t>::max() -
                static_cast<int64_t>(rng() % 1000);
          break;
        case 2:
          now = 0;
          break;
        default: {
          const int64_t step =
              static_cast<int64_t>(rng() % (2 * rate.interval_ns() + 2));
          now = now > std::numeric_limits<int64_t>::max() - step
                    ? std::numeric_limits<int64_t>::max()
                    : now + step;
        }
      }
      const int64_t cost = static_cast<int64_t>(rng() % 6) - 1;
      const GcraResult want = ReferenceCheck(rate, reference, AtNs(now), cost);
      const GcraResult got = GcraCheck(rate, check, AtNs(now), cost);
      const GcraVerdict v = GcraEvaluate(rate, steps, AtNs(now), cost);
      GcraApply(rate, steps, AtNs(now), cost, v, v.allowed);
      ASSERT_EQ(got.allowed, want.allowed) << i;
      ASSERT_EQ(got.never, want.never) << i;
      ASSERT_EQ(got.retry_after, want.retry_after) << i;
      ASSERT_EQ(got.remaining, want.remaining) << i;
      ASSERT_EQ(v.allowed, want.allowed) << i;
      ASSERT_EQ(GcraRemaining(rate, v, cost), want.remaining) << i;
      ASSERT_EQ(check.tat, reference.tat) << i;
      ASSERT_EQ(steps.tat, reference.tat) << i;
    }
  }
}

}  // namespace
}  // namespace mxlimit
