// A policy's `charge`, `status`, `cost`, `errcode`, `info_uri` and
// `can_upgrade` in the YAML file: what loads, and every error at its
// position.

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/policy.h"
#include "tests/testing/config_helpers.h"

namespace mxlimit {
namespace config_outcome_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_config::Errors;
using testing_config::Parse;

// One policy with `extra` lines (each indented four spaces, "\n"-ended).
std::string OnePolicy(std::string_view extra,
                      std::string_view rate =
                          "    rate_limit: {unit: hour, requests_per_unit: "
                          "612, burst: 3}\n") {
  std::string yaml =
      "policies:\n"
      "  - name: p\n"
      "    match: /_matrix/client/v3/login\n";
  yaml.append(rate);
  yaml.append(extra);
  return yaml;
}

TEST(ConfigOutcomeTest, ReadsChargeStatusCostAndTheError) {
  const LimiterConfig c =
      Parse(OnePolicy("    charge: response\n"
                      "    status: [401, 403, 500-599]\n"
                      "    cost: request_bytes\n"
                      "    errcode: M_USER_LIMIT_EXCEEDED\n"
                      "    info_uri: https://example.org/limits\n"
                      "    can_upgrade: false\n"));
  ASSERT_EQ(c.policies.size(), 1u);
  const Policy& p = c.policies[0];
  EXPECT_EQ(p.charge, ChargeOn::kResponse);
  EXPECT_THAT(p.status,
              ElementsAre(StatusRange{401, 401}, StatusRange{403, 403},
                          StatusRange{500, 599}));
  EXPECT_EQ(p.cost, CostKind::kRequestBytes);
  EXPECT_EQ(p.errcode, "M_USER_LIMIT_EXCEEDED");
  EXPECT_EQ(p.info_uri, "https://example.org/limits");
  EXPECT_EQ(p.can_upgrade, false);
  EXPECT_TRUE(StatusCharges(p, 403));
  EXPECT_TRUE(StatusCharges(p, 599));
  EXPECT_FALSE(StatusCharges(p, 200));
}

TEST(ConfigOutcomeTest, ByteBurstsAreCheckedWithTheirRate) {
  // Synapse's remote media numbers: 500 MiB at 87 KiB a second.
  const LimiterConfig c = Parse(OnePolicy(
      "    cost: response_bytes\n",
      "    rate_limit: {unit: second, requests_per_unit: 89088, burst: "
      "524288000}\n"));
  ASSERT_EQ(c.policies.size(), 1u);
  EXPECT_EQ(c.policies[0].rate.burst(), 524288000);
  // The same burst at one a day is too long a tolerance.
  EXPECT_THAT(Errors(OnePolicy("",
                               "    rate_limit: {unit: day, "
                               "requests_per_unit: 1, burst: "
                               "524288000}\n")),
              ElementsAre(HasSubstr("expected burst * (unit / "
                                    "requests_per_unit) under 73 years")));
}

TEST(ConfigOutcomeTest, ResponseBytesImpliesChargeOnTheResponse) {
  const LimiterConfig c = Parse(OnePolicy("    cost: response_bytes\n"));
  ASSERT_EQ(c.policies.size(), 1u);
  EXPECT_TRUE(ChargedOnResponse(c.policies[0]));
  EXPECT_TRUE(StatusCharges(c.policies[0], 200));  // no list: any status
}

TEST(ConfigOutcomeTest, EachMistakeIsReportedAtItsValue) {
  EXPECT_THAT(Errors(OnePolicy("    charge: later\n")),
              ElementsAre("test.yaml:5:13: policies[0].charge: got later, "
                          "expected request or response"));
  EXPECT_THAT(Errors(OnePolicy("    cost: megabytes\n")),
              ElementsAre("test.yaml:5:11: policies[0].cost: got megabytes, "
                          "expected requests, request_bytes or "
                          "response_bytes"));
  EXPECT_THAT(
      Errors(OnePolicy("    charge: response\n    status: [401, 4xx]\n")),
      ElementsAre("test.yaml:6:19: policies[0].status[1]: got \"4xx\", "
                  "expected a status code or a range such as 400-499"));
  EXPECT_THAT(
      Errors(OnePolicy("    charge: response\n    status: [600]\n")),
      ElementsAre("test.yaml:6:13: policies[0].status: got 600-600, expected "
                  "status codes from 100 to 599, the lower first"));
  EXPECT_THAT(
      Errors(OnePolicy("    charge: response\n    status: [499-400]\n")),
      ElementsAre(HasSubstr("got 499-400, expected status codes from 100 "
                            "to 599, the lower first")));
  EXPECT_THAT(Errors(OnePolicy("    status: [401]\n")),
              ElementsAre("test.yaml:5:13: policies[0].status: only a policy "
                          "charged on the response reads the status; add "
                          "charge: response, or remove status"));
  EXPECT_THAT(
      Errors(OnePolicy("    charge: request\n    cost: response_bytes\n")),
      ElementsAre(HasSubstr("policies[0].charge: got request, but cost: "
                            "response_bytes is known only from the "
                            "response")));
}

TEST(ConfigOutcomeTest, ChargesNeedALimitedRateAndCannotDelay) {
  EXPECT_THAT(
      Errors(OnePolicy("    cost: response_bytes\n", "    unlimited: true\n")),
      ElementsAre("test.yaml:5:11: policies[0].cost: got "
                  "response_bytes, which needs a limited rate to "
                  "charge; the policy has unlimited"));
  EXPECT_THAT(
      Errors(OnePolicy("    charge: response\n",
                       "    concurrency: {limit: 2, lease: 30s}\n")),
      ElementsAre(HasSubstr("policies[0].charge: got response, which needs "
                            "a limited rate to charge; the policy has an "
                            "in-flight limit")));
  EXPECT_THAT(Errors(OnePolicy("    charge: response\n    on_limit: delay\n"
                               "    max_delay: 1s\n")),
              ElementsAre(HasSubstr("policies[0].charge: a policy charged on "
                                    "the response cannot delay")));
}

TEST(ConfigOutcomeTest, ProblemsPointAtWhatTheFileSays) {
  // cost: response_bytes implies charge: response; the delay problem points
  // at the cost the file wrote.
  EXPECT_THAT(Errors(OnePolicy("    cost: response_bytes\n    on_limit: delay\n"
                               "    max_delay: 1s\n")),
              ElementsAre(HasSubstr("test.yaml:5:11: policies[0].cost: a "
                                    "policy charged on the response cannot "
                                    "delay")));
  // A rate that did not read is reported once, not again as missing.
  EXPECT_THAT(Errors(OnePolicy("    cost: request_bytes\n",
                               "    rate_limit: {unit: fortnight, "
                               "requests_per_unit: 5}\n")),
              ElementsAre(HasSubstr("rate_limit.unit: got fortnight")));
}

TEST(ConfigOutcomeTest, TheErrorFollowsMsc4335) {
  EXPECT_THAT(Errors(OnePolicy("    errcode: M_USER_LIMIT_EXCEEDED\n")),
              ElementsAre("test.yaml:5:14: policies[0].errcode: "
                          "M_USER_LIMIT_EXCEEDED needs info_uri (MSC4335): "
                          "where the user reads about the limit"));
  EXPECT_THAT(Errors(OnePolicy("    info_uri: https://example.org\n")),
              ElementsAre("test.yaml:5:15: policies[0].info_uri: only "
                          "errcode: M_USER_LIMIT_EXCEEDED takes info_uri "
                          "(MSC4335)"));
  EXPECT_THAT(Errors(OnePolicy("    can_upgrade: true\n")),
              ElementsAre(HasSubstr("policies[0].can_upgrade: only errcode: "
                                    "M_USER_LIMIT_EXCEEDED takes "
                                    "can_upgrade")));
  EXPECT_THAT(Errors(OnePolicy("    errcode: 'M_BAD\"CODE'\n")),
              ElementsAre(HasSubstr("policies[0].errcode: got "
                                    "\"M_BAD\\\"CODE\", expected 1 to 64 of "
                                    "A-Z, 0-9, '_' and '.'")));
  EXPECT_THAT(
      Errors(OnePolicy("    errcode: M_USER_LIMIT_EXCEEDED\n"
                       "    info_uri: 'javascript:alert(1)'\n")),
      ElementsAre(HasSubstr("policies[0].info_uri: got "
                            "\"javascript:alert(1)\", expected an http(s) "
                            "URI")));
  // Any other errcode of the right shape is the operator's call.
  EXPECT_EQ(Parse(OnePolicy("    errcode: M_RESOURCE_LIMIT_EXCEEDED\n"))
                .policies[0]
                .errcode,
            "M_RESOURCE_LIMIT_EXCEEDED");
}

TEST(ConfigOutcomeTest, TheBuiltInsChargedOnTheResponseAreValid) {
  int found = 0;
  for (const Policy& p : BuiltinPolicies()) {
    if (!ChargedOnResponse(p)) continue;
    ++found;
    EXPECT_THAT(OutcomeProblems(p), ::testing::IsEmpty()) << p.name;
    EXPECT_EQ(p.layer, "response") << p.name;
  }
  EXPECT_EQ(found, 2);
}

// docs/config.md's upload quota example loads as it says.
TEST(ConfigOutcomeTest, TheDocumentedUploadQuotaLoads) {
  std::ifstream in(std::string(MXLIMIT_SOURCE_DIR) + "/docs/config.md");
  const std::string doc(std::istreambuf_iterator<char>(in), {});
  const size_t name = doc.find("  - name: upload-quota");
  ASSERT_NE(name, std::string::npos);
  const size_t start = doc.rfind("policies:\n", name);
  const size_t end = doc.find("```", name);
  const LimiterConfig c = Parse(doc.substr(start, end - start));
  ASSERT_EQ(c.policies.size(), 1u);
  const Policy& p = c.policies[0];
  EXPECT_EQ(p.cost, CostKind::kRequestBytes);
  EXPECT_EQ(p.scope, Scope::kUser);
  EXPECT_EQ(p.rate.burst(), 100 * 1024 * 1024);
  EXPECT_EQ(p.errcode, kUserLimitExceededErrcode);
}

TEST(ConfigOutcomeTest, ChangingTheCostKindResetsBuckets) {
  Policy before = BuiltinPolicies()[0];
  Policy after = before;
  after.charge = ChargeOn::kResponse;
  EXPECT_TRUE(KeepsBuckets(before, after));
  after.cost = CostKind::kRequestBytes;
  EXPECT_FALSE(KeepsBuckets(before, after));
  EXPECT_EQ(BucketResetReason(before, after), "cost requests -> request_bytes");
}

}  // namespace config_outcome_test
}  // namespace mxlimit
