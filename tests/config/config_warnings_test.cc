// The YAML config loader's warnings: returned beside a valid config, each at
// the position of the value it is about, never rejecting the file.

#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/sharded_limiter.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// The warnings for `yaml`, which must load; checked against 64 shards.
std::vector<std::string> Warnings(std::string_view yaml, size_t shards = 64) {
  absl::StatusOr<CheckedConfig> checked =
      ParseConfigWithWarnings(yaml, "test.yaml", ConfigCheckOptions{shards});
  EXPECT_TRUE(checked.ok()) << checked.status().message();
  if (!checked.ok()) return {};
  // A warning never changes what the file means.
  absl::StatusOr<LimiterConfig> plain = ParseConfig(yaml, "test.yaml");
  EXPECT_TRUE(plain.ok());
  return checked->warnings;
}

std::string Policy(std::string_view name, std::string_view match,
                   std::string_view extra = "") {
  return "  - name: " + std::string(name) +
         "\n    match: " + std::string(match) + "\n    unlimited: true\n" +
         std::string(extra);
}

TEST(ConfigWarningTest, ACleanFileHasNone) {
  EXPECT_THAT(Warnings(""), IsEmpty());
  EXPECT_THAT(Warnings("policies:\n" +
                       Policy("send", "/_matrix/client/v3/rooms/{roomId}/*") +
                       "exempt:\n  ips: [\"192.0.2.10/32\"]\n"),
              IsEmpty());
}

TEST(ConfigWarningTest, PlaceholderNoRouteUses) {
  EXPECT_THAT(
      Warnings("policies:\n" +
               Policy("send", "/_matrix/client/v3/rooms/{roomid}/send/*")),
      ElementsAre("test.yaml:3:12: warning: policies[0].match: "
                  "\"/_matrix/client/v3/rooms/{roomid}/send/*\" holds the "
                  "placeholder {roomid}, which no route template uses, so it "
                  "matches only paths holding those very bytes (did you mean "
                  "{roomId}?)"));
  // In a list, at the item.
  EXPECT_THAT(
      Warnings("policies:\n" +
               Policy("x", "[\"/_matrix/client/v3/login\", \"/a/{nothing}\"]")),
      ElementsAre(HasSubstr("test.yaml:3:41: warning: policies[0].match[1]: "
                            "\"/a/{nothing}\" holds the placeholder "
                            "{nothing}, which no route template uses")));
}

// No route template repeats a placeholder name (an error in routes.extra),
// so a pattern that does matches no route key.
TEST(ConfigWarningTest, PlaceholderRepeated) {
  EXPECT_THAT(
      Warnings("policies:\n" +
               Policy("x", "/_matrix/client/v3/rooms/{roomId}/x/{roomId}")),
      ElementsAre("test.yaml:3:12: warning: policies[0].match: "
                  "\"/_matrix/client/v3/rooms/{roomId}/x/{roomId}\" repeats "
                  "the placeholder {roomId}, which no route template does, so "
                  "it matches only paths holding those very bytes"));
}

TEST(ConfigWarningTest, TrailingSlashNoRouteHas) {
  EXPECT_THAT(
      Warnings("policies:\n" + Policy("login", "/_matrix/client/v3/login/")),
      ElementsAre(
          "test.yaml:3:12: warning: policies[0].match: "
          "\"/_matrix/client/v3/login/\" ends with '/', and no route "
          "has that trailing slash: such a path is an unknown route "
          "(the fallback); did you mean \"/_matrix/client/v3/login\"?"));
  // A prefix pattern's '/' before '*' is not a trailing slash, and a route
  // that does take a trailing slash (federation's optional one) is no
  // mistake.
  EXPECT_THAT(Warnings("policies:\n" + Policy("c", "/_matrix/client/*") +
                       Policy("f", "/_matrix/federation/v1/send/{txnId}/")),
              IsEmpty());
}

TEST(ConfigWarningTest, NonCanonicalPattern) {
  EXPECT_THAT(
      Warnings("policies:\n" + Policy("login", "/_matrix/client/r0/login")),
      ElementsAre("test.yaml:3:12: warning: policies[0].match: "
                  "\"/_matrix/client/r0/login\" is read as "
                  "\"/_matrix/client/v3/login\" (paths are compared in "
                  "canonical form: escapes decoded, version aliases "
                  "folded)"));
}

TEST(ConfigWarningTest, PolicyThatCanNeverApply) {
  // Same patterns (in any order and spelling), methods, scope and layer: the
  // earlier policy wins every tie.
  EXPECT_THAT(
      Warnings("policies:\n" +
               Policy("a", "[/_matrix/client/v3/login, /b]",
                      "    methods: [post]\n") +
               Policy("b", "[/b, /_matrix/client/r0/login]",
                      "    methods: [POST]\n")),
      ElementsAre("test.yaml:6:5: warning: policies[1]: policy \"b\" has "
                  "the same match, methods, scope and layer as policy \"a\" "
                  "(line 2), which wins every tie: this one can never "
                  "apply",
                  HasSubstr("7:17: warning: policies[1].match[1]: ")));
  // Any difference lets both apply somewhere.
  for (std::string_view extra :
       {"    methods: [GET]\n", "    scope: user\n", "    layer: other\n",
        "    shadow_mode: true\n"}) {
    EXPECT_THAT(
        Warnings("policies:\n" + Policy("a", "/x") + Policy("b", "/x", extra)),
        IsEmpty())
        << extra;
  }
}

