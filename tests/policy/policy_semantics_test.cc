// Policy semantics under the default configuration (built-ins on): the
// regressions of issue #13 (fallback precedence, shadow trials beside
// enforcement, alias and encoding spellings, stacked layers) and the
// all-or-nothing charge across every bucket of every layer.

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/naive_resolve.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;

std::unique_ptr<Limiter> Make(std::vector<Policy> policies,
                              bool shadow_mode = false) {
  LimiterConfig config;  // built-ins on
  config.policies = std::move(policies);
  config.shadow_mode = shadow_mode;
  absl::StatusOr<std::unique_ptr<Limiter>> l = Limiter::Create(config);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *std::move(l) : nullptr;
}

// The policy charged in `layer` and `scope` for a request, or "-".
std::string Applied(const Limiter& l, const Request& r, std::string_view layer,
                    Scope scope, bool shadow = false) {
  const Route route = l.normalizer().Normalize(r.method, r.target);
  const PolicySet& set = l.policies();
  const PolicySet::Resolution res = set.Resolve(
      r.method, route.id, QueryFreePath(r.target), !r.user_id.empty());
  for (const ResolvedPolicy& a : res.all()) {
    if (set.layer_name(a.layer) == layer && a.scope == scope &&
        a.shadow == shadow) {
      return set.policy(a.policy).name;
    }
  }
  return "-";
}

// --- 1. <fallback> never outranks a raw-path refinement ----------------------

TEST(FallbackPrecedenceTest, RawWildcardOnUnknownPathsBeatsUnknownPathsCap) {
  auto l = Make({MakePolicy("admin", "/_synapse/admin/*", Scope::kIp, 10,
                            TimeUnit::kMinute)});
  const Request admin =
      MakeRequest("GET", "/_synapse/admin/v1/users", "203.0.113.5");
  EXPECT_EQ(Applied(*l, admin, "route", Scope::kIp), "admin");
  // Other unknown paths still share the built-in unknown-paths cap.
  EXPECT_EQ(Applied(*l, MakeRequest("GET", "/wp-login.php", "203.0.113.5"),
                    "route", Scope::kIp),
            "unknown-paths-per-ip");
  // The operator's limit is the one enforced: 10 in a burst, then denied.
  int allowed = 0;
  for (int i = 0; i < 30; ++i) allowed += l->Check(admin, At(0)).allowed;
  EXPECT_EQ(allowed, 10);
}

TEST(FallbackPrecedenceTest, OperatorFallbackPolicyKeepsKeysCap) {
  auto l = Make({MakePolicy("unknown-user", "<fallback>", Scope::kUser, 1000,
                            TimeUnit::kMinute)});
  const Request keys = MakeRequest("POST", "/_matrix/client/v3/keys/bogus",
                                   "203.0.113.5", "@a:example.org");
  EXPECT_EQ(Applied(*l, keys, "route", Scope::kUser), "keys-per-user");
  const Request other = MakeRequest("GET", "/_matrix/client/v3/bogus",
                                    "203.0.113.5", "@a:example.org");
  EXPECT_EQ(Applied(*l, other, "route", Scope::kUser), "unknown-user");
}

TEST(FallbackPrecedenceTest, FallbackBeatsOnlyBareStar) {
  PolicySet set = *PolicySet::Compile(
      {MakePolicy("any", "*", Scope::kIp, 1, TimeUnit::kMinute),
       MakePolicy("unknown", "<fallback>", Scope::kIp, 1, TimeUnit::kMinute),
       MakePolicy("slash", "/*", Scope::kIp, 1, TimeUnit::kMinute)},
      /*include_builtins=*/false, RouteNormalizer().keys());
  // "/*" has one literal byte: it refines, so it beats <fallback>.
  const PolicySet::Resolution r =
      set.Resolve("GET", kFallbackRouteId, "/x", false);
  EXPECT_EQ(set.policy(r.ip).name, "slash");
  PolicySet no_slash = *PolicySet::Compile(
      {MakePolicy("any", "*", Scope::kIp, 1, TimeUnit::kMinute),
       MakePolicy("unknown", "<fallback>", Scope::kIp, 1, TimeUnit::kMinute)},
      false, RouteNormalizer().keys());
  EXPECT_EQ(no_slash.policy(no_slash.Resolve("GET", 0, "/x", false).ip).name,
            "unknown");
}

