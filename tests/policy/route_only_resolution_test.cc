// PolicySet resolves some requests from their route alone (no raw-path walk)
// when compiled with the normalizer's route forms. That is a shortcut, never a
// change of meaning: these tests hold every resolution with forms to the one
// without, over every served form of every route instantiated with values
// chosen to collide with raw-path patterns, in the default configuration.

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/limiter.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::MakePolicy;

const RouteNormalizer& Normalizer() {
  static const RouteNormalizer* n = new RouteNormalizer();
  return *n;
}

// Operator raw-path patterns of every shape: per-room (plain, encoded, r0),
// exact, inner '*', trailing '*' on a placeholder position, method-limited.
std::vector<Policy> OperatorPolicies() {
  std::vector<Policy> out = {
      MakePolicy("hot-room", "/_matrix/client/v3/rooms/!hot:example.org/send/*",
                 Scope::kUser, 5, TimeUnit::kMinute),
      MakePolicy("hot-room-encoded",
                 "/_matrix/client/r0/rooms/%21hot%3Aexample.org/state/*",
                 Scope::kIp, 5, TimeUnit::kMinute),
      MakePolicy("exact-messages",
                 "/_matrix/client/v3/rooms/!hot:example.org/messages",
                 Scope::kIp, 5, TimeUnit::kMinute),
      MakePolicy("any-report", "/_matrix/*/report", Scope::kIp, 5,
                 TimeUnit::kMinute),
      MakePolicy("profile-prefix", "/_matrix/client/v3/profile/@bot*",
                 Scope::kIp, 5, TimeUnit::kMinute),
      MakePolicy("admin", "/_synapse/admin/*", Scope::kIp, 5,
                 TimeUnit::kMinute),
  };
  out[3].methods = {"DELETE"};
  out[4].layer = "extra";
  return out;
}

PolicySet Compile(bool with_forms) {
  absl::StatusOr<PolicySet> set = PolicySet::Compile(
      OperatorPolicies(), /*include_builtins=*/true, Normalizer().keys(),
      /*all_shadow=*/false,
      with_forms ? Normalizer().forms() : std::span<const RouteForm>());
  EXPECT_TRUE(set.ok()) << set.status();
  return *std::move(set);
}

// `form` with every placeholder replaced by `value`, and (when `other` is
// not empty) the last one by `other`.
std::string Instantiate(std::string_view form, std::string_view value,
                        std::string_view other) {
  std::vector<std::string> segments;
  size_t start = 1;
  while (true) {
    const size_t end = form.find('/', start);
    segments.emplace_back(
        form.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  size_t last = segments.size();
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].starts_with('{')) last = i;
  }
  std::string out;
  for (size_t i = 0; i < segments.size(); ++i) {
    out += '/';
    if (!segments[i].starts_with('{')) {
      out += segments[i];
    } else {
      out += (i == last && !other.empty()) ? other : value;
    }
  }
  return out;
}

TEST(RouteOnlyResolutionTest, SameAsTheRawWalkOnEveryFormAndMethod) {
  const PolicySet with = Compile(true);
  const PolicySet without = Compile(false);
  const std::string_view values[] = {"x",
                                     "!hot:example.org",
                                     "%21hot%3Aexample.org",
                                     "requestToken",
                                     "report",
                                     "{roomId}",
                                     "keys",
                                     "upload",
                                     "%2F",
                                     "@bot1:example.org",
                                     "delayed_events",
                                     "messages"};
  const std::string_view methods[] = {"GET",    "HEAD",  "POST",    "PUT",
                                      "DELETE", "PATCH", "OPTIONS", "CONNECT",
                                      "TRACE",  "BREW"};
  size_t shortcut = 0;
  size_t walked = 0;
  for (const RouteForm& form : Normalizer().forms()) {
    std::vector<std::string> paths;
    for (std::string_view v : values) {
      paths.push_back(Instantiate(form.pattern, v, ""));
      paths.push_back(Instantiate(form.pattern, "x", v));
    }
    for (const std::string& path : paths) {
      const Route route = Normalizer().Normalize("GET", path);
      for (std::string_view method : methods) {
        for (bool has_user : {false, true}) {
          ASSERT_EQ(with.Resolve(method, route.id, path, has_user),
                    without.Resolve(method, route.id, path, has_user))
              << method << " " << path << " (route " << route.key << ")";
          ++(with.ResolvedByRoute(route.id, method) ? shortcut : walked);
        }
      }
    }
  }
  // Both paths of Resolve ran, the shortcut for most requests.
  EXPECT_GT(shortcut, walked);
  EXPECT_GT(walked, 0u);
}

TEST(RouteOnlyResolutionTest, DefaultConfigShortcutsCommonRequests) {
  LimiterConfig config;  // built-ins on
  absl::StatusOr<std::unique_ptr<Limiter>> l = Limiter::Create(config);
  ASSERT_TRUE(l.ok());
  const PolicySet& set = (*l)->policies();
  auto id = [&](std::string_view target) {
    return (*l)->normalizer().Normalize("GET", target).id;
  };
  const RouteId send =
      id("/_matrix/client/v3/rooms/!r:x/send/m.room.message/t1");
  EXPECT_TRUE(set.ResolvedByRoute(id("/_matrix/client/v3/sync"), "GET"));
  EXPECT_TRUE(set.ResolvedByRoute(send, "PUT"));
  EXPECT_TRUE(set.ResolvedByRoute(id("/_matrix/client/v3/keys/query"), "POST"));
  // POST on send could be `.../send/{eventType}/requestToken`, which the
  // built-in 3pid-request-token pattern `/_matrix/client/v3/*/requestToken`
  // matches by raw path: walked.
  EXPECT_FALSE(set.ResolvedByRoute(send, "POST"));
  // Unknown paths are always walked.
  EXPECT_FALSE(set.ResolvedByRoute(kFallbackRouteId, "GET"));
}

// The collision the shortcut must not lose, through the whole limiter.
TEST(RouteOnlyResolutionTest, RawPatternOnAPlaceholderValueStillApplies) {
  LimiterConfig config;  // built-ins on
  absl::StatusOr<std::unique_ptr<Limiter>> l = Limiter::Create(config);
  ASSERT_TRUE(l.ok());
  Request r = testing::MakeRequest(
      "POST", "/_matrix/client/v3/rooms/!r:x/send/m.room.message/requestToken",
      "203.0.113.9", "@alice:example.org");
  const Route route = (*l)->normalizer().Normalize(r.method, r.target);
  const PolicySet::Resolution res =
      (*l)->policies().Resolve(r.method, route.id, r.target, true);
  EXPECT_EQ((*l)->policies().policy(res.ip).name, "3pid-request-token-per-ip");
}

}  // namespace
}  // namespace mxlimit
