// The YAML config loader, error side: every kind of error is reported with
// its exact line and column, all errors of a file at once, bounded in size,
// and a bad file yields nothing.

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy.h"
#include "tests/testing/config_helpers.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;
using testing_config::Errors;
using testing_config::Parse;

// --- Errors, one kind at a time, each with its exact position. ---------------

TEST(ConfigErrorTest, YamlSyntax) {
  EXPECT_THAT(Errors("tables:\n  ip: { capacity: 5\n"),
              ElementsAre(StartsWith("test.yaml:3:1: YAML syntax error: ")));
  EXPECT_THAT(Errors("policies:\n  - name: a\n   match: b\n"),
              ElementsAre(StartsWith("test.yaml:3:4: YAML syntax error: ")));
  EXPECT_THAT(Errors("a: *nowhere\n"),
              ElementsAre("test.yaml:1:4: YAML syntax error: the referenced "
                          "anchor is not defined"));
}

TEST(ConfigErrorTest, TopLevelNotAMap) {
  EXPECT_THAT(
      Errors("- a\n- b\n"),
      ElementsAre("test.yaml:1:1: top level: got a list, expected a "
                  "map with keys builtin_policies, shadow_mode, tables, "
                  "routes, exempt, tiers, policies, response_headers, store"));
  EXPECT_THAT(
      Errors("hello\n"),
      ElementsAre("test.yaml:1:1: top level: got hello, expected a "
                  "map with keys builtin_policies, shadow_mode, tables, "
                  "routes, exempt, tiers, policies, response_headers, store"));
}

TEST(ConfigErrorTest, MoreThanOneDocument) {
  EXPECT_THAT(Errors("tables: {}\n---\npolicies: []\n"),
              ElementsAre("test.yaml:3:1: a config file holds one YAML "
                          "document; another one starts here (remove the "
                          "'---' separator)"));
}

TEST(ConfigErrorTest, UnknownKeysSuggestTheNearest) {
  EXPECT_THAT(
      Errors("polices: []\n"),
      ElementsAre("test.yaml:1:1: unknown key \"polices\" in the top level "
                  "(did you mean \"policies\"?); known keys: "
                  "builtin_policies, shadow_mode, tables, routes, exempt, "
                  "tiers, policies, response_headers, store"));
  EXPECT_THAT(
      Errors("tables:\n  ip: { capacty: 5 }\n"),
      ElementsAre("test.yaml:2:9: unknown key \"capacty\" in tables.ip (did "
                  "you mean \"capacity\"?); known keys: capacity, "
                  "ipv4_prefix, ipv6_prefix"));
  EXPECT_THAT(
      Errors("policies:\n  - name: a\n    match: /a\n    unlimited: true\n"
             "    colour: blue\n"),
      ElementsAre("test.yaml:5:5: unknown key \"colour\" in policies[0]; "
                  "known keys: name, match, methods, scope, rate_limit, "
                  "burst, unlimited, shadow_mode, share_threshold, layer, "
                  "client_prefix, sharing, on_limit, max_delay, "
                  "concurrency, query_absent, query_present, charge, "
                  "status, cost, errcode, info_uri, can_upgrade"));
  EXPECT_THAT(
      Errors("policies:\n  - name: a\n    match: /a\n"
             "    rate_limit: { unit: day, requests_per_unit: 1, burts: 1 }\n"),
      ElementsAre("test.yaml:4:52: unknown key \"burts\" in "
                  "policies[0].rate_limit (did you mean \"burst\"?); known "
                  "keys: unit, requests_per_unit, burst"));
}

TEST(ConfigErrorTest, DuplicateKeys) {
  EXPECT_THAT(Errors("tables:\n  user: { capacity: 1, capacity: 2 }\n"),
              ElementsAre("test.yaml:2:24: duplicate key \"capacity\" in "
                          "tables.user (first given at line 2)"));
}