// --- 2. a shadow trial never displaces the enforcing policy ------------------

std::vector<Decision> Scrape(Limiter& l) {
  std::vector<Decision> out;
  for (int i = 0; i < 3000; ++i) {
    const std::string target = "/_matrix/client/v3/rooms/%21r" +
                               std::to_string(i % 7) +
                               "%3Aexample.org/messages?dir=b";
    out.push_back(l.Check(
        MakeRequest("GET", target, "198.51.100.7", "@scraper:example.org"),
        At(i / 100)));
  }
  return out;
}

TEST(ShadowTest, TrialBesideEnforcementChangesNoDecision) {
  Policy enforce = MakePolicy("messages", "/_matrix/client/v3/rooms/*/messages",
                              Scope::kUser, 60, TimeUnit::kMinute, 20);
  Policy trial =
      MakePolicy("messages-trial", "/_matrix/client/v3/rooms/{roomId}/messages",
                 Scope::kUser, 10, TimeUnit::kMinute, 5);
  trial.shadow_mode = true;
  auto without = Make({enforce});
  auto with = Make({enforce, trial});
  const std::vector<Decision> a = Scrape(*without);
  const std::vector<Decision> b = Scrape(*with);
  int denied = 0;
  int shadow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].allowed, b[i].allowed) << i;
    ASSERT_EQ(a[i].policy, b[i].policy) << i;
    denied += !b[i].allowed;
    shadow += b[i].shadow_denied;
  }
  EXPECT_GT(denied, 2000);  // The scraper is stopped, trial or not.
  EXPECT_GT(shadow, 0);     // And the trial reports what it would deny.
  const Request one =
      MakeRequest("GET", "/_matrix/client/v3/rooms/!r:x/messages",
                  "198.51.100.7", "@s:example.org");
  EXPECT_EQ(Applied(*with, one, "route", Scope::kUser), "messages");
  EXPECT_EQ(Applied(*with, one, "route", Scope::kUser, /*shadow=*/true),
            "messages-trial");
}

TEST(ShadowTest, TopLevelShadowModeObservesOnly) {
  auto l = Make({}, /*shadow_mode=*/true);
  int allowed = 0;
  int shadow = 0;
  for (int i = 0; i < 50; ++i) {
    Decision d = l->Check(
        MakeRequest("POST", "/_matrix/client/v3/login", "203.0.113.9"), At(0));
    allowed += d.allowed;
    shadow += d.shadow_denied;
  }
  EXPECT_EQ(allowed, 50);
  EXPECT_EQ(shadow, 45);  // login-per-ip's burst is 5.
  for (const Policy& p : l->policies().policies()) {
    EXPECT_TRUE(p.shadow_mode) << p.name;
  }
}

