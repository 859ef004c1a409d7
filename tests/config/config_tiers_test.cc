// The `tiers:` section: tiers, their replacements, and `assign`; every
// mistake an error at its own line, naming what was expected.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/limiter.h"
#include "mxlimit/options.h"
#include "tests/testing/config_helpers.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_config::Errors;
using testing_config::Parse;

constexpr char kTiers[] =
    "tiers:\n"
    "  bridge:\n"
    "    scale: 10\n"
    "  suspect: { scale: 0.1 }\n"
    "  staff: { exempt: true }\n"
    "  bots:\n"
    "    policies:\n"
    "      message-send:\n"
    "        rate_limit: { unit: second, requests_per_unit: 100 }\n"
    "        burst: 200\n"
    "      join-by-id-or-alias: { unlimited: true }\n"
    "  assign:\n"
    "    users:\n"
    "      \"@bridge:example.org\": bridge\n"
    "      \"@admin:example.org\": staff\n"
    "    networks:\n"
    "      \"2001:db8:bad::/48\": suspect\n"
    "      198.51.100.7: bots\n";

TEST(ConfigTiersTest, ReadsTiersAndAssignments) {
  const LimiterConfig config = Parse(kTiers);
  ASSERT_EQ(config.tiers.tiers.size(), 4u);
  EXPECT_EQ(config.tiers.tiers[0].name, "bridge");
  EXPECT_EQ(config.tiers.tiers[0].scale, 10);
  EXPECT_EQ(config.tiers.tiers[0].source_line, 2);
  EXPECT_EQ(config.tiers.tiers[1].scale, 0.1);
  EXPECT_TRUE(config.tiers.tiers[2].exempt);
  ASSERT_EQ(config.tiers.tiers[3].policies.size(), 2u);
  EXPECT_EQ(config.tiers.tiers[3].policies[0].policy, "message-send");
  EXPECT_EQ(config.tiers.tiers[3].policies[0].rate.ToString(),
            "100/second burst 200");
  EXPECT_TRUE(config.tiers.tiers[3].policies[1].rate.unlimited());
  ASSERT_EQ(config.tiers.users.size(), 2u);
  EXPECT_EQ(config.tiers.users[1].user_id, "@admin:example.org");
  EXPECT_EQ(config.tiers.users[1].tier, "staff");
  ASSERT_EQ(config.tiers.networks.size(), 2u);
  EXPECT_EQ(FormatCidr(config.tiers.networks[1].network), "198.51.100.7/32");

  // And a limiter runs it with the built-ins on.
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  const Request bot = testing::MakeRequest(
      "PUT", "/_matrix/client/v3/rooms/!r%3Aexample.org/send/m.room.message/1",
      "198.51.100.7", "@someone:example.org");
  int sent = 0;
  while ((*limiter)->Check(bot, testing::At(1)).allowed && sent < 1000) ++sent;
  EXPECT_EQ(sent, 200);
}

TEST(ConfigTiersTest, MistakesAreErrorsAtTheirLine) {
  EXPECT_THAT(Errors("tiers:\n  gold: { scale: 0 }\n"),
              ElementsAre("test.yaml:2:18: tiers.gold.scale: got 0, expected "
                          "a number from 0.001 to 1000, e.g. 10 or 0.1"));
  EXPECT_THAT(Errors("tiers:\n  gold: { scale: \"2\" }\n"),
              ElementsAre(HasSubstr("tiers.gold.scale: got the string \"2\"")));
  EXPECT_THAT(Errors("tiers:\n  gold: { scael: 2 }\n"),
              ElementsAre(HasSubstr("did you mean \"scale\"")));
  EXPECT_THAT(Errors("tiers:\n  gold!: { scale: 2 }\n"),
              ElementsAre(HasSubstr("tiers: tier name \"gold!\"")));
  EXPECT_THAT(
      Errors("tiers:\n  gold: { exempt: true, scale: 2 }\n"),
      ElementsAre(HasSubstr("an exempt tier is neither checked nor charged")));
  EXPECT_THAT(Errors("tiers:\n  gold:\n    policies:\n      nope: "
                     "{ unlimited: true }\n"),
              ElementsAre("test.yaml:4:7: tiers.gold.policies: no policy is "
                          "named \"nope\" (operator policies and, unless "
                          "builtin_policies is false, the built-ins are)"));
  // Built-ins switched off: their names are unknown too.
  EXPECT_THAT(Errors("builtin_policies: false\ntiers:\n  gold:\n    "
                     "policies:\n      message-send: { unlimited: true }\n"),
              ElementsAre(HasSubstr("no policy is named \"message-send\"")));
  EXPECT_THAT(Errors("tiers:\n  gold:\n    policies:\n      "
                     "initial-sync-in-flight: { unlimited: true }\n"),
              ElementsAre(HasSubstr("limits requests in flight")));
  EXPECT_THAT(Errors("tiers:\n  gold:\n    policies:\n      message-send: "
                     "{ rate_limit: { unit: week, requests_per_unit: 1 } }\n"),
              ElementsAre(HasSubstr("expected second, minute, hour or day")));
  EXPECT_THAT(
      Errors("tiers:\n  gold: {}\n  assign:\n    users:\n      alice: gold\n"),
      ElementsAre(HasSubstr("tiers.assign.users: got \"alice\", expected a "
                            "Matrix user ID")));
  EXPECT_THAT(Errors("tiers:\n  gold: {}\n  assign:\n    networks:\n      "
                     "10.0.0.0/33: gold\n"),
              ElementsAre(HasSubstr("tiers.assign.networks: invalid CIDR")));
  EXPECT_THAT(Errors("tiers:\n  gold: {}\n  assign:\n    users:\n      "
                     "\"@a:example.org\": silver\n"),
              ElementsAre(HasSubstr("the tier \"silver\" is not defined")));
  EXPECT_THAT(Errors("tiers:\n  gold: {}\n  gold: {}\n"),
              ElementsAre(HasSubstr("\"gold\" is given twice (first on line "
                                    "2)")));
  EXPECT_THAT(Errors("tiers: [gold]\n"),
              ElementsAre(HasSubstr("tiers: got a list, expected a map of "
                                    "tier names")));
}

TEST(ConfigTiersTest, HostileSectionsAreRefusedWhole) {
  std::string many = "tiers:\n";
  for (int i = 0; i < 65; ++i) many += "  t" + std::to_string(i) + ": {}\n";
  EXPECT_THAT(Errors(many),
              ElementsAre(HasSubstr("65 tiers, expected at most 64")));
  // Over the 255 bytes of a user ID.
  const std::string long_user =
      "tiers:\n  gold: {}\n  assign:\n    users:\n"
      "      \"@" +
      std::string(300, 'a') + ":example.org\": gold\n";
  EXPECT_THAT(Errors(long_user),
              ElementsAre(HasSubstr("expected a Matrix user ID")));
  // 64 KiB: yaml-cpp refuses so long a key itself; an error all the same.
  const std::string huge =
      "tiers:\n  gold: {}\n  assign:\n    users:\n"
      "      \"@" +
      std::string(65536, 'a') + ":example.org\": gold\n";
  EXPECT_EQ(Errors(huge).size(), 1u);
}

}  // namespace
}  // namespace mxlimit