TEST(ConfigErrorTest, WrongTypes) {
  EXPECT_THAT(Errors("builtin_policies: yes\n"),
              ElementsAre("test.yaml:1:19: builtin_policies: got yes, "
                          "expected true or false"));
  EXPECT_THAT(Errors("tables:\n  ip:\n    capacity: lots\n"),
              ElementsAre("test.yaml:3:15: tables.ip.capacity: got lots, "
                          "expected an integer from 1 to 100000000"));
  EXPECT_THAT(Errors("tables:\n  ip:\n    capacity: \"5000\"\n"),
              ElementsAre("test.yaml:3:15: tables.ip.capacity: got the "
                          "string \"5000\", expected an integer from 1 to "
                          "100000000"));
  EXPECT_THAT(Errors("tables:\n  ip:\n    capacity:\n"),
              ElementsAre("test.yaml:3:5: tables.ip.capacity: got nothing, "
                          "expected an integer from 1 to 100000000"));
  EXPECT_THAT(Errors("tables: [1, 2]\n"),
              ElementsAre("test.yaml:1:9: tables: got a list, expected a map "
                          "with keys ip, user, origin, room, target, leases"));
  EXPECT_THAT(Errors("exempt:\n  ips: 10.0.0.0/8\n"),
              ElementsAre("test.yaml:2:8: exempt.ips: got 10.0.0.0/8, "
                          "expected a list of networks, e.g. "
                          "[\"10.0.0.0/8\", \"::1\"]"));
  EXPECT_THAT(Errors("exempt:\n  users: [{a: b}]\n"),
              ElementsAre("test.yaml:2:11: exempt.users[0]: got a map, "
                          "expected a user ID such as "
                          "\"@bridge:example.org\""));
  EXPECT_THAT(Errors("policies:\n  name: a\n"),
              ElementsAre("test.yaml:2:3: policies: got a map, expected a "
                          "list of policies (each \"- name: ...\")"));
  EXPECT_THAT(Errors("policies:\n  - just a string\n"),
              ElementsAre(StartsWith("test.yaml:2:5: policies[0]: got just a "
                                     "string, expected a map with keys name")));
}

// A policy with everything valid except the lines given, to test one field.
std::string PolicyWith(std::string_view lines,
                       std::string_view match = "/_matrix/*") {
  return "policies:\n  - name: p\n    match: " + std::string(match) + "\n" +
         std::string(lines);
}

TEST(ConfigErrorTest, RateNumbers) {
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "1.5 }\n")),
      ElementsAre("test.yaml:4:52: policies[0].rate_limit.requests_per_unit: "
                  "got 1.5, expected an integer from 0 to 1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "-3 }\n")),
      ElementsAre("test.yaml:4:52: policies[0].rate_limit.requests_per_unit: "
                  "got -3, expected an integer from 0 to 1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "sixty }\n")),
      ElementsAre("test.yaml:4:52: policies[0].rate_limit.requests_per_unit: "
                  "got sixty, expected an integer from 0 to 1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "99999999999999999999 }\n")),
      ElementsAre("test.yaml:4:52: policies[0].rate_limit.requests_per_unit: "
                  "got 99999999999999999999, expected an integer from 0 to "
                  "1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "2000000000 }\n")),
      ElementsAre("test.yaml:4:52: policies[0].rate_limit.requests_per_unit: "
                  "got 2000000000, expected an integer from 0 to 1000000000"));
}

TEST(ConfigErrorTest, BurstZeroNegativeOrTwice) {
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "10, burst: 0 }\n")),
      ElementsAre("test.yaml:4:63: policies[0].rate_limit.burst: got 0, "
                  "expected an integer from 1 to 1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "10 }\n    burst: -1\n")),
      ElementsAre("test.yaml:5:12: policies[0].burst: got -1, expected an "
                  "integer from 1 to 1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "10, burst: 2 }\n    burst: 3\n")),
      ElementsAre("test.yaml:5:5: policies[0].burst: burst is also given in "
                  "rate_limit (line 4); keep one of them"));
}

// Each field of a rate_limit map is checked on its own: three bad values,
// three errors, each at its value.
TEST(ConfigErrorTest, EveryBadRateFieldIsReported) {
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: {unit: weeks, requests_per_unit: "
                        "-1, burst: 0}\n")),
      ElementsAre("test.yaml:4:24: policies[0].rate_limit.unit: got weeks, "
                  "expected second, minute, hour or day",
                  "test.yaml:4:50: policies[0].rate_limit.requests_per_unit: "
                  "got -1, expected an integer from 0 to 1000000000",
                  "test.yaml:4:61: policies[0].rate_limit.burst: got 0, "
                  "expected an integer from 1 to 1000000000"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: {unit: hour, requests_per_unit: x, "
                        "burst: y}\n")),
      ElementsAre(HasSubstr("requests_per_unit: got x"),
                  HasSubstr("burst: got y")));
}

// An empty value is reported at its key, not at the next token (which
// yaml-cpp gives it, possibly on a line past the end of the file).
TEST(ConfigErrorTest, EmptyRateLimitIsReportedAtItsKey) {
  EXPECT_THAT(Errors(PolicyWith("    rate_limit:\n")),
              ElementsAre("test.yaml:4:5: policies[0].rate_limit: got "
                          "nothing, expected a map with keys unit, "
                          "requests_per_unit, burst"));
  EXPECT_THAT(Errors(PolicyWith("    client_prefix:\n    unlimited: true\n")),
              ElementsAre("test.yaml:4:5: policies[0].client_prefix: got "
                          "nothing, expected a map with keys ipv4, ipv6"));
}