TEST(ShadowTest, TrialsFillTheirBucketsAsIfEnforcedTogether) {
  // Two trials on sends in layers of their own, per IP (burst 2) and per
  // user (burst 5), beside the built-in message-send. Once the per-IP trial
  // would deny, enforcing both would stop the request, so the per-user
  // trial's bucket is not charged either: it keeps the room it would have.
  Policy ip_trial = MakePolicy("send-ip-trial", "/_matrix/client/v3/rooms/*",
                               Scope::kIp, 1, TimeUnit::kHour, 2);
  ip_trial.layer = "trial-ip";
  ip_trial.shadow_mode = true;
  Policy user_trial =
      MakePolicy("send-user-trial", "/_matrix/client/v3/rooms/*", Scope::kUser,
                 1, TimeUnit::kHour, 5);
  user_trial.layer = "trial-user";
  user_trial.shadow_mode = true;
  auto l = Make({ip_trial, user_trial});
  for (int i = 0; i < 10; ++i) {
    const Decision d = l->Check(
        MakeRequest("PUT",
                    "/_matrix/client/v3/rooms/!r:x/send/m.room.message/" +
                        std::to_string(i),
                    "192.0.2.1", "@a:example.org"),
        At(0));
    EXPECT_TRUE(d.allowed) << i;  // message-send's burst is 10.
    EXPECT_EQ(d.shadow_denied, i >= 2) << i;
    if (i >= 2) {
      EXPECT_EQ(d.shadow_policy, "send-ip-trial") << i;
    }
  }
  const LimiterStats stats = l->Stats();
  for (const PolicyStats& p : stats.policies) {
    if (p.name == "send-ip-trial") {
      EXPECT_EQ(p.counters.allowed, 2u);
      EXPECT_EQ(p.counters.shadow_denied, 8u);
    } else if (p.name == "send-user-trial") {
      EXPECT_EQ(p.counters.allowed, 2u);
      EXPECT_EQ(p.counters.shadow_denied, 0u);
    } else if (p.name == "message-send") {
      EXPECT_EQ(p.counters.allowed, 10u);
    }
  }
  // A minute later (message-send has refilled, a trial at 1 per hour has
  // not), each from a fresh address: the per-user trial still has the 3
  // requests left that it would have had under enforcement.
  for (int i = 0; i < 4; ++i) {
    const Decision d = l->Check(
        MakeRequest(
            "PUT", "/_matrix/client/v3/rooms/!r:x/send/m/x" + std::to_string(i),
            "198.51.100." + std::to_string(10 + i), "@a:example.org"),
        At(60));
    EXPECT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.shadow_denied, i == 3) << i;
    if (i == 3) {
      EXPECT_EQ(d.shadow_policy, "send-user-trial");
    }
  }
}

TEST(ShadowTest, TrialIsNotChargedByRequestsEnforcementDenies) {
  // A looser trial beside the built-in login limit: the logins that
  // login-per-ip denies charge nothing, the trial's bucket included.
  Policy trial = MakePolicy("login-trial", "/_matrix/client/v3/login",
                            Scope::kIp, 1, TimeUnit::kHour, 8);
  trial.shadow_mode = true;
  trial.layer = "trial";
  auto l = Make({trial});
  int allowed = 0;
  for (int i = 0; i < 20; ++i) {
    allowed +=
        l->Check(MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.8"),
                 At(0))
            .allowed;
  }
  EXPECT_EQ(allowed, 5);  // login-per-ip's burst.
  for (const PolicyStats& p : l->Stats().policies) {
    if (p.name != "login-trial") continue;
    EXPECT_EQ(p.counters.allowed, 5u);
    EXPECT_EQ(p.counters.shadow_denied, 0u);
  }
}

// --- 3. and 4. spellings do not split or escape counters ---------------------

TEST(CanonicalSpellingTest, AlternatingV3AndUnstableKeysShareOneBudget) {
  auto l = Make({});
  int allowed = 0;
  for (int i = 0; i < 240; ++i) {
    const char* target = i % 2 ? "/_matrix/client/unstable/keys/claim"
                               : "/_matrix/client/v3/keys/claim";
    allowed += l->Check(MakeRequest("POST", target, "203.0.113.1",
                                    "@mallory:example.org"),
                        At(0))
                   .allowed;
  }
  EXPECT_EQ(allowed, 120);  // keys-per-user's burst, not twice it.
}

