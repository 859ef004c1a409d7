// Tiers (mxlimit/tiers.h) with the built-in policies on: what a member of a
// tier may send, which assignment applies, runtime assignments and their
// expiry, and that switching tiers keeps a bucket's state.

#include "mxlimit/tiers.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakeRequest;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;

constexpr std::string_view kTieredSend =
    "/_matrix/client/v3/rooms/!room1%3Aexample.org/send/m.room.message/txn1";

// Built-ins on (message-send: 12/minute, burst 10, per user), a bridge at
// ten times every limit, suspects at a tenth, an exempt staff tier and a
// tier that replaces message-send alone.
LimiterConfig TieredConfig() {
  LimiterConfig config;
  config.tiers.tiers = {
      {.name = "bridge", .scale = 10},
      {.name = "suspect", .scale = 0.1},
      {.name = "staff", .exempt = true},
      {.name = "bots",
       .policies = {{"message-send",
                     *Rate::Create(100, TimeUnit::kSecond, 200)}}},
  };
  config.tiers.users = {{"@bridge:example.org", "bridge"},
                        {"@helper:example.org", "bridge"},
                        {"@admin:example.org", "staff"},
                        {"@bot:example.org", "bots"}};
  config.tiers.networks = {{*ParseCidr("2001:db8:bad::/48"), "suspect"},
                           {*ParseCidr("2001:db8::/32"), "bridge"}};
  return config;
}

std::unique_ptr<Limiter> MakeTiered(const LimiterConfig& config) {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

// Messages sent at one instant before the first denial.
template <typename L>
int TieredBurst(L& limiter, std::string_view ip, std::string_view user,
                MonotonicTime now) {
  const Request req = MakeRequest("PUT", kTieredSend, ip, user);
  for (int sent = 0; sent < 100'000; ++sent) {
    if (!limiter.Check(req, now).allowed) return sent;
  }
  return -1;
}

TEST(TiersTest, BridgeSendsTenTimesAndSuspectsATenthWithBuiltinsOn) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  const int plain =
      TieredBurst(*limiter, "203.0.113.1", "@alice:example.org", At(1));
  EXPECT_EQ(plain, 10);  // message-send's own burst
  EXPECT_EQ(TieredBurst(*limiter, "203.0.113.2", "@bridge:example.org", At(1)),
            10 * plain);
  // A suspect /48 (inside the bridge /32: the longer prefix wins).
  EXPECT_EQ(
      TieredBurst(*limiter, "2001:db8:bad:1::5", "@mallory:example.org", At(1)),
      1);
  // The rest of the /32.
  EXPECT_EQ(TieredBurst(*limiter, "2001:db8:1::5", "@bob:example.org", At(1)),
            10 * plain);
  // And a bridge user from the suspect network: the user's tier wins.
  EXPECT_EQ(
      TieredBurst(*limiter, "2001:db8:bad:2::5", "@helper:example.org", At(1)),
      10 * plain);
}

TEST(TiersTest, DecisionAndTierForNameTheTierAndWhy) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  const Request bridge =
      MakeRequest("PUT", kTieredSend, "2001:db8:bad::1", "@bridge:example.org");
  EXPECT_EQ(limiter->Check(bridge, At(1)).tier, "bridge");
  std::optional<TierAssignment> why = limiter->TierFor(bridge, At(1));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->kind, TierSubjectKind::kUser);
  EXPECT_EQ(why->subject, "@bridge:example.org");
  EXPECT_FALSE(why->runtime);

  const Request suspect =
      MakeRequest("PUT", kTieredSend, "2001:db8:bad::1", "@eve:example.org");
  EXPECT_EQ(limiter->Check(suspect, At(1)).tier, "suspect");
  why = limiter->TierFor(suspect, At(1));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->kind, TierSubjectKind::kNetwork);
  EXPECT_EQ(why->subject, "2001:db8:bad::/48");

  const Request nobody =
      MakeRequest("PUT", kTieredSend, "198.51.100.7", "@carol:example.org");
  EXPECT_EQ(limiter->Check(nobody, At(1)).tier, "");
  EXPECT_FALSE(limiter->TierFor(nobody, At(1)).has_value());
}

TEST(TiersTest, ExemptTierIsNeitherCheckedNorCharged) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  const Request admin =
      MakeRequest("PUT", kTieredSend, "203.0.113.3", "@admin:example.org");
  for (int i = 0; i < 1000; ++i) {
    const Decision d = limiter->Check(admin, At(1));
    ASSERT_TRUE(d.allowed);
    ASSERT_TRUE(d.exempt);
    ASSERT_EQ(d.tier, "staff");
  }
  // Nothing was charged: the admin leaves the tier with a full burst.
  ASSERT_TRUE(limiter
                  ->Reload([] {
                    LimiterConfig c = TieredConfig();
                    c.tiers.users.erase(c.tiers.users.begin() + 2);
                    return c;
                  }())
                  .ok());
  EXPECT_EQ(TieredBurst(*limiter, "203.0.113.3", "@admin:example.org", At(1)),
            10);
}