// A burst means nothing on a blocked policy, as on an unlimited one: both
// are errors.
TEST(ConfigErrorTest, BurstOnABlockedPolicy) {
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "0, burst: 5 }\n")),
      ElementsAre("test.yaml:4:62: policies[0].rate_limit.burst: got 5, but "
                  "requests_per_unit is 0, which blocks every request: a "
                  "blocked policy has no burst; remove it"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "0 }\n    burst: 5\n")),
      ElementsAre(HasSubstr("test.yaml:5:12: policies[0].burst: got 5, but "
                            "requests_per_unit is 0")));
  Parse(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: 0 }\n"));
}

TEST(ConfigErrorTest, UnknownUnitAndScope) {
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minutes, requests_per_unit: "
                        "10 }\n")),
      ElementsAre("test.yaml:4:25: policies[0].rate_limit.unit: got minutes, "
                  "expected second, minute, hour or day (did you mean "
                  "\"minute\"?)"));
  EXPECT_THAT(
      Errors(PolicyWith("    scope: server\n    unlimited: true\n")),
      ElementsAre("test.yaml:4:12: policies[0].scope: got server, expected "
                  "ip, user, origin, room or target"));
  EXPECT_THAT(
      Errors(PolicyWith("    scope: usr\n    unlimited: true\n")),
      ElementsAre("test.yaml:4:12: policies[0].scope: got usr, expected ip, "
                  "user, origin, room or target (did you mean \"user\"?)"));
}

TEST(ConfigErrorTest, MissingRequiredKeys) {
  EXPECT_THAT(
      Errors("policies:\n  - match: /a\n    unlimited: true\n"),
      ElementsAre("test.yaml:2:5: policies[0]: missing required key \"name\""));
  EXPECT_THAT(
      Errors("policies:\n  - name: a\n    unlimited: true\n"),
      ElementsAre(
          "test.yaml:2:5: policies[0]: missing required key \"match\""));
  EXPECT_THAT(Errors(PolicyWith("")),
              ElementsAre("test.yaml:2:5: policies[0]: needs either "
                          "rate_limit: {unit: ..., requests_per_unit: ...} or "
                          "unlimited: true"));
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: hour }\n")),
      ElementsAre("test.yaml:4:17: policies[0].rate_limit: missing required "
                  "key \"requests_per_unit\""));
}

TEST(ConfigErrorTest, DuplicateNamesPointAtTheSecond) {
  EXPECT_THAT(Errors(R"(policies:
  - name: login
    match: /a
    unlimited: true
  - name: other
    match: /b
    unlimited: true
  - name: login
    match: /c
    unlimited: true
)"),
              ElementsAre("test.yaml:8:11: policies[2].name: duplicate policy "
                          "name \"login\"; the first is at line 2"));
}

TEST(ConfigErrorTest, ShareThresholdNeedsAWildcard) {
  EXPECT_THAT(
      Errors(R"(policies:
  - name: p
    match: /_matrix/client/v3/login
    share_threshold: true
    unlimited: true
)"),
      ElementsAre(
          "test.yaml:4:22: policies[0].share_threshold: got "
          "true, but match \"/_matrix/client/v3/login\" (line "
          "3) has no '*'; sharing needs a wildcard pattern or a list of "
          "patterns"));
  // `false` is the default and harmless on an exact pattern.
  Parse(
      "policies:\n  - name: p\n    match: /a\n    share_threshold: false\n"
      "    unlimited: true\n");
}

TEST(ConfigErrorTest, UnlimitedTogetherWithARate) {
  EXPECT_THAT(
      Errors(PolicyWith("    rate_limit: { unit: minute, requests_per_unit: "
                        "10 }\n    unlimited: true\n")),
      ElementsAre("test.yaml:5:16: policies[0].unlimited: got true, but "
                  "rate_limit is also given (line 4); a policy is either "
                  "unlimited or has a rate, not both"));
  EXPECT_THAT(Errors(PolicyWith("    unlimited: true\n    burst: 5\n")),
              ElementsAre("test.yaml:5:5: policies[0].burst: an unlimited "
                          "policy has no burst; remove it or replace "
                          "unlimited with a rate_limit"));
}

