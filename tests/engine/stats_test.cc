// Stats and their exposition: what is counted (per route key, `never`
// denials, fallback decisions, the policy info), that a ShardedLimiter counts
// as a Limiter does, and that each family is written whole. The real parsers
// read the output in tests/engine/exposition/.

#include "mxlimit/stats.h"

#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kLogin = "/_matrix/client/v3/login";

LimiterConfig Config() {
  LimiterConfig config;
  config.builtin_policies = false;
  config.policies.push_back(
      MakePolicy("login", std::string(kLogin), Scope::kIp, 2, TimeUnit::kHour));
  Policy blocked = MakePolicy("no-directory", "/_matrix/client/v3/publicRooms",
                              Scope::kIp, 1, TimeUnit::kHour);
  blocked.rate = Rate::Blocked();
  config.policies.push_back(blocked);
  config.policies.push_back(
      MakePolicy("unknown", "<fallback>", Scope::kIp, 1, TimeUnit::kHour));
  return config;
}

template <typename L>
void Traffic(L& l) {
  for (int i = 0; i < 4; ++i) {
    l.Check(MakeRequest("POST", kLogin, "192.0.2.1"), At(0));
    l.Check(MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.2"),
            At(0));
    l.Check(MakeRequest("GET", "/nowhere", "192.0.2.3"), At(0));
  }
  // A request whose cost exceeds the burst can never pass.
  Request big = MakeRequest("POST", kLogin, "198.51.100.1");
  big.cost = 3;
  l.Check(big, At(0));
}

