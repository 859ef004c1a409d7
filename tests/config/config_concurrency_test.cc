// The YAML side of in-flight limits and query conditions: what loads, and
// every error at its exact position.

#include <chrono>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/policy.h"
#include "tests/testing/config_helpers.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using testing_config::Errors;
using testing_config::Parse;

std::string SyncPolicy(std::string_view lines) {
  return "policies:\n  - name: initial-syncs\n    match: "
         "/_matrix/client/v3/sync\n    scope: user\n" +
         std::string(lines);
}

TEST(ConfigConcurrencyTest, LoadsLimitLeaseAndQueryConditions) {
  const LimiterConfig config =
      Parse(SyncPolicy("    concurrency: { limit: 4, lease: 90s }\n"
                       "    query_absent: [since]\n"
                       "    query_present: [full_state, filter]\n") +
            "tables:\n  leases: { capacity: 500 }\n");
  ASSERT_EQ(config.policies.size(), 1u);
  const Policy& p = config.policies[0];
  ASSERT_TRUE(p.concurrency.has_value());
  EXPECT_EQ(p.concurrency->limit, 4);
  EXPECT_EQ(p.concurrency->lease, std::chrono::seconds(90));
  EXPECT_EQ(p.rate.kind(), Rate::Kind::kUnlimited);
  EXPECT_THAT(p.query_absent, ElementsAre("since"));
  EXPECT_THAT(p.query_present, ElementsAre("full_state", "filter"));
  EXPECT_EQ(config.tables.lease_capacity, 500u);
}

TEST(ConfigConcurrencyTest, LimitAndLeaseOutOfRange) {
  EXPECT_THAT(
      Errors(SyncPolicy("    concurrency: { limit: 65, lease: 1s }\n")),
      ElementsAre("test.yaml:5:27: policies[0].concurrency.limit: got 65, "
                  "expected an integer from 1 to 64"));
  EXPECT_THAT(
      Errors(SyncPolicy("    concurrency: { limit: 2, lease: 2h }\n")),
      ElementsAre("test.yaml:5:37: policies[0].concurrency.lease: got 2h, "
                  "expected a duration from 1ms to 3600s, such as 30s"));
  EXPECT_THAT(Errors(SyncPolicy("    concurrency: { limit: 2 }\n")),
              ElementsAre("test.yaml:5:18: policies[0].concurrency: missing "
                          "required key \"lease\""));
  EXPECT_THAT(Errors(SyncPolicy("    concurrency: 3\n")),
              ElementsAre(::testing::StartsWith(
                  "test.yaml:5:18: policies[0].concurrency: got 3, expected "
                  "a map")));
}

TEST(ConfigConcurrencyTest, ARateBesideConcurrencyIsAnError) {
  EXPECT_THAT(
      Errors(SyncPolicy("    concurrency: { limit: 2, lease: 1s }\n"
                        "    rate_limit: { unit: second, requests_per_unit: "
                        "1 }\n")),
      ElementsAre("test.yaml:6:5: policies[0].rate_limit: an in-flight policy "
                  "(concurrency, line 5) has no rate; write the rate as "
                  "another policy"));
  // An in-flight policy may queue.
  const LimiterConfig queued =
      Parse(SyncPolicy("    concurrency: { limit: 2, lease: 1s }\n"
                       "    on_limit: delay\n    max_delay: 1s\n"));
  ASSERT_EQ(queued.policies.size(), 1u);
  EXPECT_EQ(queued.policies[0].on_limit, OnLimit::kDelay);
}

TEST(ConfigConcurrencyTest, BadQueryNames) {
  EXPECT_THAT(
      Errors(SyncPolicy("    unlimited: true\n    query_absent: [\"a=b\", "
                        "since]\n")),
      ElementsAre("test.yaml:6:20: policies[0].query_absent[0]: got \"a=b\", "
                  "expected a query parameter name without '&', '=', '#', "
                  "spaces or control bytes"));
  EXPECT_THAT(
      Errors(SyncPolicy("    unlimited: true\n    query_present: since\n")),
      ElementsAre(::testing::StartsWith(
          "test.yaml:6:20: policies[0].query_present: got since, expected a "
          "list of query parameter names")));
}

TEST(ConfigConcurrencyTest, TooManyInFlightGroups) {
  std::string yaml = "policies:\n";
  for (int i = 0; i < 5; ++i) {
    yaml += "  - name: c" + std::to_string(i) +
            "\n    match: /_matrix/*\n    layer: l" + std::to_string(i) +
            "\n    concurrency: { limit: 1, lease: 1s }\n";
  }
  // The built-ins hold two in-flight groups: c2 is the fifth.
  EXPECT_THAT(
      Errors(yaml),
      ElementsAre("test.yaml:10:5: policies[2].concurrency: in-flight group 5 "
                  "(layer, scope, mode and query conditions) of a set that "
                  "holds at most 4, built-ins included (a request holds one "
                  "lease per group); give it the layer, scope and conditions "
                  "of another in-flight policy"));
}

}  // namespace
}  // namespace mxlimit
