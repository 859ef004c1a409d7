// How the built-in policies treat traffic that is not a client's: load
// balancers' health probes and browsers' CORS preflights (OPTIONS), as
// docs/embedding.md ("Health probes and CORS preflights") describes. Default
// configuration: the built-ins on, nothing else.

#include <cstdint>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using testing::MakeRequest;

std::unique_ptr<Limiter> Defaults() {
  auto limiter = Limiter::Create(LimiterConfig{});
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return *std::move(limiter);
}

MonotonicTime AtMs(int64_t ms) { return MonotonicTime::FromMilliseconds(ms); }

TEST(InfrastructureTrafficTest, HealthProbesAreNeverLimitedAtAnyProbingRate) {
  // Synapse's /health and a Matrix endpoint balancers often probe, ten times
  // a second from one balancer address for an hour.
  for (const char* target : {"/health", "/_matrix/client/versions"}) {
    auto limiter = Defaults();
    for (int64_t ms = 0; ms < 3600 * 1000; ms += 100) {
      const Decision d =
          limiter->Check(MakeRequest("GET", target, "10.0.0.2"), AtMs(ms));
      ASSERT_TRUE(d.allowed) << target << " at " << ms << " ms: " << d.policy;
    }
  }
}

TEST(InfrastructureTrafficTest, AProbeFloodIsStillCapped) {
  // Probes get no exemption of their own: a flood from one address meets
  // the per-address catch-all (burst 1000) like any other.
  auto limiter = Defaults();
  int allowed = 0;
  Decision last;
  for (int i = 0; i < 1500; ++i) {
    last = limiter->Check(MakeRequest("GET", "/health", "10.0.0.3"), AtMs(0));
    allowed += last.allowed;
  }
  EXPECT_EQ(allowed, 1000);
  EXPECT_EQ(last.policy, "catch-all-ip");
}

TEST(InfrastructureTrafficTest, PreflightsSpendNoRouteBudget) {
  auto limiter = Defaults();
  // A browser client preflights every login attempt: the OPTIONS requests
  // do not spend the login budget (burst 5), only the aggregate cap.
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(limiter
                    ->Check(MakeRequest("OPTIONS", "/_matrix/client/v3/login",
                                        "198.51.100.4"),
                            AtMs(0))
                    .allowed);
  }
  int logins = 0;
  for (int i = 0; i < 10; ++i) {
    logins += limiter
                  ->Check(MakeRequest("POST", "/_matrix/client/v3/login",
                                      "198.51.100.4"),
                          AtMs(0))
                  .allowed;
  }
  EXPECT_EQ(logins, 5);
  // Nor a user's message budget: preflights carry no access token, and the
  // user's sends are what message-send counts (burst 10).
  const std::string send =
      "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/t";
  int sends = 0;
  for (int i = 0; i < 30; ++i) {
    limiter->Check(
        MakeRequest("OPTIONS", send + std::to_string(i), "198.51.100.5"),
        AtMs(0));
    sends += limiter
                 ->Check(MakeRequest("PUT", send + std::to_string(i),
                                     "198.51.100.5", "@web:example.org"),
                         AtMs(0))
                 .allowed;
  }
  EXPECT_EQ(sends, 10);
}

TEST(InfrastructureTrafficTest, APreflightFloodMeetsTheAggregateCap) {
  auto limiter = Defaults();
  int allowed = 0;
  Decision last;
  for (int i = 0; i < 2500; ++i) {
    last = limiter->Check(
        MakeRequest("OPTIONS", "/_matrix/client/v3/sync", "198.51.100.6"),
        AtMs(0));
    allowed += last.allowed;
  }
  EXPECT_EQ(allowed, 2000);  // aggregate-per-ip's burst.
  EXPECT_EQ(last.policy, "aggregate-per-ip");
}

}  // namespace
}  // namespace mxlimit