TEST(CanonicalSpellingTest, EverySpellingOfARoomHitsItsRawPathPolicy) {
  auto l = Make({MakePolicy("hot-room",
                            "/_matrix/client/v3/rooms/!hot:example.org/send/*",
                            Scope::kUser, 5, TimeUnit::kMinute)});
  for (
      const char* target : {
          "/_matrix/client/v3/rooms/!hot:example.org/send/m.room.message/1",
          "/_matrix/client/v3/rooms/%21hot%3Aexample.org/send/m.room.message/1",
          "/_matrix/client/v3/rooms/%21hot%3aexample.org/send/m.room.message/1",
          "/_matrix/client/r0/rooms/!hot:example.org/send/m.room.message/1",
          "/_matrix/client/unstable/rooms/%21hot%3Aexample.org/send/x/1",
          "/_matrix/client/%72%30/rooms/!hot:%65xample.org/send/x/1",
          "/_matrix/client/api/v1/rooms/!hot:example.org/send/x/1",
      }) {
    EXPECT_EQ(
        Applied(*l, MakeRequest("PUT", target, "203.0.113.1", "@a:example.org"),
                "route", Scope::kUser),
        "hot-room")
        << target;
  }
  // An encoded slash is not a segment boundary, and other rooms are others.
  EXPECT_NE(Applied(*l,
                    MakeRequest("PUT",
                                "/_matrix/client/v3/rooms/!hot:example.org"
                                "%2Fsend/x/1",
                                "203.0.113.1", "@a:example.org"),
                    "route", Scope::kUser),
            "hot-room");
  EXPECT_EQ(Applied(*l,
                    MakeRequest("PUT",
                                "/_matrix/client/v3/rooms/!cold:example.org/"
                                "send/x/1",
                                "203.0.113.1", "@a:example.org"),
                    "route", Scope::kUser),
            "message-send");
}

TEST(CanonicalSpellingTest, NonCanonicalPatternsAreReadCanonically) {
  EXPECT_EQ(PatternCanonicalNote("/_matrix/client/v3/login"), "");
  EXPECT_EQ(PatternCanonicalNote("<fallback>"), "");
  EXPECT_THAT(PatternCanonicalNote("/_matrix/client/r0/login"),
              ::testing::HasSubstr("\"/_matrix/client/v3/login\""));
  EXPECT_THAT(PatternCanonicalNote("/_matrix/client/v3/rooms/%21a%3Ab/*"),
              ::testing::HasSubstr("\"/_matrix/client/v3/rooms/!a:b/*\""));
  // An r0-only pattern now covers the v3 spelling too.
  auto l = Make({MakePolicy("r0-login", "/_matrix/client/r0/login", Scope::kIp,
                            2, TimeUnit::kMinute)});
  EXPECT_EQ(
      Applied(*l,
              MakeRequest("POST", "/_matrix/client/v3/login", "203.0.113.1"),
              "route", Scope::kIp),
      "r0-login");
}

// --- 5. stacked layers
// --------------------------------------------------------

TEST(LayerTest, RotatingSlash64sInsideOneSlash48IsCapped) {
  auto l = Make({});
  const Policy& network =
      l->policies().policy(*l->policies().Find("login-per-network"));
  const Policy& per_ip =
      l->policies().policy(*l->policies().Find("login-per-ip"));
  int allowed = 0;
  for (int i = 0; i < 65536; i += 97) {
    IpAddress client = Ip("2001:db8:77::1");
    client.bytes[6] = static_cast<uint8_t>(i >> 8);
    client.bytes[7] = static_cast<uint8_t>(i);
    Request r = MakeRequest("POST", "/_matrix/client/v3/login", "::1");
    r.client = client;
    allowed += l->Check(r, At(0)).allowed;
  }
  EXPECT_EQ(allowed, network.rate.burst());
  // One /64 alone: the per-/64 limit is what stops it, as before.
  auto fresh = Make({});
  int one = 0;
  Decision last;
  for (int i = 0; i < 20; ++i) {
    last = fresh->Check(
        MakeRequest("POST", "/_matrix/client/v3/login", "2001:db8:78::1"),
        At(0));
    one += last.allowed;
  }
  EXPECT_EQ(one, per_ip.rate.burst());
  EXPECT_EQ(last.policy, "login-per-ip");
  EXPECT_EQ(last.layer, "route");
}

