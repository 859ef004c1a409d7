// Limiters built from `LimiterConfig::routes`: extra templates and their
// aliases share a counter with the built-in policies on, Reload refuses a
// change to the route table, ShardedLimiter's shards share one table, and
// invalid options fail Create.

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

constexpr std::string_view kThings =
    "/_matrix/client/unstable/org.example.msc9999/rooms/{roomId}/things/"
    "{eventId}";
constexpr std::string_view kThingsV2 =
    "/_matrix/client/unstable/org.example.msc9999.v2/rooms/{roomId}/things/"
    "{eventId}";

// The default config (built-in policies on) plus the two extras and
// a policy on the extra key.
LimiterConfig WithThings() {
  LimiterConfig config;
  config.routes.extra = {{std::string(kThings), ""},
                         {std::string(kThingsV2), std::string(kThings)}};
  config.policies.push_back(MakePolicy("things", std::string(kThings),
                                       Scope::kUser, 4, TimeUnit::kMinute));
  return config;
}

TEST(LimiterRoutesTest, ExtraTemplateAndAliasShareOneCounter) {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(WithThings());
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  int allowed = 0;
  for (int i = 0; i < 4; ++i) {
    for (const char* spelling : {"msc9999", "msc9999.v2"}) {
      const std::string target =
          absl::StrCat("/_matrix/client/unstable/org.example.", spelling,
                       "/rooms/!r", i, ":x.org/things/$e", i);
      const Decision d = (*limiter)->Check(
          MakeRequest("GET", target, "198.51.100.1", "@bob:x.org"), At(0));
      allowed += d.allowed;
    }
  }
  EXPECT_EQ(allowed, 4);  // one budget for both spellings and every room
  EXPECT_EQ((*limiter)->normalizer().pack(
                (*limiter)
                    ->normalizer()
                    .Normalize("GET",
                               "/_matrix/client/unstable/org.example.msc9999."
                               "v2/rooms/!r:x/things/$e")
                    .id),
            "extra");
}

TEST(LimiterRoutesTest, ReloadRefusesARoutesChangeAndKeepsTheOldPolicies) {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(WithThings());
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  // Same table, packs spelled differently: accepted.
  LimiterConfig same = WithThings();
  same.routes.packs = {"synapse", "msc", "spec"};
  EXPECT_TRUE((*limiter)->Reload(same).ok());

  LimiterConfig fewer = WithThings();
  fewer.routes.extra.pop_back();
  absl::Status s = (*limiter)->Reload(fewer);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("routes: packs and extra templates are fixed at "
                        "start-up (route ids key the buckets); restart to "
                        "change them (the old policies stay in force): "
                        "routes.extra 2 templates in force, 1 in the new "
                        "config"));

  LimiterConfig left_out = WithThings();
  left_out.routes = RouteOptions{};
  s = (*limiter)->Reload(left_out);
  EXPECT_THAT(s.message(),
              HasSubstr("(the default: is `routes:` left out there?)"));

  LimiterConfig dendrite = WithThings();
  dendrite.routes.packs = {"spec", "msc", "dendrite"};
  s = (*limiter)->Reload(dendrite);
  EXPECT_THAT(s.message(),
              HasSubstr("routes.packs [spec, msc, synapse] in force, [spec, "
                        "msc, dendrite] in the new config"));

  LimiterConfig unknown = WithThings();
  unknown.routes.packs = {"spec", "bogus"};
  s = (*limiter)->Reload(unknown);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown pack \"bogus\""));
  EXPECT_EQ((*limiter)->normalizer().options().extra.size(), 2u);
}

TEST(LimiterRoutesTest, CreateRejectsInvalidRoutes) {
  LimiterConfig config;
  config.routes.extra = {{"no-slash", ""}};
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  ASSERT_FALSE(limiter.ok());
  EXPECT_THAT(limiter.status().message(),
              HasSubstr("routes.extra[0].template: \"no-slash\" must start "
                        "with '/'"));
  EXPECT_FALSE(ShardedLimiter::Create(config, 2).ok());
}