// A policy that a built-in or an earlier policy of its layer and scope
// outranks on every request of a route it was written for.
// `match` is quoted unless it is a flow list.
std::string Limited(std::string_view name, std::string_view match,
                    std::string_view extra = "") {
  const std::string quoted = match.starts_with("[")
                                 ? std::string(match)
                                 : "\"" + std::string(match) + "\"";
  return "  - name: " + std::string(name) + "\n    match: " + quoted + "\n" +
         std::string(extra) +
         "    rate_limit: { unit: minute, requests_per_unit: 5 }\n";
}

TEST(ConfigWarningTest, OperatorPolicyThatCanNeverApply) {
  // Its only pattern is in an earlier policy's list, with the same methods:
  // equal rank, and the earlier wins.
  EXPECT_THAT(
      Warnings(
          "policies:\n" +
          Limited("auth",
                  "[/_matrix/client/v3/login, /_matrix/client/v3/register]",
                  "    methods: [POST]\n") +
          Limited("login-strict", "/_matrix/client/v3/login",
                  "    methods: [POST]\n")),
      ElementsAre(
          "test.yaml:6:5: warning: policies[1]: policy \"login-strict\" can "
          "never apply: policy \"auth\" (line 2, earlier in file) outranks "
          "it on every request its patterns match, in the same layer and "
          "scope"));
}

TEST(ConfigWarningTest, OperatorPolicyOutrankedWhereItWasWrittenFor) {
  // Two spellings of "any room" are equally specific: the later one never
  // applies to sends, both named.
  EXPECT_THAT(
      Warnings("policies:\n" +
               Limited("every-room", "/_matrix/client/v3/rooms/{roomId}/send/*",
                       "    scope: user\n") +
               Limited("any-room", "/_matrix/client/v3/rooms/*/send/*",
                       "    scope: user\n")),
      ElementsAre(
          "test.yaml:6:5: warning: policies[1]: policy \"any-room\" never "
          "applies to any method on "
          "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}: policy "
          "\"every-room\" (line 2) outranks it on every request there "
          "(earlier in file); to have it apply, give it a pattern that ranks "
          "higher there or a layer of its own"));
  // A built-in exact policy over a wildcard written for that very path, and
  // over one room's rule on the joins and invites of that room.
  EXPECT_THAT(
      Warnings("policies:\n" +
               Limited("login-star", "/_matrix/client/v3/login*",
                       "    methods: [POST]\n") +
               Limited("hot-room", "/_matrix/client/v3/rooms/!h:x.org/*",
                       "    scope: user\n")),
      ElementsAre(
          "test.yaml:2:5: warning: policies[0]: policy \"login-star\" never "
          "applies to POST on /_matrix/client/v3/login: policy "
          "\"login-per-ip\" (built-in) outranks it on every request there "
          "(exact over wildcard); to have it apply, give it a pattern that "
          "ranks higher there or a layer of its own",
          HasSubstr("test.yaml:6:5: warning: policies[1]: policy "
                    "\"hot-room\" never applies to POST on "
                    "/_matrix/client/v3/rooms/{roomId}/invite: policy "
                    "\"invite\" (built-in)"),
          HasSubstr("test.yaml:6:5: warning: policies[1]: policy "
                    "\"hot-room\" never applies to POST on "
                    "/_matrix/client/v3/rooms/{roomId}/join: policy "
                    "\"join-room\" (built-in)")));
  // ... and the same policies in observe-only mode, where every policy is a
  // shadow policy and the same ranking holds.
  EXPECT_THAT(Warnings("shadow_mode: true\npolicies:\n" +
                       Limited("login-star", "/_matrix/client/v3/login*",
                               "    methods: [POST]\n")),
              ElementsAre(HasSubstr("policy \"login-per-ip\" (built-in)")));
  // Without the built-ins nothing outranks them.
  EXPECT_THAT(
      Warnings("builtin_policies: false\npolicies:\n" +
               Limited("login-star", "/_matrix/client/v3/login*",
                       "    methods: [POST]\n") +
               Limited("hot-room", "/_matrix/client/v3/rooms/!h:x.org/*",
                       "    scope: user\n")),
      IsEmpty());
}

