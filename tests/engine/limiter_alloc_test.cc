// Proves the request path allocates nothing: this binary replaces the global
// operator new with a counting one, so it lives apart from the other tests.
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/ratelimit_headers.h"
#include "src/engine/engine.h"
#include "tests/testing/counting_new.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::MakeRequest;

TEST(LimiterAllocationTest, CheckPeekChargeAndSettleAllocateNothing) {
  LimiterConfig config;  // the built-in policies: route, network, aggregate
  // One more layer with a shadow trial and a per-/48 cap, so every kind of
  // check is on the path.
  Policy trial;
  trial.name = "trial";
  trial.match = {"/_matrix/client/v3/keys/*", "/_matrix/client/v3/sync"};
  trial.layer = "trial";
  trial.shadow_mode = true;
  trial.share_threshold = true;
  trial.scope = Scope::kUser;
  trial.rate = *Rate::Create(1, TimeUnit::kMinute);
  Policy wide;
  wide.name = "wide";
  wide.match = {"*"};
  wide.layer = "trial";
  wide.client_prefix = ClientPrefix{16, 32};
  wide.rate = *Rate::Create(100, TimeUnit::kMinute);
  config.policies = {trial, wide};
  config.tables.ip_capacity = 64;
  config.tables.user_capacity = 64;
  // Tiers: scaled, replaced and exempt, by user and by network, from the
  // file and at runtime (some expiring during the run).
  config.tiers.tiers = {
      {.name = "bridge", .scale = 10},
      {.name = "suspect", .scale = 0.1},
      {.name = "staff", .exempt = true},
      {.name = "bots",
       .policies = {{"message-send", *Rate::Create(5, TimeUnit::kSecond)}}}};
  config.tiers.users = {{"@user1:example.org", "bridge"}};
  config.tiers.networks = {{*ParseCidr("2001:db8:2::/48"), "suspect"}};
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  for (int i = 3; i < 200; i += 7) {
    const std::string tier = i % 3 == 0   ? "staff"
                             : i % 3 == 1 ? "bots"
                                          : "bridge";
    ASSERT_TRUE((*limiter)
                    ->SetTier("@user" + std::to_string(i) + ":example.org",
                              tier, At(1000 + i), At(0))
                    .ok());
    ASSERT_TRUE((*limiter)
                    ->SetTier("2001:db8:" + std::to_string(i + 1) + "::/64",
                              "suspect", std::nullopt, At(0))
                    .ok());
  }

  // Targets, addresses and users prepared up front; enough distinct clients
  // to fill both tables and force evictions.
  std::vector<std::string> targets = {
      "/_matrix/client/v3/sync?since=s1&timeout=30000",
      "/_matrix/client/r0/rooms/!abc%3Aexample.org/send/m.room.message/t1",
      "/_matrix/client/v3/keys/claim",
      "/_matrix/client/v3/keys/not-a-route",
      "/_matrix/client/v3/login",
      "/_matrix/client/v1/media/download/remote.example/abc",
      "/wp-admin/../../etc/passwd",
      std::string(70'000, 'a'),
      // Hostile encodings: the canonical path is read without a copy.
      "/_matrix/client/%72%30/keys/%63laim",
      "/_matrix/client/unstable/rooms/%21a%3aexample.org/send/x/%2F%2f",
      "/_matrix/%25%25%zz%",
  };
  std::string escapes;
  for (int i = 0; i < 20'000; ++i) escapes += "%41";
  targets.push_back("/_matrix/client/v3/" + escapes);
  std::vector<std::string> users;
  std::vector<std::string> ips;
  for (int i = 0; i < 200; ++i) {
    users.push_back("@user" + std::to_string(i) + ":example.org");
    ips.push_back("2001:db8:" + std::to_string(i) + "::1");
  }
  users.push_back(std::string(65'536, 'u'));  // absurd user ID
  std::vector<Request> requests;
  for (size_t i = 0; i < 2000; ++i) {
    requests.push_back(
        MakeRequest(i % 3 == 0 ? "PUT" : (i % 3 == 1 ? "GET" : "POST"),
                    targets[i % targets.size()], ips[i % ips.size()],
                    users[i % users.size()]));
  }

  const long before = ::mxlimit::testing::AllocationCount();
  int64_t t = 0;
  size_t header_bytes = 0;
  for (const Request& r : requests) {
    const Decision d = (*limiter)->Check(r, At(t++));
    // The RateLimit fields of `response_headers: ratelimit`.
    char policy[kRateLimitPolicyValueMaxBytes];
    char limit[kRateLimitValueMaxBytes];
    header_bytes += FormatRateLimitHeaders(d, policy, limit).ratelimit;
    (*limiter)->Peek(r, At(t));
    (*limiter)->Charge(r, At(t));
    // Failed logins and downloads are charged on the response.
    (*limiter)->Settle(r, Completion{403, 1 << 20}, At(t));
  }
  EXPECT_EQ(::mxlimit::testing::AllocationCount() - before, 0);
  EXPECT_GT(header_bytes, 0u);
  EXPECT_EQ((*limiter)->Stats().ip_table.size, 64u);
}

TEST(LimiterAllocationTest, LeasesTakenReleasedAndExpiredAllocateNothing) {
  // The built-ins' in-flight policies (initial syncs per user, federation
  // per origin) over a lease table small enough to evict (and large enough
  // that its index is past abseil's small sizes).
  LimiterConfig config;
  config.tables.lease_capacity = 150;
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  std::vector<std::string> users;
  std::vector<std::string> origins;
  for (int i = 0; i < 200; ++i) {
    users.push_back("@user" + std::to_string(i) + ":example.org");
    origins.push_back("server" + std::to_string(i) + ".example.org");
  }
  std::vector<Request> requests;
  for (size_t i = 0; i < 2000; ++i) {
    Request r = MakeRequest("GET", "/_matrix/client/v3/sync?timeout=0",
                            "192.0.2.1", users[i % users.size()]);
    if (i % 2 == 1) {
      r = MakeRequest("GET", "/_matrix/federation/v1/query/profile",
                      "198.51.100.7", "");
      r.origin = origins[i % origins.size()];
    }
    requests.push_back(r);
  }
  const long before = ::mxlimit::testing::AllocationCount();
  int64_t t = 0;
  size_t with_leases = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Decision d = (*limiter)->Check(requests[i], At(t));
    with_leases += d.leases.count > 0 ? 1 : 0;
    // Every third is released; the rest end by their lease time.
    if (i % 3 == 0) (*limiter)->Release(d.leases, At(t));
    if (i % 100 == 99) ++t;
  }
  EXPECT_EQ(::mxlimit::testing::AllocationCount() - before, 0);
  EXPECT_GT(with_leases, 1000u);
  const LimiterStats s = (*limiter)->Stats();
  EXPECT_LE(s.lease_table.size, 150u);
  EXPECT_GT(s.lease_table.evictions, 0u);
  EXPECT_GT(s.leases_released, 0u);
}

TEST(LimiterAllocationTest, LargeTablesAllocateNothing) {
  // Past Engine::kEarlyLoadEntries buckets a check starts its aggregate
  // buckets' loads before it matches the route, building their keys twice:
  // long and absurd user IDs included, that allocates nothing either.
  LimiterConfig config;  // built-in policies on
  config.tables.ip_capacity = 1 << 16;
  config.tables.user_capacity = 1 << 16;
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  constexpr int kClients = 12'000;
  std::vector<std::string> users;
  std::vector<std::string> ips;
  for (int i = 0; i < kClients; ++i) {
    users.push_back("@user" + std::to_string(i) + ":example.org");
    ips.push_back("2001:db8:" + std::to_string(i / 256) + ":" +
                  std::to_string(i % 256) + "::1");
  }
  users.push_back("@" + std::string(60, 'l') + ":example.org");  // a digest
  users.push_back(std::string(65'536, 'u'));                     // absurd
  for (int i = 0; i < kClients; ++i) {
    (*limiter)->Check(MakeRequest("GET", "/_matrix/client/v3/sync?since=s1",
                                  ips[i], users[i]),
                      At(0));
  }
  const LimiterStats warm = (*limiter)->Stats();
  ASSERT_GE(warm.ip_table.size + warm.user_table.size,
            internal::Engine::kEarlyLoadEntries);

  std::vector<Request> requests;
  for (size_t i = 0; i < 2000; ++i) {
    requests.push_back(MakeRequest(
        i % 2 == 0 ? "GET" : "PUT",
        i % 2 == 0 ? "/_matrix/client/v3/sync?since=s2"
                   : "/_matrix/client/v3/rooms/!r%3Aexample.org/send/"
                     "m.room.message/t1",
        ips[(i * 7919) % ips.size()], users[(i * 104729) % users.size()]));
  }
  requests.push_back(MakeRequest("GET", "/_matrix/client/v3/sync",
                                 "192.0.2.1"));  // anonymous
  const long before = ::mxlimit::testing::AllocationCount();
  size_t allowed = 0;
  for (const Request& r : requests) {
    allowed += (*limiter)->Check(r, At(1)).allowed ? 1 : 0;
  }
  EXPECT_EQ(::mxlimit::testing::AllocationCount() - before, 0);
  EXPECT_GT(allowed, 1900u);
}

}  // namespace
}  // namespace mxlimit