TEST(LimiterRoutesTest, ShardedLimiterUsesTheConfigTableAndRefusesAChange) {
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> limiter =
      ShardedLimiter::Create(WithThings(), 4);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  int allowed = 0;
  for (int i = 0; i < 3; ++i) {
    for (const char* spelling : {"msc9999", "msc9999.v2"}) {
      const std::string target =
          absl::StrCat("/_matrix/client/unstable/org.example.", spelling,
                       "/rooms/!r:x.org/things/$e", i);
      allowed +=
          (*limiter)
              ->Check(MakeRequest("GET", target, "198.51.100.1", "@bob:x.org"),
                      At(0))
              .allowed;
    }
  }
  EXPECT_EQ(allowed, 4);
  LimiterConfig other = WithThings();
  other.routes.packs = {"spec"};
  EXPECT_EQ((*limiter)->Reload(other).code(),
            absl::StatusCode::kFailedPrecondition);
}

// The example, end to end: a limiter on Dendrite's packs sends
// Synapse's admin API to the fallback; one on the default (Synapse) packs
// keys it.
TEST(LimiterRoutesTest, DendritePacksSendSynapseAdminToTheFallback) {
  constexpr std::string_view kTarget = "/_synapse/admin/v1/server_version";
  absl::StatusOr<std::unique_ptr<Limiter>> synapse =
      Limiter::Create(LimiterConfig{});
  ASSERT_TRUE(synapse.ok()) << synapse.status();
  const Request request = MakeRequest("GET", kTarget, "198.51.100.1");
  const Decision keyed = (*synapse)->Check(request, At(0));
  EXPECT_EQ(keyed.route_key, kTarget);
  LimiterConfig config;
  config.routes.packs = {"spec", "msc", "dendrite"};
  absl::StatusOr<std::unique_ptr<Limiter>> dendrite = Limiter::Create(config);
  ASSERT_TRUE(dendrite.ok()) << dendrite.status();
  EXPECT_EQ((*dendrite)->Check(request, At(0)).route_key, kFallbackRouteKey);
}

TEST(LimiterRoutesTest, EncodedSpellingsOfALoginShareOneBudget) {
  // The default config. `logi%6e` is `login` to policy matching; it must be
  // the login route too, or it is charged to the fallback route's bucket: a
  // second budget of 5 for the same login-per-ip policy.
  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(LimiterConfig{});
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  int allowed = 0;
  for (int i = 0; i < 12; ++i) {
    const char* target = i % 3 == 0   ? "/_matrix/client/v3/login"
                         : i % 3 == 1 ? "/_matrix/client/v3/logi%6e"
                                      : "/_matrix/client/r0/%6C%6F%67%69%6E";
    const Decision d = (*limiter)->Check(
        MakeRequest("POST", target, "198.51.100.7", ""), At(0));
    allowed += d.allowed;
    EXPECT_EQ(d.route_key, "/_matrix/client/v3/login") << target;
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "login-per-ip") << target;
    }
  }
  EXPECT_EQ(allowed, 5);
}

TEST(LimiterRoutesTest, EncodedSpellingOfSendIsChargedAsASend) {
  // message-send (built-in, 10 at once) is written as a template: it applies
  // through the route key only, so `%73end` must normalize to the send route.
  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(LimiterConfig{});
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  int allowed = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string target =
        absl::StrCat("/_matrix/client/v3/rooms/%21r%3Ax.org/",
                     i % 2 == 0 ? "send" : "%73end", "/m.room.message/t", i);
    const Decision d = (*limiter)->Check(
        MakeRequest("PUT", target, "198.51.100.8", "@bob:x.org"), At(0));
    allowed += d.allowed;
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "message-send") << target;
    }
  }
  EXPECT_EQ(allowed, 10);
}

}  // namespace
}  // namespace mxlimit
