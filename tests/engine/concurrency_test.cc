// In-flight limits (`Policy::concurrency`): leases handed back in the
// Decision, released, expired and never leaked, with the built-in policies on
// beside them; and the query conditions that tell an initial sync from an
// incremental one.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/decision.h"
#include "mxlimit/limiter.h"
#include "mxlimit/request.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::MakeRequest;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kDirectorySearch[] = "/_matrix/client/v3/publicRooms";

MonotonicTime AtMs(int64_t ms) { return MonotonicTime::FromMilliseconds(ms); }

// At most `limit` room directory searches in flight per address.
Policy InFlight(int limit, milliseconds lease) {
  Policy p;
  p.name = "search-in-flight";
  p.match = {kDirectorySearch};
  p.scope = Scope::kIp;
  p.concurrency = Concurrency{limit, lease};
  return p;
}

std::unique_ptr<Limiter> Make(std::vector<Policy> policies,
                              size_t lease_capacity = 10'000) {
  LimiterConfig config;  // built-ins on
  config.policies = std::move(policies);
  config.tables.lease_capacity = lease_capacity;
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

TEST(ConcurrencyTest, AdmitsUpToTheLimitThenWaitsForTheEarliestLease) {
  std::unique_ptr<Limiter> limiter = Make({InFlight(2, seconds(30))});
  const Request r = MakeRequest("POST", kDirectorySearch, "203.0.113.5");
  const Decision a = limiter->Check(r, AtMs(1'000));
  const Decision b = limiter->Check(r, AtMs(4'000));
  ASSERT_TRUE(a.allowed);
  ASSERT_TRUE(b.allowed);
  EXPECT_EQ(a.leases.count, 1);
  EXPECT_EQ(b.leases.count, 1);
  EXPECT_NE(a.leases.ids[0], b.leases.ids[0]);

  const Decision c = limiter->Check(r, AtMs(10'000));
  EXPECT_FALSE(c.allowed);
  EXPECT_FALSE(c.never);
  EXPECT_EQ(c.policy, "search-in-flight");
  EXPECT_EQ(c.limited_by, LimitScope::kIp);
  EXPECT_EQ(c.leases.count, 0);
  // The first lease ends by itself at 31 s.
  EXPECT_EQ(c.retry_after, milliseconds(21'000));
  // Another address is not affected.
  EXPECT_TRUE(limiter
                  ->Check(MakeRequest("POST", kDirectorySearch, "203.0.113.6"),
                          AtMs(10'000))
                  .allowed);

  // Releasing one lets the next request in at once.
  limiter->Release(a.leases, AtMs(10'000));
  const Decision d = limiter->Check(r, AtMs(10'000));
  EXPECT_TRUE(d.allowed);
  EXPECT_FALSE(limiter->Check(r, AtMs(10'000)).allowed);
  // Releasing twice, or a lease that ended, changes nothing.
  limiter->Release(a.leases, AtMs(10'000));
  EXPECT_FALSE(limiter->Check(r, AtMs(10'000)).allowed);
}

TEST(ConcurrencyTest, ALeaseNeverReleasedEndsByItself) {
  std::unique_ptr<Limiter> limiter = Make({InFlight(1, milliseconds(500))});
  const Request r = MakeRequest("POST", kDirectorySearch, "203.0.113.5");
  const Decision a = limiter->Check(r, AtMs(0));
  ASSERT_TRUE(a.allowed);
  EXPECT_FALSE(limiter->Check(r, AtMs(499)).allowed);
  const Decision b = limiter->Check(r, AtMs(500));
  ASSERT_TRUE(b.allowed);
  // `a` ended; its record now holds `b`'s lease or none: releasing `a` must
  // not free `b`'s slot.
  limiter->Release(a.leases, AtMs(600));
  EXPECT_FALSE(limiter->Check(r, AtMs(600)).allowed);
  limiter->Release(b.leases, AtMs(600));
  EXPECT_TRUE(limiter->Check(r, AtMs(600)).allowed);
}

TEST(ConcurrencyTest, ADeniedRequestTakesNoLeaseAndChargesNothing) {
  // All-or-nothing: a rate policy beside the in-flight one denies; neither
  // the lease nor the rate bucket is taken.
  Policy rate;
  rate.name = "search-rate";
  rate.match = {kDirectorySearch};
  rate.rate = *Rate::Create(1, TimeUnit::kMinute, 1);
  std::unique_ptr<Limiter> limiter = Make({InFlight(5, seconds(60)), rate});
  const Request r = MakeRequest("POST", kDirectorySearch, "203.0.113.5");
  ASSERT_TRUE(limiter->Check(r, AtMs(0)).allowed);
  for (int i = 0; i < 10; ++i) {
    const Decision d = limiter->Check(r, AtMs(1));
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.policy, "search-rate");
  }
  EXPECT_EQ(limiter->Stats().lease_table.size, 1u);
}

TEST(ConcurrencyTest, InitialSyncStormIsCappedWhileIncrementalSyncsFlow) {
  // The built-in initial-sync-in-flight: 2 per user without `since`.
  std::unique_ptr<Limiter> limiter = Make({});
  const std::string user = "@storm:example.org";
  std::vector<Decision> initial;
  int denied = 0;
  for (int i = 0; i < 20; ++i) {
    const Decision d =
        limiter->Check(MakeRequest("GET", "/_matrix/client/v3/sync?filter=0",
                                   "203.0.113.5", user),
                       AtMs(1'000 + i));
    if (d.allowed) {
      initial.push_back(d);
    } else {
      ++denied;
      EXPECT_EQ(d.policy, "initial-sync-in-flight");
      EXPECT_EQ(d.limited_by, LimitScope::kUser);
    }
  }
  EXPECT_EQ(initial.size(), 2u);
  EXPECT_EQ(denied, 18);
  // The decision names the user scope's rate policy, not the in-flight one.
  EXPECT_EQ(initial[0].user_policy,
            *limiter->policies().Find("catch-all-user"));
  // The same user's incremental syncs (and an r0 spelling of one) pass.
  for (int i = 0; i < 20; ++i) {
    const std::string target =
        i % 2 ? "/_matrix/client/r0/sync?since=s" + std::to_string(i)
              : "/_matrix/client/v3/sync?timeout=30000&since=s" +
                    std::to_string(i);
    EXPECT_TRUE(limiter
                    ->Check(MakeRequest("GET", target, "203.0.113.5", user),
                            AtMs(2'000 + i))
                    .allowed)
        << target;
  }
  // Another user's initial sync is not affected.
  EXPECT_TRUE(limiter
                  ->Check(MakeRequest("GET", "/_matrix/client/v3/sync",
                                      "203.0.113.6", "@other:example.org"),
                          AtMs(3'000))
                  .allowed);
  // A `since` hidden behind an escape is still a `since`: incremental.
  EXPECT_TRUE(
      limiter
          ->Check(MakeRequest("GET", "/_matrix/client/v3/sync?%73ince=x",
                              "203.0.113.5", user),
                  AtMs(3'000))
          .allowed);
  // Once one initial sync is done, the next may start.
  limiter->Release(initial[0].leases, AtMs(4'000));
  EXPECT_TRUE(limiter
                  ->Check(MakeRequest("GET", "/_matrix/client/v3/sync",
                                      "203.0.113.5", user),
                          AtMs(4'000))
                  .allowed);
}

TEST(ConcurrencyTest, TimeoutBoundsTheLeaseOfAnEmbedderThatSeesNoEnd) {
  std::unique_ptr<Limiter> limiter = Make({});
  const std::string target = "/_matrix/client/v3/sync?timeout=2000";
  EXPECT_EQ(LeaseForTimeout(target), milliseconds(3'000));
  EXPECT_EQ(LeaseForTimeout("/_matrix/client/v3/sync"), milliseconds(0));
  EXPECT_EQ(LeaseForTimeout("/_matrix/client/v3/sync?timeout=-1"),
            milliseconds(0));
  EXPECT_EQ(LeaseForTimeout("/x?timeout=99999999999999999999999999999"),
            seconds(3601));
  // The name is read as the homeserver reads it, escapes decoded.
  EXPECT_EQ(LeaseForTimeout("/_matrix/client/v3/sync?%74imeout=2000"),
            milliseconds(3'000));
  Request r = MakeRequest("GET", target, "203.0.113.5", "@a:example.org");
  r.max_lease = LeaseForTimeout(target);
  ASSERT_TRUE(limiter->Check(r, AtMs(0)).allowed);
  ASSERT_TRUE(limiter->Check(r, AtMs(0)).allowed);
  const Decision third = limiter->Check(r, AtMs(100));
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.retry_after, milliseconds(2'900));
  EXPECT_TRUE(limiter->Check(r, AtMs(3'000)).allowed);
}

TEST(ConcurrencyTest, FederationInFlightPerOrigin) {
  std::unique_ptr<Limiter> limiter = Make({});
  Request r = MakeRequest("GET", "/_matrix/federation/v1/state_ids/!r:a.org",
                          "198.51.100.7");
  r.origin = "a.org";
  r.origin_verified = true;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter->Check(r, AtMs(0)).allowed);
  const Decision d = limiter->Check(r, AtMs(100));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "federation-in-flight");
  EXPECT_EQ(d.limited_by, LimitScope::kOrigin);
  EXPECT_EQ(d.retry_after, milliseconds(200));
  // Another origin from the same address has its own three.
  Request other = r;
  other.origin = "b.org";
  EXPECT_TRUE(limiter->Check(other, AtMs(100)).allowed);
  EXPECT_TRUE(limiter->Check(r, AtMs(300)).allowed);
}

TEST(ConcurrencyTest, OnLimitDelayQueuesBehindTheLeases) {
  Policy p = InFlight(2, seconds(1));
  p.on_limit = OnLimit::kDelay;
  p.max_delay = seconds(3);
  std::unique_ptr<Limiter> limiter = Make({p});
  Request r = MakeRequest("POST", kDirectorySearch, "203.0.113.5");
  r.may_delay = true;
  // Two at once; then each waits for the slot it will get: both first
  // leases end at 1 s, the two queued behind them (which hold their leases
  // from 1 s to 2 s) at 2 s, and so on, up to max_delay.
  const int64_t want_ms[] = {0, 0, 1'000, 1'000, 2'000, 2'000, 3'000, 3'000};
  for (const int64_t want : want_ms) {
    const Decision d = limiter->Check(r, AtMs(0));
    ASSERT_TRUE(d.allowed) << want;
    EXPECT_EQ(d.delay, milliseconds(want));
    EXPECT_EQ(d.leases.count, 1);
    EXPECT_EQ(d.policy, want > 0 ? "search-in-flight" : "");
  }
  const Decision full = limiter->Check(r, AtMs(0));
  EXPECT_FALSE(full.allowed);
  EXPECT_EQ(full.retry_after, milliseconds(4'000));
  // An embedder that cannot hold requests gets the wait as a denial.
  r.may_delay = false;
  EXPECT_FALSE(limiter->Check(r, AtMs(0)).allowed);
  // At 2.5 s four leases are left, ending at 3, 3, 4 and 4 s: a new request
  // needs three of them to end, at 4 s.
  r.may_delay = true;
  const Decision d = limiter->Check(r, AtMs(2'500));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.delay, milliseconds(1'500));
}

TEST(ConcurrencyTest, FederationInFlightQueuesAFourthRequest) {
  std::unique_ptr<Limiter> limiter = Make({});
  Request r = MakeRequest("GET", "/_matrix/federation/v1/state_ids/!r:a.org",
                          "198.51.100.7");
  r.origin = "a.org";
  r.may_delay = true;
  for (int i = 0; i < 3; ++i) {
    const Decision d = limiter->Check(r, AtMs(0));
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.delay.count(), 0);
  }
  // The three leases end at 300 ms: the fourth starts then.
  const Decision d = limiter->Check(r, AtMs(100));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.delay, milliseconds(200));
  EXPECT_EQ(d.policy, "federation-in-flight");
}

TEST(ConcurrencyTest, AMillionAcquireExpireCyclesLeakNothing) {
  std::unique_ptr<Limiter> limiter = Make({InFlight(3, milliseconds(10))},
                                          /*lease_capacity=*/1'000);
  std::vector<std::string> ips;
  for (int i = 0; i < 2'000; ++i) {
    ips.push_back("10.0." + std::to_string(i / 250) + "." +
                  std::to_string(i % 250));
  }
  std::vector<Request> requests;
  for (const std::string& ip : ips) {
    requests.push_back(MakeRequest("POST", kDirectorySearch, ip));
  }
  int64_t allowed = 0;
  for (int64_t i = 0; i < 1'000'000; ++i) {
    // One new lease per request; time moves 1 ms every 100, so leases end
    // by themselves and the table churns.
    const Decision d =
        limiter->Check(requests[i % requests.size()], AtMs(i / 100));
    allowed += d.allowed ? 1 : 0;
    if (i % 7 == 0) limiter->Release(d.leases, AtMs(i / 100));
  }
  const LimiterStats s = limiter->Stats();
  EXPECT_LE(s.lease_table.size, 1'000u);
  EXPECT_EQ(s.lease_table.admissions, static_cast<uint64_t>(allowed));
  EXPECT_EQ(s.lease_table.admissions, s.lease_table.size +
                                          s.lease_table.evictions +
                                          s.leases_expired + s.leases_released);
  // Long after every lease ended, the next one finds the table empty but
  // for itself.
  ASSERT_TRUE(limiter->Check(requests[0], AtMs(1'000'000)).allowed);
  EXPECT_EQ(limiter->Stats().lease_table.size, 1u);
}

TEST(ConcurrencyTest, QueryPresentAppliesBesideTheRatePolicy) {
  // A conditioned policy is resolved beside the unconditioned one of the
  // same layer and scope, never instead of it.
  Policy lazy;
  lazy.name = "lazy-members";
  lazy.match = {"/_matrix/client/v3/rooms/{roomId}/members"};
  lazy.query_present = {"at"};
  lazy.rate = *Rate::Create(1, TimeUnit::kMinute, 1);
  std::unique_ptr<Limiter> limiter = Make({lazy});
  const std::string path = "/_matrix/client/v3/rooms/!r:a.org/members";
  const std::string path_at = path + "?at=t1";
  const Request with = MakeRequest("GET", path_at, "203.0.113.5", "@a:a.org");
  const Request without = MakeRequest("GET", path, "203.0.113.5", "@a:a.org");
  EXPECT_TRUE(limiter->Check(with, AtMs(0)).allowed);
  const Decision d = limiter->Check(with, AtMs(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "lazy-members");
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(limiter->Check(without, AtMs(0)).allowed) << i;
  }
}

TEST(ConcurrencyTest, AReloadKeepsLeasesOfKeptPoliciesAndDropsTheRest) {
  std::unique_ptr<Limiter> limiter = Make({InFlight(1, seconds(60))});
  const Request r = MakeRequest("POST", kDirectorySearch, "203.0.113.5");
  ASSERT_TRUE(limiter->Check(r, AtMs(0)).allowed);
  // Unchanged: the lease in flight still counts.
  LimiterConfig same;
  same.policies = {InFlight(1, seconds(60))};
  ASSERT_TRUE(limiter->Reload(same).ok());
  EXPECT_FALSE(limiter->Check(r, AtMs(1)).allowed);
  // Replaced by another policy (which takes over the freed bucket token):
  // it starts with no lease in flight, not the old policy's.
  LimiterConfig other;
  Policy renamed = InFlight(1, seconds(60));
  renamed.name = "search-in-flight-2";
  other.policies = {renamed};
  ASSERT_TRUE(limiter->Reload(other).ok());
  const Decision d = limiter->Check(r, AtMs(2));
  EXPECT_TRUE(d.allowed) << d.policy;
  EXPECT_FALSE(limiter->Check(r, AtMs(3)).allowed);
}

// A ShardedLimiter with `per_user` searches in flight per user and, in
// another layer, 50 per address: both halves of a request split over two
// shards have an in-flight check, so they must take the one scope-tables
// lock together.
absl::StatusOr<std::unique_ptr<ShardedLimiter>> ShardedInFlight(int per_user,
                                                                size_t shards) {
  LimiterConfig config;
  Policy user = InFlight(per_user, seconds(30));
  user.scope = Scope::kUser;
  Policy per_ip = InFlight(50, seconds(30));
  per_ip.name = "search-per-address";
  per_ip.layer = "network";
  config.policies = {user, per_ip};
  return ShardedLimiter::Create(config, shards);
}

TEST(ConcurrencyTest, ShardedLimiterSharesLeasesAcrossShards) {
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> limiter =
      ShardedInFlight(2, 8);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  // One user from many addresses (so many IP shards): still two in flight.
  std::vector<Decision> held;
  int denied = 0;
  for (int i = 0; i < 40; ++i) {
    const Decision d = (*limiter)->Check(
        MakeRequest("POST", kDirectorySearch, "10.1.0." + std::to_string(i),
                    "@u:example.org"),
        AtMs(0));
    if (d.allowed) held.push_back(d);
    denied += d.allowed ? 0 : 1;
  }
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(denied, 38);
  (*limiter)->Release(held[0].leases, AtMs(1));
  EXPECT_TRUE((*limiter)
                  ->Check(MakeRequest("POST", kDirectorySearch, "10.9.9.9",
                                      "@u:example.org"),
                          AtMs(1))
                  .allowed);
}

TEST(ConcurrencyThreadsTest, NeverMoreThanTheLimitInFlight) {
  // Four threads check and release one user's in-flight requests (and a
  // per-address in-flight policy beside it) through a ShardedLimiter: the
  // leases held at once never exceed the limit.
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> made = ShardedInFlight(3, 4);
  ASSERT_TRUE(made.ok()) << made.status();
  ShardedLimiter& limiter = **made;
  std::atomic<int> held{0};
  std::atomic<int> most{0};
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string ip = "10.2.0." + std::to_string(t + 1);
      const Request r =
          MakeRequest("POST", kDirectorySearch, ip, "@u:example.org");
      for (int i = 0; i < 2'000; ++i) {
        const Decision d = limiter.Check(r, AtMs(1));
        if (!d.allowed) continue;
        ++admitted;
        const int now_held = ++held;
        int seen = most.load();
        while (now_held > seen && !most.compare_exchange_weak(seen, now_held)) {
        }
        --held;
        limiter.Release(d.leases, AtMs(1));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(limiter.Stats().lease_table.size, 0u);
}

TEST(ConcurrencyTest, ValidationNamesTheField) {
  LimiterConfig config;
  Policy p = InFlight(0, seconds(1));
  config.policies = {p};
  absl::StatusOr<std::unique_ptr<Limiter>> bad = Limiter::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("concurrency: got limit 0"),
            absl::string_view::npos)
      << bad.status();
  p = InFlight(3, seconds(1));
  p.rate = *Rate::Create(1, TimeUnit::kSecond);
  config.policies = {p};
  bad = Limiter::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected no rate beside it"),
            absl::string_view::npos)
      << bad.status();
  // Five groups of in-flight policies: one more lease than a Decision holds.
  config.policies.clear();
  for (int i = 0; i < 5; ++i) {
    Policy q = InFlight(1, seconds(1));
    q.name = "q" + std::to_string(i);
    q.layer = "l" + std::to_string(i);
    config.policies.push_back(q);
  }
  config.builtin_policies = false;
  bad = Limiter::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "concurrency: in-flight group 5 (layer, scope, mode and query "
                "conditions) of a set that holds at most 4"),
            absl::string_view::npos)
      << bad.status();
}

}  // namespace
}  // namespace mxlimit
