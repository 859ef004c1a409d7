// PolicySet::Explain: forms, verdicts and reasons; and a randomized
// differential test holding Resolve's precomputed structures to Explain's
// plain scan over every policy.

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/policy_set.h"
#include "tests/testing/naive_resolve.h"
#include "tests/testing/policy_testing.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::MakePolicy;
using namespace ::mxlimit::testing;  // NOLINT: TestRoute enumerators.

const PolicyMatch* FindMatch(const PolicySet& set,
                             const std::vector<PolicyMatch>& matches,
                             std::string_view name) {
  for (const PolicyMatch& m : matches) {
    if (set.policy(m.policy).name == name) return &m;
  }
  return nullptr;
}

TEST(PolicyExplainTest, ReportsFormVerdictAndReason) {
  absl::StatusOr<PolicySet> set = PolicySet::Compile(
      {
          MakePolicy("send-template",
                     "/_matrix/client/v3/rooms/{roomId}/send/*", Scope::kUser,
                     true, {"PUT"}),
          MakePolicy("raw-r0", "/_matrix/client/r0/*", Scope::kUser),
          MakePolicy("post-only", "/_matrix/client/r0/rooms/*", Scope::kUser,
                     false, {"POST"}),
          MakePolicy("ip-exact",
                     "/_matrix/client/r0/rooms/!a:b/send/m.room.message/t1"),
      },
      /*include_builtins=*/true, kRouteKeys);
  ASSERT_TRUE(set.ok()) << set.status();
  const std::string_view path =
      "/_matrix/client/r0/rooms/!a:b/send/m.room.message/t1";
  std::vector<PolicyMatch> m = set->Explain("PUT", kSend, path, true);

  const PolicyMatch* chosen = FindMatch(*set, m, "send-template");
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->form, MatchForm::kRouteKey);
  EXPECT_EQ(chosen->verdict, MatchVerdict::kChosen);
  EXPECT_EQ(chosen->bucket_route, kSharedBucketRoute);
  // The runner-up is the other operator policy: within a tier an operator
  // policy outranks every built-in, so raw-r0 ranks above message-send.
  EXPECT_EQ(set->policy(chosen->versus).name, "raw-r0");
  EXPECT_EQ(chosen->reason, RankReason::kMoreLiteralBytes);
  // The built-in message-send has the same pattern: the operator's wins.
  const PolicyMatch* builtin = FindMatch(*set, m, "message-send");
  ASSERT_NE(builtin, nullptr);
  EXPECT_EQ(builtin->verdict, MatchVerdict::kOutranked);
  EXPECT_EQ(builtin->reason, RankReason::kOperatorOverBuiltin);

  const PolicyMatch* raw = FindMatch(*set, m, "raw-r0");
  ASSERT_NE(raw, nullptr);
  // Canonical: "/_matrix/client/r0/*" means ".../v3/*", which the v3 route
  // key matches as well as the r0 path.
  EXPECT_EQ(raw->form, MatchForm::kBoth);
  EXPECT_EQ(raw->verdict, MatchVerdict::kOutranked);
  EXPECT_EQ(raw->reason, RankReason::kMoreLiteralBytes);

  const PolicyMatch* catch_all = FindMatch(*set, m, "catch-all-user");
  ASSERT_NE(catch_all, nullptr);
  EXPECT_EQ(catch_all->form, MatchForm::kBoth);

  EXPECT_EQ(FindMatch(*set, m, "post-only")->verdict,
            MatchVerdict::kMethodExcluded);

  const PolicyMatch* exact = FindMatch(*set, m, "ip-exact");
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ(exact->verdict, MatchVerdict::kChosen);
  EXPECT_EQ(exact->reason, RankReason::kExact);
  EXPECT_EQ(set->policy(exact->versus).name, "catch-all-ip");
  EXPECT_EQ(exact->bucket_route, kSend);

  // Ordered by scope, chosen first.
  EXPECT_EQ(m.front().scope, Scope::kIp);
  EXPECT_EQ(m.front().verdict, MatchVerdict::kChosen);
  EXPECT_EQ(FindMatch(*set, m, "login-per-ip"), nullptr);  // Did not match.
}

TEST(PolicyExplainTest, UserPoliciesWithoutAUserAreMarked) {
  absl::StatusOr<PolicySet> set = PolicySet::Compile(
      {MakePolicy("only", "*", Scope::kUser)}, false, kRouteKeys);
  ASSERT_TRUE(set.ok());
  std::vector<PolicyMatch> m =
      set->Explain("GET", kSync, "/_matrix/client/v3/sync", false);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].verdict, MatchVerdict::kNeedsUser);
  EXPECT_EQ(MatchVerdictName(m[0].verdict), "needs a user");
}

// --- differential ------------------------------------------------------------