TEST(LayerTest, AggregateCapsSpreadingOverRoutes) {
  // A client spreading over many routes meets one aggregate ceiling, not one
  // per route.
  Policy agg = MakePolicy("aggregate-per-ip", "*", Scope::kIp, 100,
                          TimeUnit::kMinute, 100);
  agg.layer = "aggregate";
  agg.share_threshold = true;
  auto l = Make({agg});
  const std::span<const std::string_view> keys = l->normalizer().keys();
  int allowed = 0;
  int by_aggregate = 0;
  for (size_t i = 1; i < keys.size(); ++i) {
    std::string target(keys[i]);
    for (char& c : target) {
      if (c == '{' || c == '}') c = 'x';
    }
    const Decision d =
        l->Check(MakeRequest("GET", target, "203.0.113.44"), At(0));
    allowed += d.allowed;
    by_aggregate += !d.allowed && d.layer == "aggregate";
  }
  EXPECT_EQ(allowed, 100);
  EXPECT_GT(by_aggregate, 100);
}

TEST(LayerTest, ChargesAllOrNothingAcrossEveryBucket) {
  // Four layers, both scopes: a denial in one charges nothing anywhere.
  std::vector<Policy> policies;
  for (const char* layer : {"a", "b", "c"}) {
    Policy ip = MakePolicy(std::string("ip-") + layer, "*", Scope::kIp, 100,
                           TimeUnit::kMinute, 100);
    ip.layer = layer;
    ip.share_threshold = true;
    Policy user = MakePolicy(std::string("user-") + layer, "*", Scope::kUser,
                             100, TimeUnit::kMinute, 100);
    user.layer = layer;
    user.share_threshold = true;
    policies.push_back(ip);
    policies.push_back(user);
  }
  Policy tight = MakePolicy("tight", "/_matrix/client/v3/sync", Scope::kUser, 1,
                            TimeUnit::kHour, 2);
  tight.layer = "d";
  policies.push_back(tight);
  for (bool sharded : {false, true}) {
    SCOPED_TRACE(sharded);
    LimiterConfig config;
    config.policies = policies;
    auto lone = Limiter::Create(config);
    auto many = ShardedLimiter::Create(config, 4);
    ASSERT_TRUE(lone.ok() && many.ok());
    auto check = [&](const Request& r) {
      return sharded ? (*many)->Check(r, At(0)) : (*lone)->Check(r, At(0));
    };
    const Request sync = MakeRequest("GET", "/_matrix/client/v3/sync",
                                     "203.0.113.8", "@bob:example.org");
    EXPECT_TRUE(check(sync).allowed);
    EXPECT_TRUE(check(sync).allowed);
    for (int i = 0; i < 50; ++i) {
      const Decision d = check(sync);
      ASSERT_FALSE(d.allowed);
      EXPECT_EQ(d.policy, "tight");
      EXPECT_EQ(d.layer, "d");
      EXPECT_EQ(d.limited_by, LimitScope::kUser);
    }
    // Layers a-c were charged twice (plus this request), not 52 times.
    const Request other = MakeRequest("GET", "/_matrix/client/v3/capabilities",
                                      "203.0.113.8", "@bob:example.org");
    const Decision d = check(other);
    ASSERT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 97);
  }
}

TEST(LayerTest, ClientPrefixKeysBucketsByTheWiderNetwork) {
  Policy net = MakePolicy("per-16", "/_matrix/client/v3/login", Scope::kIp, 3,
                          TimeUnit::kHour, 3);
  net.layer = "wide";
  net.client_prefix = ClientPrefix{16, 32};
  auto l = Make({net});
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string ip = "10.9." + std::to_string(i) + ".1";
    allowed +=
        l->Check(MakeRequest("POST", "/_matrix/client/v3/login", ip), At(0))
            .allowed;
  }
  EXPECT_EQ(allowed, 3);
  EXPECT_TRUE(
      l->Check(MakeRequest("POST", "/_matrix/client/v3/login", "10.10.0.1"),
               At(0))
          .allowed);
}

TEST(LayerTest, TooManyLayersAreRefused) {
  std::vector<Policy> policies;
  for (int i = 0; i < 10; ++i) {
    Policy p = MakePolicy("p" + std::to_string(i), "*", Scope::kIp, 1,
                          TimeUnit::kMinute);
    p.layer = "l" + std::to_string(i);
    policies.push_back(p);
  }
  LimiterConfig config;
  config.policies = policies;
  absl::StatusOr<std::unique_ptr<Limiter>> l = Limiter::Create(config);
  ASSERT_FALSE(l.ok());
  // The first policy past the limit (route, network, response and aggregate
  // count first), named with its layer.
  EXPECT_THAT(std::string(l.status().message()),
              ::testing::StartsWith("policy \"p5\": layer: got \"l5\", layer "
                                    "10 of a set that holds at most 9"));
}