TEST(ConfigWarningTest, OperatorPoliciesThatWinWhereWrittenForDrawNone) {
  // The three wildcards, which the built-ins used to outrank, and
  // broad policies that lose only to more specific ones (exact over
  // wildcard, more literal bytes), as ranking means them to.
  EXPECT_THAT(
      Warnings(
          "policies:\n" +
          Limited("sends", "/_matrix/client/v3/rooms/*/send/*",
                  "    scope: user\n") +
          Limited("keys", "/_matrix/client/*/keys/*", "    scope: user\n") +
          Limited("hot-room", "/_matrix/client/v3/rooms/!a:b.c/send/*",
                  "    scope: user\n") +
          Limited("client", "/_matrix/client/v3/*") +
          Limited("client-user", "/_matrix/client/v3/*", "    scope: user\n") +
          Limited("everything", "*") + Limited("unknown", "<fallback>") +
          Limited("report", "/_matrix/client/v3/*/report*",
                  "    scope: user\n")),
      IsEmpty());
  // Every room's policy, written as a template: the built-in exact joins
  // and invites are more specific.
  EXPECT_THAT(Warnings("policies:\n" +
                       Limited("rooms", "/_matrix/client/v3/rooms/{roomId}/*",
                               "    scope: user\n")),
              IsEmpty());
  // Beside `report`, whose pattern is as specific on room reports: the tie
  // goes to the earlier, and the later hears of it.
  EXPECT_THAT(
      Warnings("policies:\n" +
               Limited("report", "/_matrix/client/v3/*/report*",
                       "    scope: user\n") +
               Limited("rooms", "/_matrix/client/v3/rooms/{roomId}/*",
                       "    scope: user\n")),
      ElementsAre(HasSubstr(
          "policy \"rooms\" never applies to any method on "
          "/_matrix/client/v3/rooms/{roomId}/report and 1 more route: policy "
          "\"report\" (line 2) outranks it on every request there (earlier "
          "in file)")));
}

TEST(ConfigWarningTest, ExemptNetworkCoveringProxyAddresses) {
  EXPECT_THAT(
      Warnings("exempt:\n  ips: [\"10.20.0.0/16\", \"::1\", \"0.0.0.0/0\"]\n"),
      ElementsAre(
          "test.yaml:2:9: warning: exempt.ips[0]: 10.20.0.0/16 covers "
          "private (10.0.0.0/8) addresses: a reverse proxy, load balancer or "
          "container network connects from these, and if mxlimit sees its "
          "address instead of the client's, every request it forwards is "
          "exempt",
          HasSubstr("exempt.ips[1]: ::1/128 covers loopback (::1/128) "),
          HasSubstr("exempt.ips[2]: 0.0.0.0/0 covers loopback (127.0.0.0/8), "
                    "private (10.0.0.0/8), private (172.16.0.0/12), private "
                    "(192.168.0.0/16), shared (CGNAT) (100.64.0.0/10), "
                    "link-local (169.254.0.0/16) addresses")));
  EXPECT_THAT(
      Warnings("exempt:\n  ips: [\"192.0.2.0/24\", \"2001:db8::/32\"]\n"),
      IsEmpty());
}

TEST(ConfigWarningTest, CapacityBelowTheShardCount) {
  const std::string yaml =
      "tables:\n  ip: { capacity: 10 }\n  user: { capacity: 64 }\n";
  EXPECT_THAT(
      Warnings(yaml, 64),
      ElementsAre("test.yaml:2:19: warning: tables.ip.capacity: 10 is below "
                  "the 64 shards a ShardedLimiter (mxlimitd) splits the table "
                  "over, so it would refuse this file: each shard needs at "
                  "least one bucket"));
  EXPECT_THAT(Warnings(yaml, 8), IsEmpty());
  // And the ShardedLimiter does refuse what the warning says it would.
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "test.yaml");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(ShardedLimiter::Create(*config, 64).ok());
  EXPECT_TRUE(ShardedLimiter::Create(*config, 8).ok());
}

TEST(ConfigWarningTest, DefaultShardCountAdaptsToTheCapacities) {
  // The default count never exceeds a capacity, so it warns of none; an
  // explicit count above the capacity does.
  const std::string yaml = "tables:\n  ip: { capacity: 1 }\n";
  absl::StatusOr<CheckedConfig> checked =
      ParseConfigWithWarnings(yaml, "test.yaml");
  ASSERT_TRUE(checked.ok());
  EXPECT_THAT(checked->warnings, IsEmpty());
  EXPECT_THAT(Warnings(yaml, 2), SizeIs(1));
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "test.yaml");
  ASSERT_TRUE(config.ok());
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> sharded =
      ShardedLimiter::Create(*config);
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  EXPECT_EQ((*sharded)->shard_count(), 1u);
}

TEST(ConfigWarningTest, WarningsAreSortedByPositionAndCapped) {
  std::string yaml = "exempt:\n  ips:\n";
  for (int i = 0; i < 150; ++i) yaml += "    - \"10.0.0.1\"\n";
  yaml += "tables:\n  ip: { capacity: 1 }\n";
  std::vector<std::string> w = Warnings(yaml);
  ASSERT_THAT(w, SizeIs(kMaxConfigErrorsReported + 1));
  EXPECT_THAT(w.front(), HasSubstr("test.yaml:3:7: warning: exempt.ips[0]"));
  EXPECT_EQ(w.back(), "test.yaml: 51 more warnings not shown");
}

}  // namespace
}  // namespace mxlimit