// Random policies built from Matrix-shaped fragments, so that exact, prefix
// and inner-'*' patterns overlap the test routes and raw paths often.
class RandomPolicies {
 public:
  explicit RandomPolicies(uint32_t seed) : rng_(seed) {}

  std::string Pattern() {
    static constexpr std::string_view kTexts[] = {
        "/_matrix/client/v3/keys/claim",
        "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}",
        "/_matrix/client/r0/rooms/!a:b/send/m.room.message/t1",
        "/_matrix/client/v3/rooms/!a:b/messages",
        "/_matrix/client/v1/media/download/x.org/abc",
        "/_matrix/client/r0/keys/whatever",
        "/_matrix/client/v3/sync",
        "<fallback>",
    };
    std::string text(kTexts[Pick(std::size(kTexts))]);
    switch (Pick(5)) {
      case 0:  // Exact.
        return text;
      case 1:  // Prefix.
        return text.substr(0, Pick(text.size() + 1)) + "*";
      case 2: {  // Inner '*': replace a random span.
        size_t a = Pick(text.size() + 1);
        size_t b = a + Pick(text.size() - a + 1);
        return text.substr(0, a) + "*" + text.substr(b);
      }
      case 3: {  // Two stars.
        size_t a = Pick(text.size() + 1);
        size_t b = a + Pick(text.size() - a + 1);
        return text.substr(0, a) + "*" + text.substr(a, b - a) + "*" +
               (Pick(2) ? text.substr(b) : "");
      }
      default:
        return Pick(4) == 0 ? "*" : text.substr(0, Pick(text.size() + 1)) + "*";
    }
  }

  std::vector<Policy> Policies(size_t n) {
    std::vector<Policy> out;
    for (size_t i = 0; i < n; ++i) {
      Policy p = MakePolicy("p" + std::to_string(i), Pattern(),
                            Pick(2) ? Scope::kIp : Scope::kUser);
      std::string& m = p.match[0];
      if (m[0] != '/' && m[0] != '*' && m != "<fallback>") {
        m = "*";  // A truncated "<fallback>" is not a valid pattern.
      }
      p.share_threshold = m.find('*') != std::string::npos && Pick(2);
      if (Pick(3) == 0) p.methods = {Pick(2) ? "GET" : "PUT"};
      if (Pick(6) == 0) {
        p.on_limit = OnLimit::kDelay;
        p.max_delay = std::chrono::milliseconds(100);
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  size_t Pick(size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

 private:
  std::mt19937 rng_;
};

TEST(PolicyExplainTest, ResolveAgreesWithExplainOnRandomPolicySets) {
  struct Request {
    std::string_view method;
    RouteId route;
    std::string_view path;
  };
  const Request requests[] = {
      {"POST", kKeysClaim, "/_matrix/client/v3/keys/claim"},
      {"POST", kKeysClaim, "/_matrix/client/r0/keys/claim"},
      {"PUT", kSend, "/_matrix/client/r0/rooms/!a:b/send/m.room.message/t1"},
      {"PUT", kSend, "/_matrix/client/v3/rooms/!c:d/send/m.room.message/t9"},
      {"GET", kMessages, "/_matrix/client/v3/rooms/!a:b/messages"},
      {"GET", kMediaDownload, "/_matrix/client/v1/media/download/x.org/abc"},
      {"GET", kFallback, "/_matrix/client/r0/keys/whatever"},
      {"GET", kFallback, "/wp-login.php"},
      {"GET", kSync, "/_matrix/client/v3/sync"},
      {"DELETE", kFallback, ""},
  };
  RandomPolicies random(20240605);
  int compared = 0;
  int plain[2] = {0, 0};
  for (int round = 0; round < 300; ++round) {
    absl::StatusOr<PolicySet> set = PolicySet::Compile(
        random.Policies(1 + random.Pick(40)), random.Pick(2) == 0, kRouteKeys);
    ASSERT_TRUE(set.ok()) << set.status();
    for (const Request& req : requests) {
      for (bool has_user : {false, true}) {
        const PolicySet::Resolution want =
            ::mxlimit::testing::ResolutionFromExplain(
                *set, set->Explain(req.method, req.route, req.path, has_user));
        PolicySet::Resolution got =
            set->Resolve(req.method, req.route, req.path, has_user);
        ASSERT_EQ(got, want) << "round " << round << " " << req.method << " "
                             << req.path << " user=" << has_user;
        ASSERT_EQ(got.plain, want.plain)
            << "round " << round << " " << req.method << " " << req.path
            << " user=" << has_user;
        ASSERT_EQ(got.weighed, want.weighed)
            << "round " << round << " " << req.method << " " << req.path
            << " user=" << has_user;
        plain[got.plain ? 1 : 0]++;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 300 * 10 * 2);
  // Both kinds of resolution were compared.
  EXPECT_GT(plain[0], 300);
  EXPECT_GT(plain[1], 300);
}

}  // namespace
}  // namespace mxlimit