TEST(LayerTest, ReloadKeepsStatePerPolicyAndLayer) {
  Policy p = MakePolicy("cap", "*", Scope::kIp, 2, TimeUnit::kHour, 2);
  p.layer = "extra";
  LimiterConfig config;
  config.policies = {p};
  auto l = *Limiter::Create(config);
  const Request r = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.3");
  EXPECT_TRUE(l->Check(r, At(0)).allowed);
  EXPECT_TRUE(l->Check(r, At(0)).allowed);
  EXPECT_FALSE(l->Check(r, At(0)).allowed);
  ASSERT_TRUE(l->Reload(config).ok());
  EXPECT_FALSE(l->Check(r, At(0)).allowed);  // Same policy, same layer: kept.
  config.policies[0].layer = "moved";
  ASSERT_TRUE(l->Reload(config).ok());
  EXPECT_TRUE(l->Check(r, At(0)).allowed);  // Another layer: a fresh bucket.
}

TEST(MatchListTest, PatternsOfOneListShareItsBuckets) {
  Policy p = MakePolicy("auth", "/_matrix/client/v3/login", Scope::kIp, 3,
                        TimeUnit::kHour, 3);
  p.match.push_back("/_matrix/client/v3/register");
  p.share_threshold = true;
  auto l = Make({p});
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    const char* t =
        i % 2 ? "/_matrix/client/v3/register" : "/_matrix/client/v3/login";
    allowed += l->Check(MakeRequest("POST", t, "192.0.2.9"), At(0)).allowed;
  }
  EXPECT_EQ(allowed, 3);
}

// --- canonical form and its matchers
// ------------------------------------------

TEST(CanonicalPathTest, DecodesFoldsAndKeepsStructuralEscapes) {
  using internal::CanonicalPath;
  EXPECT_EQ(CanonicalPath("/_matrix/client/r0/rooms/%21a%3Ab/x"),
            "/_matrix/client/v3/rooms/!a:b/x");
  EXPECT_EQ(CanonicalPath("/_matrix/client/unstable"), "/_matrix/client/v3");
  EXPECT_EQ(CanonicalPath("/_matrix/client/r0x/a"), "/_matrix/client/r0x/a");
  EXPECT_EQ(CanonicalPath("/_matrix/media/v1/download/a/b"),
            "/_matrix/media/v3/download/a/b");
  EXPECT_EQ(CanonicalPath("/_matrix/client/v1/media/x"),
            "/_matrix/client/v1/media/x");
  EXPECT_EQ(CanonicalPath("/a%2fb%2F%3f%23%25"), "/a%2Fb%2F%3F%23%25");
  EXPECT_EQ(CanonicalPath("/a%zz%4"), "/a%zz%4");
  EXPECT_EQ(CanonicalPath("%2F_matrix/client/r0/x"), "%2F_matrix/client/r0/x");
  EXPECT_EQ(CanonicalPath("/_matrix%2Fclient/r0/x"), "/_matrix%2Fclient/r0/x");
  EXPECT_EQ(CanonicalPath("/%5fmatrix/client/%72%30/x"),
            "/_matrix/client/v3/x");
  EXPECT_EQ(CanonicalPath(""), "");
}