TEST(TiersTest, ReplacedPolicyGetsTheTiersRateAndTheOthersKeepTheirs) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(TieredBurst(*limiter, "203.0.113.4", "@bot:example.org", At(1)),
            200);
  // state-send (same numbers as message-send) is not replaced or scaled.
  const Request state = MakeRequest(
      "PUT", "/_matrix/client/v3/rooms/!r%3Aexample.org/state/m.room.topic/",
      "203.0.113.4", "@bot:example.org");
  int sent = 0;
  while (limiter->Check(state, At(1)).allowed && sent < 1000) ++sent;
  EXPECT_EQ(sent, 10);
}

TEST(TiersTest, SwitchingTiersKeepsTheBucketNoFreshBurst) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  const Request req =
      MakeRequest("PUT", kTieredSend, "198.51.100.9", "@dave:example.org");
  EXPECT_EQ(TieredBurst(*limiter, "198.51.100.9", "@dave:example.org", At(10)),
            10);
  ASSERT_TRUE(
      limiter->SetTier("@dave:example.org", "bridge", std::nullopt, At(10))
          .ok());
  // Still drained: the bridge's tau is the same time, now spent.
  const Decision d = limiter->Check(req, At(10));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.tier, "bridge");
  // One bridge interval later (5 s / 10) one more message fits.
  EXPECT_TRUE(
      limiter->Check(req, At(10) + std::chrono::milliseconds(500)).allowed);

  // Half the bridge burst spent, then back to no tier: half the plain
  // burst is left.
  const Request erin =
      MakeRequest("PUT", kTieredSend, "198.51.100.10", "@erin:example.org");
  ASSERT_TRUE(
      limiter->SetTier("@erin:example.org", "bridge", std::nullopt, At(20))
          .ok());
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(limiter->Check(erin, At(20)).allowed);
  ASSERT_TRUE(limiter->ClearTier("@erin:example.org").ok());
  EXPECT_EQ(TieredBurst(*limiter, "198.51.100.10", "@erin:example.org", At(20)),
            5);
}

TEST(TiersTest, RuntimeAssignmentsSetExpireClearAndList) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  const Request req =
      MakeRequest("PUT", kTieredSend, "192.0.2.1", "@frank:example.org");
  EXPECT_EQ(limiter->Check(req, At(1)).tier, "");
  ASSERT_TRUE(limiter->SetTier("192.0.2.0/24", "suspect", At(61), At(1)).ok());
  EXPECT_EQ(limiter->Check(req, At(2)).tier, "suspect");
  // A user's runtime assignment beats the network's.
  ASSERT_TRUE(
      limiter->SetTier("@frank:example.org", "bridge", std::nullopt, At(2))
          .ok());
  EXPECT_EQ(limiter->Check(req, At(3)).tier, "bridge");
  ASSERT_TRUE(limiter->ClearTier("@frank:example.org").ok());
  EXPECT_EQ(limiter->Check(req, At(4)).tier, "suspect");
  // Expired at 61 s.
  EXPECT_EQ(limiter->Check(req, At(61)).tier, "");

  // A runtime assignment for a subject the file assigns beats the file's,
  // and clearing it brings the file's back.
  ASSERT_TRUE(
      limiter->SetTier("@bridge:example.org", "suspect", std::nullopt, At(70))
          .ok());
  const Request bridge =
      MakeRequest("PUT", kTieredSend, "192.0.2.9", "@bridge:example.org");
  EXPECT_EQ(limiter->Check(bridge, At(70)).tier, "suspect");

  std::vector<TierAssignment> all = limiter->ListTiers(At(70));
  std::vector<std::string> lines;
  for (const TierAssignment& a : all) {
    lines.push_back(a.subject + " " + a.tier + (a.runtime ? " runtime" : ""));
  }
  EXPECT_THAT(lines,
              ElementsAre("@admin:example.org staff", "@bot:example.org bots",
                          "@bridge:example.org bridge",
                          "@bridge:example.org suspect runtime",
                          "@helper:example.org bridge", "2001:db8::/32 bridge",
                          "2001:db8:bad::/48 suspect"));
  ASSERT_TRUE(limiter->ClearTier("@bridge:example.org").ok());
  EXPECT_EQ(limiter->Check(bridge, At(71)).tier, "bridge");
  // The file's own assignment cannot be cleared at runtime.
  EXPECT_EQ(limiter->ClearTier("@bridge:example.org").code(),
            absl::StatusCode::kNotFound);
}