TEST(ConfigErrorTest, BadMatchAndMethodsAndName) {
  EXPECT_THAT(
      Errors("policies:\n  - name: p\n    match: _matrix/*\n"
             "    unlimited: true\n"),
      ElementsAre("test.yaml:3:12: policies[0].match: got \"_matrix/*\", "
                  "expected a path pattern starting with '/' or '*', or "
                  "\"<fallback>\""));
  EXPECT_THAT(
      Errors("policies:\n  - name: p\n    match: \"\"\n    unlimited: true\n"),
      ElementsAre("test.yaml:3:12: policies[0].match: got \"\", expected a "
                  "path pattern starting with '/' or '*', or \"<fallback>\""));
  EXPECT_THAT(
      Errors("policies:\n  - name: p\n    match: /a?b=1\n"
             "    unlimited: true\n"),
      ElementsAre("test.yaml:3:12: policies[0].match: got \"/a?b=1\", "
                  "expected a pattern for the query-free path (drop the '?' "
                  "or '#' part)"));
  // Issue #30, item 15: a '#' is most likely a room alias's, which clients
  // send as %23: the message says so and offers the pattern that matches.
  EXPECT_THAT(
      Errors("policies:\n  - name: p\n"
             "    match: \"/_matrix/client/v3/directory/room/#a:b.org\"\n"
             "    unlimited: true\n"),
      ElementsAre("test.yaml:3:12: policies[0].match: got "
                  "\"/_matrix/client/v3/directory/room/#a:b.org\", expected a "
                  "'#' in a path percent-encoded as %23: clients send it so (a "
                  "raw '#' starts the fragment, which never reaches the "
                  "server); did you mean "
                  "\"/_matrix/client/v3/directory/room/%23a:b.org\"?"));
  EXPECT_TRUE(ParseConfig("policies:\n  - name: p\n    match: "
                          "/_matrix/client/v3/directory/room/%23a:b.org\n"
                          "    unlimited: true\n",
                          "test.yaml")
                  .ok());
  EXPECT_THAT(Errors(PolicyWith("    methods: [GET, FETCH]\n"
                                "    unlimited: true\n")),
              ElementsAre("test.yaml:4:20: policies[0].methods[1]: got "
                          "\"FETCH\", expected an HTTP method (GET, HEAD, "
                          "POST, PUT, DELETE, OPTIONS, PATCH, CONNECT or "
                          "TRACE)"));
  EXPECT_THAT(Errors(PolicyWith("    methods: [PSOT]\n"
                                "    unlimited: true\n")),
              ElementsAre(HasSubstr("; did you mean POST?")));
  // `methods: []` and `methods:` with no value are the same error: neither
  // silently means every method.
  EXPECT_THAT(Errors(PolicyWith("    methods: []\n    unlimited: true\n")),
              ElementsAre("test.yaml:4:14: policies[0].methods: lists no "
                          "method, expected at least one, e.g. [GET, POST] "
                          "(leave methods out to match every method)"));
  EXPECT_THAT(Errors(PolicyWith("    methods:\n    unlimited: true\n")),
              ElementsAre("test.yaml:4:5: policies[0].methods: lists no "
                          "method, expected at least one, e.g. [GET, POST] "
                          "(leave methods out to match every method)"));
  EXPECT_THAT(
      Errors("policies:\n  - name: my policy\n    match: /a\n"
             "    unlimited: true\n"),
      ElementsAre("test.yaml:2:11: policies[0].name: got \"my policy\", "
                  "expected 1 to 100 letters, digits, '.', '_', ':' or '-'"));
}

// Issue #30, item 13: set-level errors come in the same pass as the fields',
// at a position. The layer limit counts route and the built-ins' layers
// first, so the policy named is the operator's first one past it.
std::string LayeredPolicies(int count, std::string_view extra = "") {
  std::string yaml(extra);
  yaml += "policies:\n";
  for (int i = 1; i <= count; ++i) {
    absl::StrAppend(&yaml, "  - name: p", i, "\n    match: /p", i,
                    "\n    layer: l", i, "\n    unlimited: true\n");
  }
  return yaml;
}

