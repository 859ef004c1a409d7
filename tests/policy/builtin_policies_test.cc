// The built-in policy table: valid, faithful to the Synapse figures it cites,
// documented in docs/policies.md, and each row resolving for the requests it
// is meant for.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/policy_set.h"
#include "tests/testing/policy_testing.h"

namespace mxlimit {
namespace {

using namespace ::mxlimit::testing;  // NOLINT: TestRoute enumerators.

TEST(BuiltinPoliciesTest, AreValidAndMarkedBuiltin) {
  std::vector<Policy> builtins = BuiltinPolicies();
  ASSERT_FALSE(builtins.empty());
  EXPECT_TRUE(ValidatePolicies(builtins).empty());
  for (const Policy& p : builtins) {
    EXPECT_TRUE(p.builtin) << p.name;
    // An in-flight row has a limit instead of a rate.
    EXPECT_NE(p.rate.unlimited(), !p.concurrency.has_value()) << p.name;
    EXPECT_FALSE(p.rate.blocked()) << p.name;
    EXPECT_FALSE(BuiltinPolicySource(p.name).empty()) << p.name;
  }
  EXPECT_TRUE(BuiltinPolicySource("no-such-policy").empty());
}

// The rows' comma lists split into their items; an empty list (every
// method) is no item at all, never one empty item.
TEST(BuiltinPoliciesTest, ListsSplitIntoNonEmptyItems) {
  for (const Policy& p : BuiltinPolicies()) {
    EXPECT_FALSE(p.match.empty()) << p.name;
    for (const std::string& m : p.match) EXPECT_FALSE(m.empty()) << p.name;
    for (const std::string& m : p.methods) EXPECT_FALSE(m.empty()) << p.name;
  }
  const std::vector<Policy> builtins = BuiltinPolicies();
  auto find = [&](std::string_view name) -> const Policy& {
    for (const Policy& p : builtins) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << name;
    return builtins.front();
  };
  EXPECT_TRUE(find("aggregate-per-ip").methods.empty());
  EXPECT_THAT(find("aggregate-per-ip").match, ::testing::ElementsAre("*"));
  EXPECT_THAT(find("login-per-network").methods,
              ::testing::ElementsAre("POST"));
}

// Each source that cites a Synapse per_second / burst_count is converted
// faithfully: within 0.1% of the cited rate and never looser, same burst.
TEST(BuiltinPoliciesTest, RatesMatchTheCitedSynapseDefaults) {
  int cited = 0;
  for (const Policy& p : BuiltinPolicies()) {
    std::string source(BuiltinPolicySource(p.name));
    if (source.find("Synapse rc_") != 0) continue;
    ++cited;
    double per_second = 0;
    long long burst_count = 0;
    ASSERT_EQ(std::sscanf(source.substr(source.find("per_second ")).c_str(),
                          "per_second %lf", &per_second),
              1)
        << source;
    ASSERT_EQ(std::sscanf(source.substr(source.find("burst_count ")).c_str(),
                          "burst_count %lld", &burst_count),
              1)
        << source;
    const double ours = static_cast<double>(p.rate.requests_per_unit()) * 1e9 /
                        static_cast<double>(UnitNanoseconds(p.rate.unit()));
    EXPECT_LE(ours, per_second * (1 + 1e-9)) << p.name;
    EXPECT_NEAR(ours / per_second, 1.0, 1e-3) << p.name;
    EXPECT_EQ(p.rate.burst(), burst_count) << p.name;
  }
  EXPECT_GE(cited, 10);
}

TEST(BuiltinPoliciesTest, DocsTableListsEveryBuiltinWithItsRateAndPattern) {
  std::ifstream in(std::string(MXLIMIT_SOURCE_DIR) + "/docs/policies.md");
  ASSERT_TRUE(in) << "docs/policies.md missing";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  for (const Policy& p : BuiltinPolicies()) {
    const std::string row_start = "| `" + p.name + "` |";
    size_t at = doc.find(row_start);
    ASSERT_NE(at, std::string::npos) << p.name << " has no row";
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    for (const std::string& m : p.match) {
      EXPECT_THAT(row, ::testing::HasSubstr("`" + m + "`")) << p.name;
    }
    EXPECT_THAT(row, ::testing::HasSubstr(
                         p.concurrency.has_value()
                             ? absl::StrCat(p.concurrency->limit, " in flight")
                             : p.rate.ToString()))
        << p.name;
    for (const std::string& q : p.query_absent) {
      EXPECT_THAT(row, ::testing::HasSubstr("without `" + q + "`")) << p.name;
    }
    EXPECT_THAT(row, ::testing::HasSubstr(absl::StrCat(
                         "| ", internal::ToAbsl(ScopeName(p.scope)), " |")))
        << p.name;
  }
}

struct Expectation {
  std::string_view method;
  RouteId route;
  std::string_view path;
  bool has_user;
  std::string_view ip;
  std::string_view user;
};

class BuiltinResolutionTest : public ::testing::TestWithParam<Expectation> {};

TEST_P(BuiltinResolutionTest, ResolvesToTheDocumentedPolicy) {
  static const PolicySet* set = [] {
    auto s = PolicySet::Compile({}, true, kRouteKeys);
    EXPECT_TRUE(s.ok()) << s.status();
    return new PolicySet(*std::move(s));
  }();
  const Expectation& e = GetParam();
  PolicySet::Resolution r = set->Resolve(e.method, e.route, e.path, e.has_user);
  auto name = [&](PolicyId id) -> std::string_view {
    return id == kNoPolicy ? "-" : std::string_view(set->policy(id).name);
  };
  EXPECT_EQ(name(r.ip), e.ip);
  EXPECT_EQ(name(r.user), e.user);
}

constexpr std::string_view kAllIp = "catch-all-ip";
constexpr std::string_view kAllUser = "catch-all-user";

INSTANTIATE_TEST_SUITE_P(
    Matrix, BuiltinResolutionTest,
    ::testing::Values(
        Expectation{"POST", kLogin, "/_matrix/client/r0/login", false,
                    "login-per-ip", "-"},
        Expectation{"GET", kLogin, "/_matrix/client/v3/login", false, kAllIp,
                    "-"},
        Expectation{"POST", kRegister, "/_matrix/client/v3/register", false,
                    "registration-per-ip", "-"},
        Expectation{"POST", kRegisterEmailToken,
                    "/_matrix/client/v3/register/email/requestToken", false,
                    "3pid-request-token-per-ip", "-"},
        Expectation{"POST", kAccount3pidEmailToken,
                    "/_matrix/client/v3/account/3pid/email/requestToken", true,
                    "3pid-request-token-per-ip", kAllUser},
        Expectation{"PUT", kSend,
                    "/_matrix/client/v3/rooms/!r:x/send/m.room.message/1", true,
                    kAllIp, "message-send"},
        Expectation{"PUT", kState,
                    "/_matrix/client/v3/rooms/!r:x/state/m.room.name/", true,
                    kAllIp, "state-send"},
        Expectation{"GET", kState,
                    "/_matrix/client/v3/rooms/!r:x/state/m.room.name/", true,
                    kAllIp, kAllUser},
        Expectation{"PUT", kRedact, "/_matrix/client/v3/rooms/!r/redact/$e/1",
                    true, kAllIp, "redaction"},
        Expectation{"POST", kJoinByAlias,
                    "/_matrix/client/v3/join/%23room:x.org", true, kAllIp,
                    "join-by-id-or-alias"},
        Expectation{"POST", kJoinRoom, "/_matrix/client/v3/rooms/!r:x/join",
                    true, kAllIp, "join-room"},
        Expectation{"POST", kInvite, "/_matrix/client/v3/rooms/!r:x/invite",
                    true, kAllIp, "invite"},
        Expectation{"POST", kCreateRoom, "/_matrix/client/v3/createRoom", true,
                    kAllIp, "room-creation"},
        Expectation{"POST", kMediaCreate, "/_matrix/media/v1/create", true,
                    kAllIp, "media-create"},
        Expectation{"POST", kMediaUpload, "/_matrix/media/r0/upload", true,
                    kAllIp, "media-upload"},
        Expectation{"PUT", kMediaUploadTo, "/_matrix/media/v3/upload/x.org/m",
                    true, kAllIp, "media-upload"},
        Expectation{"POST", kReportEvent,
                    "/_matrix/client/v3/rooms/!r/report/$e", true, kAllIp,
                    "report"},
        Expectation{"POST", kReportRoom, "/_matrix/client/v3/rooms/!r/report",
                    true, kAllIp, "report"},
        Expectation{"POST", kReportUser, "/_matrix/client/v3/users/@u:x/report",
                    true, kAllIp, "report"},
        Expectation{"PUT", kTyping, "/_matrix/client/v3/rooms/!r/typing/@u:x",
                    true, kAllIp, kAllUser},
        Expectation{"POST", kKeysClaim, "/_matrix/client/v3/keys/claim", true,
                    kAllIp, "keys-per-user"},
        Expectation{"GET", kSync, "/_matrix/client/v3/sync", false, kAllIp,
                    "-"}));

}  // namespace
}  // namespace mxlimit
