// Checks left out while they cannot deny (src/policy/idle_checks.h), with
// the built-in policies on: a media download's check of
// `media-download-bytes-per-ip` is left out of Limiter::Check while every
// bucket of it has a byte of room, and made in full once one lacks it. A
// ShardedLimiter never leaves a check out, so it is the reference: both must
// answer every request alike, at the very nanosecond a drained quota's byte
// comes back, after a reload, after a restore and for a tier's own rate.

#include <chrono>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/stats.h"
#include "mxlimit/tiers.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace idle_checks_test {

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakeRequest;

constexpr char kDownload[] =
    "/_matrix/client/v1/media/download/remote.example/abcdef";
constexpr char kQuota[] = "media-download-bytes-per-ip";
constexpr int64_t kMiB = int64_t{1024} * 1024;
const auto kWall =
    std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));

MonotonicTime AtNs(int64_t ns) { return MonotonicTime::FromNanoseconds(ns); }

PolicyCounters CountsOf(const LimiterStats& stats, std::string_view policy) {
  for (const PolicyStats& p : stats.policies) {
    if (p.name == policy) return p.counters;
  }
  ADD_FAILURE() << "no policy " << policy;
  return {};
}

// A Limiter (which leaves idle checks out) beside a ShardedLimiter of the
// same config (which never does).
class Pair {
 public:
  explicit Pair(LimiterConfig config = {}) : config_(std::move(config)) {
    limiter_ = *Limiter::Create(config_);
    sharded_ = *ShardedLimiter::Create(config_, 2);
  }
  Decision Check(const Request& r, MonotonicTime now) {
    const Decision d = limiter_->Check(r, now);
    const Decision s = sharded_->Check(r, now);
    EXPECT_EQ(d.allowed, s.allowed) << r.target << " at " << now.nanoseconds();
    EXPECT_EQ(d.retry_after, s.retry_after) << r.target;
    EXPECT_EQ(d.policy, s.policy) << r.target;
    EXPECT_EQ(d.remaining, s.remaining) << r.target;
    EXPECT_EQ(d.settles, s.settles) << r.target;
    EXPECT_EQ(d.quota.policy, s.quota.policy) << r.target;
    return d;
  }
  void Settle(const Request& r, int64_t bytes, MonotonicTime now) {
    limiter_->Settle(r, Completion{200, bytes}, now);
    sharded_->Settle(r, Completion{200, bytes}, now);
  }
  // Drains `r`'s download quota with one response past it: denied next.
  Decision Drain(const Request& r, MonotonicTime now) {
    EXPECT_TRUE(Check(r, now).allowed);
    Settle(r, 600 * kMiB, now);
    const Decision d = Check(r, now);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.policy, kQuota);
    return d;
  }
  Limiter& limiter() { return *limiter_; }
  ShardedLimiter& sharded() { return *sharded_; }

 private:
  LimiterConfig config_;
  std::unique_ptr<Limiter> limiter_;
  std::unique_ptr<ShardedLimiter> sharded_;
};

TEST(IdleChecksTest, ResolveLeavesTheQuotaOutOnlyWhenTheEngineSaysSo) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  const PolicySet& set = limiter->policies();
  const RouteId route = limiter->normalizer().Normalize("GET", kDownload).id;
  const RequestSubjects subjects{.user = true};
  const PolicySet::Resolution full =
      set.Resolve("GET", route, kDownload, subjects);
  const PolicySet::Resolution idle =
      set.Resolve("GET", route, kDownload, subjects, /*idle_checks=*/true);
  const PolicyId quota = *set.Find(kQuota);
  EXPECT_EQ(full.idled, kNoPolicy);
  EXPECT_FALSE(full.plain);
  ASSERT_EQ(idle.idled, quota);
  // The rest is the full resolution without the quota: the short path.
  EXPECT_TRUE(idle.plain);
  EXPECT_FALSE(idle.weighed);
  ASSERT_EQ(idle.count + 1, full.count);
  size_t i = 0;
  for (const ResolvedPolicy& a : full.all()) {
    if (a.policy == quota) continue;
    EXPECT_EQ(a, idle.applied[i++]);
  }
  // A route without such a policy resolves the same either way.
  const std::string_view send =
      "/_matrix/client/v3/rooms/!r%3Aexample.org/send/m.room.message/t1";
  const RouteId send_route = limiter->normalizer().Normalize("PUT", send).id;
  EXPECT_EQ(set.Resolve("PUT", send_route, send, subjects),
            set.Resolve("PUT", send_route, send, subjects, true));
}