TEST(ConfigErrorTest, TooManyLayersPointAtTheFirstPolicyPastTheLimit) {
  // Built-ins on: route, network, response and aggregate leave five layers.
  EXPECT_TRUE(ParseConfig(LayeredPolicies(5), "test.yaml").ok());
  EXPECT_THAT(Errors(LayeredPolicies(7)),
              ElementsAre("test.yaml:24:12: policies[5].layer: got \"l6\", "
                          "layer 10 of a set that holds at most 9 (built-ins "
                          "and route included: route, network, response, "
                          "aggregate, l1, l2, l3, l4, l5); put this policy in "
                          "one of those layers (the set has 11 layers in "
                          "all)"));
  // Without the built-ins, route and eight more.
  EXPECT_TRUE(
      ParseConfig(LayeredPolicies(8, "builtin_policies: false\n"), "test.yaml")
          .ok());
  EXPECT_THAT(Errors(LayeredPolicies(9, "builtin_policies: false\n")),
              ElementsAre(StartsWith("test.yaml:37:12: policies[8].layer: got "
                                     "\"l9\", layer 10 of")));
  // Reported together with a field error, before and after it.
  std::string yaml = LayeredPolicies(6);
  yaml.replace(yaml.find("unlimited: true"), 15,
               "rate_limit: {unit: fortnight, requests_per_unit: 1}");
  yaml +=
      "  - name: bad\n    match: /x\n    scope: user\n"
      "    client_prefix: {ipv4: 24}\n    unlimited: true\n";
  EXPECT_THAT(Errors(yaml),
              ElementsAre(HasSubstr("policies[0].rate_limit.unit: got "
                                    "fortnight"),
                          HasSubstr("policies[5].layer: got \"l6\""),
                          HasSubstr("policies[6].client_prefix: only ip- "
                                    "and origin-scope policies")));
}

TEST(ConfigErrorTest, ARoomScopePatternMustReachARoomRoute) {
  EXPECT_THAT(
      Errors(PolicyWith("    scope: room\n    unlimited: true\n",
                        "/_matrix/client/v3/sync")),
      ElementsAre(
          "test.yaml:3:12: policies[0].match: got "
          "\"/_matrix/client/v3/sync\", but a room-scope policy applies only "
          "to routes with a {roomId} or {roomIdOrAlias} placeholder, and "
          "this pattern matches none"));
  EXPECT_EQ(Parse(PolicyWith("    scope: room\n    unlimited: true\n",
                             "/_matrix/client/v3/rooms/*/invite"))
                .policies.at(0)
                .scope,
            Scope::kRoom);
  // An origin policy may set its network prefix (the other family keeps
  // the origin default, /48).
  const LimiterConfig origin = Parse(PolicyWith(
      "    scope: origin\n    client_prefix: {ipv4: 16}\n    unlimited: "
      "true\n"));
  ASSERT_EQ(origin.policies.size(), 1u);
  EXPECT_EQ(origin.policies[0].client_prefix, (ClientPrefix{16, 48}));
}

TEST(ConfigErrorTest, OnLimitDelayNeedsAMaxDelayAndARate) {
  constexpr char kRate[] =
      "    rate_limit: { unit: second, requests_per_unit: 10, burst: 2 }\n";
  const LimiterConfig ok = Parse(PolicyWith(
      std::string(kRate) + "    on_limit: delay\n    max_delay: 500ms\n"));
  ASSERT_EQ(ok.policies.size(), 1u);
  EXPECT_EQ(ok.policies[0].on_limit, OnLimit::kDelay);
  EXPECT_EQ(ok.policies[0].max_delay, std::chrono::milliseconds(500));
  EXPECT_THAT(
      Errors(PolicyWith(std::string(kRate) + "    on_limit: delay\n")),
      ElementsAre("test.yaml:5:15: policies[0].on_limit: got delay, but "
                  "max_delay is missing; say how long a request may wait, "
                  "e.g. max_delay: 500ms"));
  EXPECT_THAT(
      Errors(PolicyWith(std::string(kRate) + "    max_delay: 500ms\n")),
      ElementsAre("test.yaml:5:16: policies[0].max_delay: only a policy with "
                  "on_limit: delay waits; add on_limit: delay or remove "
                  "max_delay"));
  EXPECT_THAT(Errors(PolicyWith(std::string(kRate) +
                                "    on_limit: delay\n    max_delay: 500\n")),
              ElementsAre("test.yaml:6:16: policies[0].max_delay: got 500, "
                          "expected a duration from 1us to 60s, such as 500ms "
                          "(a duration needs a unit: us, ms or s)"));
  EXPECT_THAT(Errors(PolicyWith("    unlimited: true\n    on_limit: delay\n"
                                "    max_delay: 1s\n")),
              ElementsAre(HasSubstr("policies[0].on_limit: got delay, but the "
                                    "policy has no limited rate")));
  EXPECT_THAT(Errors(PolicyWith(std::string(kRate) + "    on_limit: later\n")),
              ElementsAre("test.yaml:5:15: policies[0].on_limit: got later, "
                          "expected deny or delay"));
}