// Networks of every shape find their clients, and only theirs: IPv4 and
// IPv6, shorter and longer than the 16 bits the lookup's gate reads, and
// IPv6 networks that hold the IPv4 clients (::/0, ::ffff:0:0/96).
TEST(TiersTest, NetworksOfEveryLengthFindTheirClients) {
  struct Case {
    const char* network;
    const char* inside;
    const char* outside;
  };
  const Case cases[] = {
      {"10.0.0.0/8", "10.200.1.1", "11.0.0.1"},
      {"198.51.100.0/24", "198.51.100.77", "198.51.101.77"},
      {"203.0.113.9", "203.0.113.9", "203.0.113.10"},
      {"0.0.0.0/0", "192.0.2.1", "2001:db8::1"},
      {"2001:db8:bad::/48", "2001:db8:bad:7::1", "2001:db8:bae::1"},
      {"2001::/8", "20ff:1::1", "2100::1"},
      {"::/0", "192.0.2.1", "UNUSED"},
      {"::ffff:0:0/96", "192.0.2.1", "2001:db8::1"},
      {"2001:db8::1", "2001:db8::1", "2001:db8::2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.network);
    LimiterConfig config;
    config.tiers.tiers = {{.name = "suspect", .scale = 0.1}};
    auto limiter = MakeTiered(config);
    ASSERT_NE(limiter, nullptr);
    // Some unrelated assignments of every kind beside it.
    ASSERT_TRUE(
        limiter->SetTier("2002:db8::/32", "suspect", std::nullopt, At(0)).ok());
    ASSERT_TRUE(
        limiter->SetTier("172.16.0.0/12", "suspect", std::nullopt, At(0)).ok());
    ASSERT_TRUE(
        limiter->SetTier(c.network, "suspect", std::nullopt, At(0)).ok());
    EXPECT_EQ(
        limiter->Check(MakeRequest("GET", kTieredSend, c.inside, ""), At(1))
            .tier,
        "suspect");
    if (std::string_view(c.outside) != "UNUSED") {
      EXPECT_EQ(
          limiter->Check(MakeRequest("GET", kTieredSend, c.outside, ""), At(1))
              .tier,
          "");
    }
    // Cleared, the gate and filter keep no false answer.
    ASSERT_TRUE(limiter->ClearTier(c.network).ok());
    EXPECT_EQ(
        limiter->Check(MakeRequest("GET", kTieredSend, c.inside, ""), At(2))
            .tier,
        "");
  }
}

TEST(TiersTest, SetTierRejectsBadInput) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(
      limiter->SetTier("@x:example.org", "gold", std::nullopt, At(1)).code(),
      absl::StatusCode::kNotFound);
  EXPECT_THAT(
      limiter->SetTier("@x:example.org", "gold", std::nullopt, At(1)).message(),
      HasSubstr("bridge, suspect, staff, bots"));
  EXPECT_EQ(limiter->SetTier("alice", "bridge", std::nullopt, At(1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      limiter->SetTier("@no-server", "bridge", std::nullopt, At(1)).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      limiter->SetTier(std::string(65536, '@'), "bridge", std::nullopt, At(1))
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      limiter->SetTier("10.0.0.0/33", "bridge", std::nullopt, At(1)).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(limiter->SetTier("10.0.0.0/8", "bridge", At(1), At(1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(limiter->ClearTier("10.0.0.0/8").code(),
            absl::StatusCode::kNotFound);
  // Nothing half-set: valid traffic sees no tier.
  const Request req =
      MakeRequest("PUT", kTieredSend, "10.1.2.3", "@x:example.org");
  EXPECT_EQ(limiter->Check(req, At(2)).tier, "");
  EXPECT_EQ(limiter->ListTiers(At(2)).size(), 6u);
}

TEST(TiersTest, RuntimeAssignmentsAreCappedAndExpiredOnesMakeRoom) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  // Networks, the costlier kind: one /128 each.
  for (size_t i = 0; i < kMaxTierOverrides; ++i) {
    const std::string subject = "fd00::" + std::to_string(i / 65536) + ":" +
                                absl::StrCat(absl::Hex(i % 65536));
    ASSERT_TRUE(limiter->SetTier(subject, "suspect", At(100), At(1)).ok())
        << subject;
  }
  const absl::Status full =
      limiter->SetTier("@late:example.org", "bridge", std::nullopt, At(2));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  // Replacing one already held is no new entry.
  EXPECT_TRUE(
      limiter->SetTier("fd00::0:0", "bridge", std::nullopt, At(2)).ok());
  // Once they expire there is room again.
  EXPECT_TRUE(
      limiter->SetTier("@late:example.org", "bridge", std::nullopt, At(100))
          .ok());
  const Request req =
      MakeRequest("PUT", kTieredSend, "fd00::1:5", "@z:example.org");
  EXPECT_EQ(limiter->Check(req, At(100)).tier, "");
}

TEST(TiersTest, ReloadKeepsRuntimeAssignmentsWhoseTierRemains) {
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  ASSERT_TRUE(
      limiter->SetTier("@gina:example.org", "bridge", std::nullopt, At(1))
          .ok());
  ASSERT_TRUE(
      limiter->SetTier("@hank:example.org", "bots", std::nullopt, At(1)).ok());
  LimiterConfig next = TieredConfig();
  next.tiers.tiers.pop_back();  // "bots" goes
  next.tiers.users.pop_back();
  next.tiers.tiers[0].scale = 2;  // the bridge changes
  ASSERT_TRUE(limiter->Reload(next).ok());
  EXPECT_EQ(TieredBurst(*limiter, "192.0.2.20", "@gina:example.org", At(2)),
            20);
  const Request hank =
      MakeRequest("PUT", kTieredSend, "192.0.2.21", "@hank:example.org");
  EXPECT_EQ(limiter->Check(hank, At(2)).tier, "");
  EXPECT_EQ(limiter->ClearTier("@hank:example.org").code(),
            absl::StatusCode::kNotFound);
}

TEST(TiersTest, CreateRejectsTiersThatCannotApply) {
  LimiterConfig config = TieredConfig();
  config.tiers.tiers[3].policies[0].policy = "no-such-policy";
  absl::StatusOr<std::unique_ptr<Limiter>> bad = Limiter::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("no-such-policy"));

  config = TieredConfig();
  config.tiers.users.push_back({"@x:example.org", "gold"});
  bad = Limiter::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("\"gold\" is not defined"));

  config = TieredConfig();
  config.tiers.tiers[0].scale = 1e6;
  EXPECT_FALSE(Limiter::Create(config).ok());

  // A reload that fails changes nothing.
  auto limiter = MakeTiered(TieredConfig());
  ASSERT_NE(limiter, nullptr);
  EXPECT_FALSE(limiter->Reload(config).ok());
  EXPECT_EQ(TieredBurst(*limiter, "203.0.113.2", "@bridge:example.org", At(1)),
            100);
}

TEST(ScaleRateTest, KeepsTheRateExactByChangingUnits) {
  const Rate r = *Rate::Create(12, TimeUnit::kMinute, 10);
  EXPECT_EQ(ScaleRate(r, 10)->ToString(), "120/minute burst 100");
  EXPECT_EQ(ScaleRate(r, 0.1)->ToString(), "72/hour burst 1");
  EXPECT_EQ(ScaleRate(*Rate::Create(1, TimeUnit::kMinute, 1), 0.1)->ToString(),
            "6/hour burst 1");
  // tau = burst * T is kept by a scale of both.
  EXPECT_EQ(ScaleRate(r, 10)->tolerance_ns(), r.tolerance_ns());
  EXPECT_EQ(ScaleRate(Rate::Unlimited(), 5)->unlimited(), true);
  // Capped at Rate's range, never refused.
  EXPECT_EQ(ScaleRate(*Rate::Create(1, TimeUnit::kDay, 1), 0.5)->ToString(),
            "1/day burst 1");
  EXPECT_EQ(ScaleRate(*Rate::Create(89088, TimeUnit::kSecond, 524288000), 10)
                ->burst(),
            Rate::kMaxBurst);
  EXPECT_FALSE(ScaleRate(r, 0).ok());
}

TEST(TiersShardedTest, AssignmentsReachEveryShardWhileChecksRun) {
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> made =
      ShardedLimiter::Create(TieredConfig(), 4);
  ASSERT_TRUE(made.ok()) << made.status();
  ShardedLimiter& limiter = **made;
  EXPECT_EQ(TieredBurst(limiter, "203.0.113.2", "@bridge:example.org", At(1)),
            100);
  // Many users over every shard, set at runtime while other threads check.
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&limiter, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string user =
            absl::StrCat("@u", t, "-", i % 50, ":example.org");
        limiter.Check(MakeRequest("PUT", kTieredSend, "198.51.100.1", user),
                      At(1));
      }
    });
  }
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(limiter
                    .SetTier(absl::StrCat("@u9-", i, ":example.org"), "bridge",
                             std::nullopt, At(1))
                    .ok());
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(TieredBurst(limiter, "198.51.100.2",
                          absl::StrCat("@u9-", i, ":example.org"), At(1)),
              100);
  }
  EXPECT_EQ(limiter.ListTiers(At(1)).size(), 6u + 50u);
}

}  // namespace
}  // namespace mxlimit