TEST(CanonicalPathTest, CursorMatchersAgreeWithTheStringForm) {
  // Random paths over an alphabet rich in escapes and version spellings.
  const std::vector<std::string> atoms = {
      "/",        "_matrix", "client", "media", "r0",  "v1",  "v3",
      "unstable", "api",     "%",      "%2",    "%2F", "%2f", "%41",
      "%7e",      "%25",     "*",      "a",     "b",   "keys"};
  const std::vector<std::string> patterns = {"*",
                                             "/_matrix/client/v3/*",
                                             "/_matrix/*/a*b",
                                             "*a*",
                                             "/_matrix/media/v3/*",
                                             "/_matrix/client/v3/keys",
                                             "*%2F*",
                                             "/*/*/*"};
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(seed >> 33);
  };
  for (int i = 0; i < 20000; ++i) {
    std::string path;
    const size_t n = next() % 12;
    if (next() % 2)
      path = "/_matrix/" + std::string(next() % 2 ? "client" : "media") + "/";
    for (size_t j = 0; j < n; ++j) path += atoms[next() % atoms.size()];
    const std::string canonical = internal::CanonicalPath(path);
    for (const std::string& p : patterns) {
      ASSERT_EQ(
          internal::GlobMatchCanonical(p, internal::CanonicalCursor(path)),
          internal::GlobMatch(p, canonical))
          << p << " vs " << path;
    }
    // Consume over any prefix of the canonical form.
    const size_t cut = canonical.empty() ? 0 : next() % (canonical.size() + 1);
    internal::CanonicalCursor c(path);
    ASSERT_TRUE(c.Consume(canonical.data(), cut)) << path;
    uint8_t b;
    if (cut < canonical.size()) {
      ASSERT_TRUE(c.Next(b));
      ASSERT_EQ(b, static_cast<uint8_t>(canonical[cut]));
    } else {
      ASSERT_FALSE(c.Next(b));
    }
  }
}

TEST(CanonicalPathTest, ResolveAgreesWithTheNaiveRulesOnEncodedPaths) {
  std::vector<Policy> policies = {
      MakePolicy("room", "/_matrix/client/v3/rooms/!a:b/*", Scope::kUser, 1,
                 TimeUnit::kMinute),
      MakePolicy("r0-keys", "/_matrix/client/r0/keys/*", Scope::kUser, 1,
                 TimeUnit::kMinute),
      MakePolicy("inner", "/_matrix/*/rooms/*/send/*", Scope::kIp, 1,
                 TimeUnit::kMinute),
      MakePolicy("unknown", "<fallback>", Scope::kIp, 1, TimeUnit::kMinute),
  };
  policies[1].shadow_mode = true;
  policies[2].layer = "inner-layer";
  RouteNormalizer normalizer;
  PolicySet set = *PolicySet::Compile(policies, true, normalizer.keys());
  for (const char* target : {
           "/_matrix/client/r0/rooms/%21a%3Ab/send/x/1",
           "/_matrix/client/unstable/keys/%63laim",
           "/_matrix/client/v3/rooms/%21a%3Ab%2Fsend/x",
           "/_matrix/media/r0/download/a/b",
           "/_synapse/admin/v1/%75sers",
           "/%",
           "",
       }) {
    for (bool user : {false, true}) {
      const Route route = normalizer.Normalize("PUT", target);
      const std::string_view path = QueryFreePath(target);
      EXPECT_EQ(
          ::mxlimit::testing::AsNaive(set,
                                      set.Resolve("PUT", route.id, path, user)),
          ::mxlimit::testing::NaiveResolve(set, "PUT", route.key, path, user))
          << target;
    }
  }
}

// --- the built-ins themselves
// -------------------------------------------------

TEST(BuiltinLayersTest, PreflightIsChargedOnlyToTheAggregateCaps) {
  auto l = Make({});
  const Request preflight = MakeRequest("OPTIONS", "/_matrix/client/v3/sync",
                                        "192.0.2.1", "@a:example.org");
  EXPECT_EQ(Applied(*l, preflight, "route", Scope::kIp), "-");
  EXPECT_EQ(Applied(*l, preflight, "route", Scope::kUser), "-");
  EXPECT_EQ(Applied(*l, preflight, "aggregate", Scope::kIp),
            "aggregate-per-ip");
  EXPECT_EQ(Applied(*l, preflight, "aggregate", Scope::kUser),
            "aggregate-per-user");
  const Request health = MakeRequest("GET", "/health", "192.0.2.1");
  EXPECT_TRUE(l->normalizer().Normalize("GET", "/health").known);
  EXPECT_EQ(Applied(*l, health, "route", Scope::kIp), "catch-all-ip");
}