// A client_prefix on a user-scope policy: the scope error does not hide the
// values' own.
TEST(ConfigErrorTest, ClientPrefixRangeErrorsBesideTheScopeError) {
  EXPECT_THAT(
      Errors(PolicyWith("    scope: user\n    client_prefix: {ipv4: 33, "
                        "ipv6: 129}\n    unlimited: true\n")),
      ElementsAre("test.yaml:5:5: policies[0].client_prefix: only ip- and "
                  "origin-scope policies mask client addresses; remove it or "
                  "use scope: ip",
                  "test.yaml:5:27: policies[0].client_prefix.ipv4: got 33, "
                  "expected an integer from 0 to 32",
                  "test.yaml:5:37: policies[0].client_prefix.ipv6: got 129, "
                  "expected an integer from 0 to 128"));
  // And the core's rule names both, for embedders that skip the loader.
  EXPECT_EQ(ClientPrefixProblem(ClientPrefix{33, 64}, Scope::kUser),
            "expected no client_prefix on a user-scope policy (it masks "
            "client addresses; only ip and origin scopes key by them); and "
            "expected ipv4 from 0 to 32 and ipv6 from 0 to 128");
}

TEST(ConfigErrorTest, InvalidCidr) {
  EXPECT_THAT(
      Errors("exempt:\n  ips:\n    - 10.0.0.0/8\n    - 10.0.0.0/33\n"),
      ElementsAre("test.yaml:4:7: exempt.ips[1]: invalid CIDR "
                  "\"10.0.0.0/33\": prefix length 33 is above 32, the IPv4 "
                  "maximum"));
  EXPECT_THAT(Errors("exempt:\n  ips: [\"localhost\"]\n"),
              ElementsAre(StartsWith("test.yaml:2:9: exempt.ips[0]: invalid "
                                     "CIDR \"localhost\": ")));
}

TEST(ConfigErrorTest, InvalidExemptUser) {
  EXPECT_THAT(Errors("exempt:\n  users: [bridge]\n"),
              ElementsAre("test.yaml:2:11: exempt.users[0]: got \"bridge\", "
                          "expected a Matrix user ID such as "
                          "\"@bridge:example.org\" (no leading '@')"));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@bridge\"]\n"),
              ElementsAre(HasSubstr("(no ':server' part)")));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@:example.org\"]\n"),
              ElementsAre(HasSubstr("(empty localpart)")));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@a b:example.org\"]\n"),
              ElementsAre(HasSubstr("printable ASCII without spaces")));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@a:exa_mple.org\"]\n"),
              ElementsAre(HasSubstr("letters, digits, '.' and '-'")));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@a:example.org:99999\"]\n"),
              ElementsAre(HasSubstr("port is not a number from 1 to 65535")));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@a:[1.2.3.4]\"]\n"),
              ElementsAre(HasSubstr("not an IPv6 address")));
  EXPECT_THAT(Errors("exempt:\n  users: [\"@a:example.org:\"]\n"),
              ElementsAre(HasSubstr("empty port")));
}

TEST(ConfigErrorTest, CapacityZeroOrAbsurd) {
  EXPECT_THAT(Errors("tables:\n  ip: { capacity: 0 }\n"),
              ElementsAre("test.yaml:2:19: tables.ip.capacity: got 0, "
                          "expected an integer from 1 to 100000000"));
  EXPECT_THAT(Errors("tables:\n  user: { capacity: 100000001 }\n"),
              ElementsAre("test.yaml:2:21: tables.user.capacity: got "
                          "100000001, expected an integer from 1 to "
                          "100000000"));
}

TEST(ConfigErrorTest, PrefixesOutOfRange) {
  EXPECT_THAT(Errors("tables:\n  ip: { ipv4_prefix: 33, ipv6_prefix: 129 }\n"),
              ElementsAre("test.yaml:2:22: tables.ip.ipv4_prefix: got 33, "
                          "expected an integer from 0 to 32",
                          "test.yaml:2:39: tables.ip.ipv6_prefix: got 129, "
                          "expected an integer from 0 to 128"));
  EXPECT_THAT(Errors("tables:\n  user: { ipv4_prefix: 24 }\n"),
              ElementsAre(StartsWith("test.yaml:2:11: unknown key "
                                     "\"ipv4_prefix\" in tables.user")));
}

// --- Several errors, size limits, files. ------------------------------------