TEST(IdleChecksTest, DownloadsLeftOutStillSettleAndCountAsTheirCheckWould) {
  Pair pair;
  for (int i = 0; i < 600; ++i) {
    const std::string ip = "203.0.113." + std::to_string(i % 50);
    const Request r = MakeRequest("GET", kDownload, ip, "@u:example.org");
    const Decision d = pair.Check(r, At(1));
    // The response must still be reported: it charges the quota.
    EXPECT_TRUE(d.settles);
    if (d.allowed) pair.Settle(r, kMiB, At(1));
  }
  const PolicyCounters a = CountsOf(pair.limiter().Stats(), kQuota);
  const PolicyCounters s = CountsOf(pair.sharded().Stats(), kQuota);
  EXPECT_EQ(a.allowed, s.allowed);
  EXPECT_EQ(a.denied_by_other, s.denied_by_other);
  EXPECT_EQ(a.denied, 0u);
  // One user at one instant: past aggregate-per-user's burst the requests
  // are denied by it, and counted so by the quota, as a check made would.
  EXPECT_GT(a.allowed, 0u);
  EXPECT_GT(a.denied_by_other, 0u);
}

TEST(IdleChecksTest, ADrainedQuotaDeniesUntilTheNanosecondItsByteIsBack) {
  Pair pair;
  const Request heavy = MakeRequest("GET", kDownload, "203.0.113.9");
  const Request other = MakeRequest("GET", kDownload, "198.51.100.7");
  const Decision denied = pair.Drain(heavy, At(10));
  ASSERT_GT(denied.retry_after.count(), 0);
  // Another client is not held back by someone else's quota.
  EXPECT_TRUE(pair.Check(other, At(10)).allowed);
  const int64_t back = At(10).nanoseconds() + denied.retry_after.count();
  const Decision just_before = pair.Check(heavy, AtNs(back - 1));
  EXPECT_FALSE(just_before.allowed);
  EXPECT_EQ(just_before.policy, kQuota);
  EXPECT_EQ(just_before.retry_after.count(), 1);
  EXPECT_TRUE(pair.Check(heavy, AtNs(back)).allowed);
  // Both clients keep being answered alike afterwards.
  for (int i = 0; i < 20; ++i) {
    pair.Check(heavy, AtNs(back + i * kSecond));
    pair.Check(other, AtNs(back + i * kSecond));
  }
}

TEST(IdleChecksTest, AReloadKeepsADrainedQuotaDenying) {
  Pair pair;
  const Request heavy = MakeRequest("GET", kDownload, "203.0.113.9");
  pair.Drain(heavy, At(10));
  ASSERT_TRUE(pair.limiter().Reload(LimiterConfig{}).ok());
  ASSERT_TRUE(pair.sharded().Reload(LimiterConfig{}).ok());
  const Decision d = pair.Check(heavy, At(11));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, kQuota);
}

TEST(IdleChecksTest, ARestoredDrainedQuotaKeepsDenying) {
  Pair pair;
  const Request heavy = MakeRequest("GET", kDownload, "203.0.113.9");
  pair.Drain(heavy, At(10));
  std::ostringstream snapshot;
  ASSERT_TRUE(pair.limiter().Snapshot(snapshot, At(10), kWall).ok());
  Pair restored;
  std::istringstream a(snapshot.str());
  std::istringstream b(snapshot.str());
  ASSERT_TRUE(restored.limiter().Restore(a, At(5), kWall).ok());
  ASSERT_TRUE(restored.sharded().Restore(b, At(5), kWall).ok());
  const Decision d = restored.Check(heavy, At(6));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, kQuota);
}

// A tier's copy of the quota with a far smaller burst: its bucket lacks a
// byte far longer after a drain than the built-in rate would say.
TEST(IdleChecksTest, ATiersOwnRateSetsWhenItsQuotaIsBack) {
  LimiterConfig config;
  config.tiers.tiers = {
      {.name = "metered",
       .policies = {
           {kQuota, *Rate::Create(1000, TimeUnit::kSecond, 1'000'000)}}}};
  config.tiers.networks = {{*ParseCidr("203.0.113.0/24"), "metered"}};
  Pair pair(config);
  const Request metered = MakeRequest("GET", kDownload, "203.0.113.9");
  const Decision denied = pair.Drain(metered, At(10));
  ASSERT_GT(denied.retry_after.count(), 0);
  const int64_t back = At(10).nanoseconds() + denied.retry_after.count();
  EXPECT_FALSE(pair.Check(metered, AtNs(back - 1)).allowed);
  EXPECT_TRUE(pair.Check(metered, AtNs(back)).allowed);
}

}  // namespace idle_checks_test
}  // namespace mxlimit