TEST(BuiltinLayersTest, DefaultRequestHasFourBuckets) {
  auto l = Make({});
  const Request sync = MakeRequest("GET", "/_matrix/client/v3/sync?since=s1",
                                   "192.0.2.1", "@a:example.org");
  EXPECT_EQ(l->DescribeBuckets(sync).size(), 4u);
  // An initial sync (no `since`) also takes a lease of
  // initial-sync-in-flight, beside the same four.
  const Request initial = MakeRequest("GET", "/_matrix/client/v3/sync",
                                      "192.0.2.1", "@a:example.org");
  const std::vector<std::string> buckets = l->DescribeBuckets(initial);
  ASSERT_EQ(buckets.size(), 5u);
  EXPECT_EQ(std::count_if(buckets.begin(), buckets.end(),
                          [](const std::string& b) {
                            return b.find(
                                       "policy initial-sync-in-flight (in "
                                       "flight: takes a lease)") !=
                                   std::string::npos;
                          }),
            1);
  EXPECT_EQ(Applied(*l, sync, "route", Scope::kIp), "catch-all-ip");
  EXPECT_EQ(Applied(*l, sync, "route", Scope::kUser), "catch-all-user");
  EXPECT_EQ(Applied(*l, sync, "aggregate", Scope::kIp), "aggregate-per-ip");
  EXPECT_EQ(Applied(*l, sync, "aggregate", Scope::kUser), "aggregate-per-user");
}

// --- 5. an operator wildcard outranks the built-ins of its tier --------------
// (issue #30: `{roomId}` counted 8 literal bytes, so message-send and
// keys-per-user outranked these on every request they were written for).

TEST(OperatorWildcardTest, SendsKeysAndOneRoomApplyWithBuiltinsOn) {
  Policy keys = MakePolicy("keys", "/_matrix/client/*/keys/*", Scope::kUser, 2,
                           TimeUnit::kMinute);
  keys.share_threshold = true;
  auto l =
      Make({MakePolicy("sends", "/_matrix/client/v3/rooms/*/send/*",
                       Scope::kUser, 3, TimeUnit::kMinute),
            keys,
            MakePolicy("hot-room", "/_matrix/client/v3/rooms/!a:b.c/send/*",
                       Scope::kUser, 1, TimeUnit::kMinute)});
  auto send = [&](std::string_view user, const std::string& room, int i) {
    return l->Check(
        MakeRequest("PUT",
                    "/_matrix/client/v3/rooms/" + room +
                        "/send/m.room.message/t" + std::to_string(i),
                    "198.51.100.9", user),
        At(0));
  };
  int allowed = 0;
  for (int i = 0; i < 10; ++i) {
    const Decision d = send("@a:x.org", "!r" + std::to_string(i) + ":x.org", i);
    allowed += d.allowed;
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "sends");
    }
  }
  EXPECT_EQ(allowed, 3);  // not message-send's burst of 10

  allowed = 0;
  for (const char* path :
       {"/_matrix/client/v3/keys/claim", "/_matrix/client/r0/keys/upload",
        "/_matrix/client/unstable/keys/query", "/_matrix/client/v3/keys/x"}) {
    const Decision d =
        l->Check(MakeRequest("POST", path, "198.51.100.9", "@b:x.org"), At(0));
    allowed += d.allowed;
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "keys") << path;
    }
  }
  EXPECT_EQ(allowed, 2);  // one shared budget, not keys-per-user's 120

  // The short room ID's own rule, beside the every-room one.
  EXPECT_TRUE(send("@c:x.org", "!a:b.c", 0).allowed);
  const Decision second = send("@c:x.org", "!a:b.c", 1);
  EXPECT_FALSE(second.allowed);
  EXPECT_EQ(second.policy, "hot-room");
  EXPECT_TRUE(send("@c:x.org", "!other:b.c", 2).allowed);
}

}  // namespace
}  // namespace mxlimit