// `text`'s lines (std types: Debian's abseil has its own string_view).
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos;
       nl = text.find('\n', start)) {
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

const PolicyStats& Named(const LimiterStats& s, std::string_view name) {
  for (const PolicyStats& p : s.policies) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no policy " << name;
  return s.policies.front();
}

TEST(StatsTest, CountsDenialsPerRouteNeverDenialsAndFallbackDecisions) {
  auto limiter = *Limiter::Create(Config());
  Traffic(*limiter);
  // Peek decides nothing and counts nothing.
  limiter->Peek(MakeRequest("GET", "/nowhere", "192.0.2.3"), At(0));
  const LimiterStats s = limiter->Stats();
  EXPECT_EQ(Named(s, "login").counters.denied, 3u);  // 2 + 1 too big
  EXPECT_EQ(Named(s, "login").counters.never, 1u);
  EXPECT_EQ(Named(s, "no-directory").counters.denied, 4u);
  EXPECT_EQ(Named(s, "no-directory").counters.never, 4u);
  EXPECT_EQ(Named(s, "unknown").counters.never, 0u);
  ASSERT_EQ(s.route_denials.size(), 3u);
  std::map<std::string, uint64_t> by_route;
  for (const RouteDenials& r : s.route_denials) by_route[r.route] = r.denied;
  EXPECT_EQ(by_route["<fallback>"], 3u);
  EXPECT_EQ(by_route[std::string(kLogin)], 3u);
  EXPECT_EQ(by_route["/_matrix/client/v3/publicRooms"], 4u);
  EXPECT_EQ(s.fallback_allowed, 1u);
  EXPECT_EQ(s.fallback_denied, 3u);
}

TEST(StatsTest, PolicyInfoCarriesLayerScopeModeAndRate) {
  LimiterConfig config = Config();
  config.policies[0].layer = "edge";
  config.policies[0].shadow_mode = true;
  auto limiter = *Limiter::Create(config);
  const LimiterStats s = limiter->Stats();
  const PolicyStats& login = Named(s, "login");
  EXPECT_EQ(login.layer, "edge");
  EXPECT_TRUE(login.shadow);
  EXPECT_EQ(login.rate, *Rate::Create(2, TimeUnit::kHour));
  const std::string text = FormatPrometheus(s);
  EXPECT_THAT(text, HasSubstr("mxlimit_policy_info{policy=\"login\","
                              "layer=\"edge\",scope=\"ip\",mode=\"shadow\","
                              "builtin=\"false\",rate=\"2/hour\","
                              "burst=\"2\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("mxlimit_policy_info{policy=\"no-directory\","
                              "layer=\"route\",scope=\"ip\",mode=\"enforce\","
                              "builtin=\"false\",rate=\"blocked\"} 1\n"));
}

// Route ids are fixed by the build, so the per-route counters survive a
// reload; the per-policy ones follow the policy's name.
TEST(StatsTest, RouteCountersSurviveAReload) {
  auto limiter = *Limiter::Create(Config());
  Traffic(*limiter);
  ASSERT_TRUE(limiter->Reload(Config()).ok());
  EXPECT_EQ(limiter->Stats().route_denials.size(), 3u);
  EXPECT_EQ(limiter->Stats().fallback_denied, 3u);
}

TEST(StatsTest, ShardedLimiterCountsAsALimiterDoes) {
  auto lone = *Limiter::Create(Config());
  auto sharded = *ShardedLimiter::Create(Config(), 8);
  Traffic(*lone);
  Traffic(*sharded);
  // Requests whose two scopes land on different shards count once.
  for (int i = 0; i < 16; ++i) {
    const std::string user = "@u" + std::to_string(i) + ":example.org";
    Request r = MakeRequest("GET", "/nowhere", "203.0.113.9", user);
    lone->Check(r, At(0));
    sharded->Check(r, At(0));
  }
  const LimiterStats a = lone->Stats();
  const LimiterStats b = sharded->Stats();
  ASSERT_EQ(a.route_denials.size(), b.route_denials.size());
  for (size_t i = 0; i < a.route_denials.size(); ++i) {
    EXPECT_EQ(a.route_denials[i].route, b.route_denials[i].route);
    EXPECT_EQ(a.route_denials[i].denied, b.route_denials[i].denied);
  }
  EXPECT_EQ(a.fallback_allowed, b.fallback_allowed);
  EXPECT_EQ(a.fallback_denied, b.fallback_denied);
  for (const PolicyStats& p : a.policies) {
    EXPECT_EQ(p.counters.never, Named(b, p.name).counters.never) << p.name;
    EXPECT_EQ(p.counters.denied, Named(b, p.name).counters.denied) << p.name;
  }
  // Everything after the tables reads the same.
  auto after_tables = [](const LimiterStats& s) {
    const std::string text = FormatPrometheus(s);
    const size_t start = text.find("# HELP mxlimit_exempt_requests_total ");
    EXPECT_NE(start, std::string::npos);
    return start == std::string::npos ? text : text.substr(start);
  };
  EXPECT_EQ(after_tables(a), after_tables(b));
}

// The metric family a text-format line belongs to: the name in a HELP or
// TYPE line, else the sample name up to '{' or ' ', minus a counter's
// `_total`.
std::string FamilyOf(std::string_view line) {
  if (line.substr(0, 2) == "# ") {
    line.remove_prefix(7);  // "# HELP " or "# TYPE "
    return std::string(line.substr(0, line.find(' ')));
  }
  return std::string(line.substr(0, line.find_first_of("{ ")));
}

// The bug this guards against: every HELP/TYPE first, then samples
// interleaved, which the format forbids and parsers read as several
// families of one name.
TEST(StatsTest, EachFamilyIsWrittenWhole) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  Traffic(*limiter);
  for (const std::string& text : {FormatPrometheus(limiter->Stats()),
                                  FormatOpenMetrics(limiter->Stats())}) {
    std::set<std::string> done;
    std::string current;
    int help_lines = 0;
    for (const std::string& line : Lines(text)) {
      if (line == "# EOF") continue;
      std::string family = FamilyOf(line);
      if (line.rfind("# HELP ", 0) == 0) {
        ++help_lines;
        ASSERT_TRUE(done.insert(family).second) << "family again: " << line;
        current = family;
        continue;
      }
      // A sample's name starts with its family's (OpenMetrics adds _total
      // or _info to the family name; the text format names it fully).
      ASSERT_EQ(family.substr(0, current.size()), current) << line;
    }
    EXPECT_EQ(help_lines, 13);
  }
}

TEST(StatsTest, FormatsEndAsTheirServersNeed) {
  auto limiter = *Limiter::Create(LimiterConfig{});
  const std::string text = FormatPrometheus(limiter->Stats());
  const std::string om = FormatOpenMetrics(limiter->Stats());
  // mxlimitd appends its own families to the text format.
  EXPECT_THAT(text, EndsWith("\n"));
  EXPECT_THAT(text, Not(HasSubstr("# EOF")));
  EXPECT_THAT(text, HasSubstr("# TYPE mxlimit_table_hits_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE mxlimit_policy_info gauge\n"));
  EXPECT_THAT(om, EndsWith("\n# EOF\n"));
  EXPECT_THAT(om, HasSubstr("# TYPE mxlimit_table_hits counter\n"
                            "mxlimit_table_hits_total{table=\"ip\"} 0\n"));
  EXPECT_THAT(om, HasSubstr("# TYPE mxlimit_policy info\n"));
}

TEST(StatsTest, LabelValuesAreEscaped) {
  LimiterStats s;
  PolicyStats p;
  p.name = "a\"b\\c\nd";
  s.policies.push_back(p);
  s.route_denials.push_back(RouteDenials{1, "/r/\"x\"", 1});
  const std::string text = FormatPrometheus(s);
  EXPECT_THAT(text, HasSubstr("policy=\"a\\\"b\\\\c\\nd\""));
  EXPECT_THAT(text,
              HasSubstr("mxlimit_route_denials_total{route=\"/r/\\\"x\\\"\"} "
                        "1\n"));
  // No line of the output starts inside a label value.
  for (const std::string& line : Lines(text)) {
    EXPECT_THAT(line, Not(::testing::StartsWith("d\"")));
  }
}

// --- Every request counts once per policy that applied -----------------------

// Built-ins on, operator policies of every kind, two shadow trials (one in a
// layer of its own), an exempt network.
LimiterConfig MixedConfig() {
  LimiterConfig config;
  config.policies.push_back(MakePolicy("login-strict", std::string(kLogin),
                                       Scope::kIp, 3, TimeUnit::kHour));
  Policy blocked = MakePolicy("no-directory", "/_matrix/client/v3/publicRooms",
                              Scope::kIp, 1, TimeUnit::kHour);
  blocked.rate = Rate::Blocked();
  config.policies.push_back(blocked);
  Policy trial = MakePolicy("send-trial", "/_matrix/client/v3/rooms/*",
                            Scope::kUser, 10, TimeUnit::kMinute, 4);
  trial.shadow_mode = true;
  config.policies.push_back(trial);
  Policy ip_trial =
      MakePolicy("ip-trial", "*", Scope::kIp, 60, TimeUnit::kMinute, 12);
  ip_trial.shadow_mode = true;
  ip_trial.layer = "trial";
  config.policies.push_back(ip_trial);
  Policy free = MakePolicy("free", "/_matrix/client/versions", Scope::kIp, 1,
                           TimeUnit::kMinute);
  free.rate = Rate::Unlimited();
  config.policies.push_back(free);
  config.exempt.ips.push_back(*ParseCidr("10.0.0.0/8"));
  return config;
}

// How many checked requests each policy of `limiter`'s set applied to,
// resolved independently of the engine, and the per-policy sums of the
// four results.
template <typename L>
void ExpectEveryRequestCountsOnce(L& limiter, const PolicySet& set,
                                  const RouteNormalizer& normalizer,
                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  const char* ips[] = {"192.0.2.1", "192.0.2.2", "2001:db8::1", "10.1.2.3"};
  const char* users[] = {"", "@a:example.org", "@b:example.org"};
  const std::pair<const char*, const char*> targets[] = {
      {"POST", "/_matrix/client/v3/login"},
      {"GET", "/_matrix/client/v3/publicRooms"},
      {"PUT", "/_matrix/client/v3/rooms/!r:x/send/m.room.message/1"},
      {"POST", "/_matrix/client/v3/keys/claim"},
      {"GET", "/_matrix/client/v3/sync"},
      {"GET", "/_matrix/client/versions"},
      {"GET", "/nowhere"}};
  std::vector<uint64_t> applied(set.size(), 0);
  int64_t ms = 0;
  for (int i = 0; i < 3000; ++i) {
    ms += static_cast<int64_t>(pick(200));
    const auto& [method, target] = targets[pick(std::size(targets))];
    Request r = MakeRequest(method, target, ips[pick(std::size(ips))],
                            users[pick(std::size(users))]);
    if (pick(20) == 0) r.cost = static_cast<int64_t>(pick(30));
    const Decision d = limiter.Check(r, MonotonicTime::FromMilliseconds(ms));
    if (d.exempt) continue;
    const Route route = normalizer.Normalize(r.method, r.target);
    const PolicySet::Resolution res = set.Resolve(
        r.method, route.id, QueryFreePath(r.target), !r.user_id.empty());
    for (const ResolvedPolicy& a : res.all()) ++applied[a.policy];
  }
  const LimiterStats s = limiter.Stats();
  ASSERT_EQ(s.policies.size(), set.size());
  uint64_t by_other = 0;
  for (size_t id = 0; id < set.size(); ++id) {
    const PolicyCounters& c = s.policies[id].counters;
    EXPECT_EQ(c.allowed + c.denied + c.shadow_denied + c.denied_by_other,
              applied[id])
        << s.policies[id].name << ": allowed " << c.allowed << ", denied "
        << c.denied << ", shadow_denied " << c.shadow_denied
        << ", denied_by_other " << c.denied_by_other;
    by_other += c.denied_by_other;
  }
  EXPECT_GT(by_other, 0u);
}

TEST(StatsTest, EveryRequestCountsOnceForEachPolicyThatApplied) {
  for (uint64_t seed : {1u, 2u}) {
    auto lone = *Limiter::Create(MixedConfig());
    ExpectEveryRequestCountsOnce(*lone, lone->policies(), lone->normalizer(),
                                 seed);
    auto sharded = *ShardedLimiter::Create(MixedConfig(), 4);
    ExpectEveryRequestCountsOnce(*sharded, lone->policies(), lone->normalizer(),
                                 seed);
    LimiterConfig observe = MixedConfig();
    observe.shadow_mode = true;
    auto shadow = *Limiter::Create(observe);
    ExpectEveryRequestCountsOnce(*shadow, shadow->policies(),
                                 shadow->normalizer(), seed);
  }
}

TEST(StatsTest, PolicyCountsAreTheStatsCountersInPlace) {
  auto limiter = *Limiter::Create(MixedConfig());
  const std::span<const PolicyCounters> counts = limiter->PolicyCounts();
  ASSERT_EQ(counts.size(), limiter->policies().size());
  Traffic(*limiter);
  // The same span sees every Check's counts.
  const LimiterStats s = limiter->Stats();
  ASSERT_EQ(s.policies.size(), counts.size());
  uint64_t total = 0;
  for (size_t id = 0; id < counts.size(); ++id) {
    const PolicyCounters& c = s.policies[id].counters;
    EXPECT_EQ(counts[id].allowed, c.allowed) << s.policies[id].name;
    EXPECT_EQ(counts[id].denied, c.denied) << s.policies[id].name;
    EXPECT_EQ(counts[id].never, c.never) << s.policies[id].name;
    EXPECT_EQ(counts[id].shadow_denied, c.shadow_denied) << s.policies[id].name;
    EXPECT_EQ(counts[id].denied_by_other, c.denied_by_other)
        << s.policies[id].name;
    total += counts[id].allowed + counts[id].denied;
  }
  EXPECT_GT(total, 0u);
}

TEST(StatsTest, DeniedByOtherCountsWhatAnotherPolicyStopped) {
  // login-strict (2 per hour) denies the third login; the built-in
  // login-per-network and the aggregate caps allowed it but were not
  // charged: denied by another policy.
  LimiterConfig config;
  config.policies.push_back(MakePolicy("login-strict", std::string(kLogin),
                                       Scope::kIp, 2, TimeUnit::kHour));
  auto limiter = *Limiter::Create(config);
  for (int i = 0; i < 3; ++i) {
    limiter->Check(MakeRequest("POST", kLogin, "192.0.2.1"), At(0));
  }
  const LimiterStats s = limiter->Stats();
  EXPECT_EQ(Named(s, "login-strict").counters.allowed, 2u);
  EXPECT_EQ(Named(s, "login-strict").counters.denied, 1u);
  EXPECT_EQ(Named(s, "login-strict").counters.denied_by_other, 0u);
  for (const char* name : {"login-per-network", "aggregate-per-ip"}) {
    EXPECT_EQ(Named(s, name).counters.allowed, 2u) << name;
    EXPECT_EQ(Named(s, name).counters.denied_by_other, 1u) << name;
  }
  EXPECT_THAT(FormatPrometheus(s),
              HasSubstr("mxlimit_policy_requests_total{policy=\""
                        "login-per-network\",scope=\"ip\",result=\""
                        "denied_by_other\"} 1\n"));
}

}  // namespace
}  // namespace mxlimit