TEST(ConfigErrorTest, EveryErrorIsReportedInFileOrder) {
  std::vector<std::string> errors = Errors(R"(builtin_policies: maybe
tables:
  ip: { capacity: 0 }
exempt:
  ips: ["10.0.0.0/40"]
policies:
  - name: a
    match: /a
    rate_limit: { unit: fortnight, requests_per_unit: 3 }
  - name: a
    match: nope
    unlimited: true
    shadow_mode: 1
)");
  EXPECT_THAT(errors,
              ElementsAre(StartsWith("test.yaml:1:19: builtin_policies:"),
                          StartsWith("test.yaml:3:19: tables.ip.capacity:"),
                          StartsWith("test.yaml:5:9: exempt.ips[0]:"),
                          StartsWith("test.yaml:9:25: policies[0].rate_limit."
                                     "unit:"),
                          StartsWith("test.yaml:10:11: policies[1].name:"),
                          StartsWith("test.yaml:11:12: policies[1].match:"),
                          StartsWith("test.yaml:13:18: policies[1]."
                                     "shadow_mode:")));
}

TEST(ConfigErrorTest, ValidPartsOfABadFileAreNotReturned) {
  // The first policy and the tables are fine; the file as a whole is not,
  // so nothing of it may be applied.
  absl::StatusOr<LimiterConfig> config = ParseConfig(
      "tables: { ip: { capacity: 10 } }\npolicies:\n"
      "  - { name: good, match: /a, unlimited: true }\n"
      "  - { name: bad, match: /b }\n",
      "test.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "test.yaml:4:5: policies[1]: needs either rate_limit: {unit: ..., "
            "requests_per_unit: ...} or unlimited: true");
}

TEST(ConfigErrorTest, ErrorListIsCapped) {
  std::string yaml = "policies:\n";
  for (int i = 0; i < 150; ++i) yaml += "  - { name: p, match: /a }\n";
  std::vector<std::string> errors = Errors(yaml);
  ASSERT_THAT(errors, SizeIs(kMaxConfigErrorsReported + 1));
  // 150 missing rates plus 149 duplicate names.
  EXPECT_EQ(errors.back(), "test.yaml: 199 more errors not shown");
}

TEST(ConfigErrorTest, HugeValuesAreQuotedShort) {
  std::string yaml = "policies:\n  - name: " + std::string(64 * 1024, 'x') +
                     "\n    match: /a\n    unlimited: true\n";
  std::vector<std::string> errors = Errors(yaml);
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_LT(errors[0].size(), 250u);
  EXPECT_THAT(errors[0], HasSubstr("...\" (65536 bytes)"));
}

TEST(ConfigErrorTest, DeepNestingIsAnErrorNotACrash) {
  std::string yaml = "policies: " + std::string(100'000, '[') +
                     std::string(100'000, ']') + "\n";
  std::vector<std::string> errors = Errors(yaml);
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_THAT(errors[0], StartsWith("test.yaml:"));
}

TEST(ConfigErrorTest, HugeUnknownKeyIsQuotedShort) {
  // YAML caps implicit keys at 1024 characters; "? " spells a long one.
  std::vector<std::string> errors =
      Errors("? " + std::string(64 * 1024, 'k') + "\n: 1\n");
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_LT(errors[0].size(), 250u);
  EXPECT_THAT(errors[0], HasSubstr("(65536 bytes) in the top level"));
}

// Issue #30, item 15: a NUL byte is named, at its position, rather than
// yaml-cpp's "unknown escape character" (or a silently cut file).
TEST(ConfigErrorTest, NulBytesAreNamedAtTheirPosition) {
  using std::string_literals::operator""s;
  EXPECT_THAT(Errors("tables:\0\n"s),
              ElementsAre("test.yaml:1:8: a NUL byte (\\0): YAML text cannot "
                          "hold one; is this the right file, or is it "
                          "corrupted? (a NUL character in a value is \"\\0\" "
                          "in double quotes)"));
  EXPECT_THAT(Errors("policies:\n  - name: ab\n    match: /x\0\n"
                     "    unlimited: true\n"s),
              ElementsAre(StartsWith("test.yaml:3:14: a NUL byte (\\0): ")));
  // In a comment, where yaml-cpp used to stop reading without a word.
  EXPECT_THAT(Errors("# a \0 b \0\npolicies: [{name: a}]\n"s),
              ElementsAre(HasSubstr("1:5: a NUL byte (\\0): YAML text cannot "
                                    "hold one (the file holds 2; this is the "
                                    "first)")));
  // "\0" in double quotes is YAML's NUL character: the value's own check
  // names it.
  EXPECT_THAT(Errors("policies:\n  - name: \"a\\0b\"\n    match: /x\n"
                     "    unlimited: true\n"),
              ElementsAre(HasSubstr("policies[0].name: got \"a\\x00\\x62\"")));
}

// UTF-16 and UTF-32 text is made of NUL bytes; yaml-cpp decodes it, and it
// still loads.
TEST(ConfigErrorTest, Utf16AndUtf32TextStillLoads) {
  using std::string_literals::operator""s;
  const std::string text =
      "policies:\n  - name: ab\n    match: /x\n    unlimited: true\n";
  auto widen = [&](std::string bom, int width) {
    for (char c : text) {
      bom.push_back(c);
      bom.append(width - 1, '\0');
    }
    return bom;
  };
  for (const std::string& wide :
       {widen("\xFF\xFE", 2), widen("", 2), widen("\xFF\xFE\0\0"s, 4)}) {
    absl::StatusOr<LimiterConfig> config = ParseConfig(wide, "wide.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->policies.size(), 1u);
  }
}

TEST(ConfigErrorTest, OversizedTextIsRefusedBeforeParsing) {
  std::string yaml(kMaxConfigBytes + 1, '#');
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "big.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "big.yaml: the config is 1048577 bytes, over the limit of "
            "1048576 bytes (1 MiB); is this the right file?");
  // Exactly at the limit is fine (a file of comments).
  yaml.pop_back();
  EXPECT_TRUE(ParseConfig(yaml, "big.yaml").ok());
}

std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(MXLIMIT_TEST_DATA_DIR) + "/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// docs/config.md quotes this file and its output; keep the three in step.
TEST(ConfigErrorTest, DocumentedExampleGivesTheDocumentedOutput) {
  absl::StatusOr<LimiterConfig> config =
      ParseConfig(ReadTestData("bad_config.yaml"), "bad_config.yaml");
  ASSERT_FALSE(config.ok());
  std::string want = ReadTestData("bad_config.errors");
  ASSERT_FALSE(want.empty());
  want.pop_back();  // The file ends in a newline; the message does not.
  EXPECT_EQ(config.status().message(), want);
}

// The YAML blocks of docs/config.md: the first is the shape reference and must
// load; the second quotes tests/data/bad_config.yaml byte for byte, and the
// block after it its exact errors. Rewording one without the others fails.
TEST(ConfigErrorTest, DocsConfigSnippetsAreCurrent) {
  std::ifstream in(std::string(MXLIMIT_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in.good());
  std::vector<std::pair<std::string, std::string>> blocks;  // fence, body
  std::string line;
  std::string* body = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (body == nullptr) {
        blocks.emplace_back(line.substr(3), "");
        body = &blocks.back().second;
      } else {
        body = nullptr;
      }
    } else if (body != nullptr) {
      *body += line + "\n";
    }
  }
  std::vector<size_t> yaml;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].first == "yaml") yaml.push_back(i);
  }
  // The file's shape, the routes section, the tiers section, the store
  // section, the bad file.
  ASSERT_EQ(yaml.size(), 5u);
  absl::StatusOr<LimiterConfig> shape =
      ParseConfig(blocks[yaml[0]].second, "config.md");
  EXPECT_TRUE(shape.ok()) << shape.status();
  absl::StatusOr<LimiterConfig> routes =
      ParseConfig(blocks[yaml[1]].second, "config.md");
  ASSERT_TRUE(routes.ok()) << routes.status();
  EXPECT_EQ(routes->routes.extra.size(), 2u);
  absl::StatusOr<LimiterConfig> tiers =
      ParseConfig(blocks[yaml[2]].second, "config.md");
  ASSERT_TRUE(tiers.ok()) << tiers.status();
  EXPECT_EQ(tiers->tiers.tiers.size(), 4u);
  EXPECT_EQ(tiers->tiers.users.size() + tiers->tiers.networks.size(), 4u);
  EXPECT_TRUE(Limiter::Create(*tiers).ok());
  yaml.erase(yaml.begin() + 1, yaml.begin() + 3);
  // The store example names a secret file no test machine has: the same
  // file with the secret inline must load.
  std::string store = blocks[yaml[1]].second;
  const size_t file_key = store.find("key_secret_file:");
  ASSERT_NE(file_key, std::string::npos);
  store.replace(file_key, store.find('\n', file_key) - file_key,
                "key_secret: 0123456789abcdef");
  absl::StatusOr<LimiterConfig> with_store = ParseConfig(store, "config.md");
  EXPECT_TRUE(with_store.ok()) << with_store.status();
  EXPECT_EQ(blocks[yaml[2]].second, ReadTestData("bad_config.yaml"));
  ASSERT_GT(blocks.size(), yaml[2] + 1);
  EXPECT_EQ(blocks[yaml[2] + 1].second, ReadTestData("bad_config.errors"));
}

}  // namespace
}  // namespace mxlimit
