// Observe-only predicts enforcement exactly: the same config, once with the
// top-level `shadow_mode: true` and once enforcing, run over the same
// traffic (every bundled sample log and random traffic), gives the same
// per-policy counts, shadow-denied in place of denied, and the same
// request-by-request answer (shadow-denied exactly when enforcement
// denies). For the built-in defaults and operator configs, through a
// Limiter, a ShardedLimiter and a SharedLimiter (exact, approximate and
// local sharing over an in-process store). Issue #30, item 5.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/shared_limiter.h"
#include "src/replay/line_reader.h"
#include "src/replay/log_parsers.h"
#include "src/shared/fake_store.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using internal::FakeStore;
using testing::MakePolicy;

// One request of a traffic, owning its strings.
struct Line {
  std::string method;
  std::string target;
  IpAddress client;
  std::string user;
  int64_t cost = 1;
  int64_t time_ms = 0;
};
using Traffic = std::vector<Line>;

// The requests of examples/data/NAME, on the log's clock made monotonic, as
// `mxlimit replay` reads them (prefix and format detected from the first
// 100 lines).
Traffic Sample(const std::string& name) {
  Traffic out;
  const std::string path =
      std::string(MXLIMIT_SOURCE_DIR) + "/examples/data/" + name;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return out;
  replay::LogPrefix prefix;
  replay::LogFormat format;
  {
    replay::LineReader reader(f);
    std::vector<std::string> head;
    replay::Line line;
    while (head.size() < 100 && reader.Next(&line)) {
      head.emplace_back(line.text);
    }
    std::vector<std::string_view> views(head.begin(), head.end());
    prefix = replay::DetectLogPrefix(views);
    std::vector<std::string_view> inner;
    for (std::string_view v : views) {
      std::string_view stripped;
      if (replay::StripLogPrefix(prefix, v, &stripped)) {
        inner.push_back(stripped);
      }
    }
    format = replay::DetectFormat(inner);
  }
  std::rewind(f);
  replay::LineReader reader(f);
  replay::Line line;
  int64_t clock_ms = INT64_MIN;
  while (reader.Next(&line)) {
    replay::LogRecord r;
    if (line.too_long ||
        replay::ParsePrefixedLogLine(prefix, format, line.text, &r) !=
            replay::ParseResult::kOk) {
      continue;
    }
    absl::StatusOr<IpAddress> client = ParseIpAddress(r.client_ip);
    if (!client.ok()) continue;
    clock_ms = std::max(clock_ms, r.time_ms);
    out.push_back({std::string(r.method), std::string(r.target), *client,
                   std::string(r.user), 1, clock_ms});
  }
  std::fclose(f);
  return out;
}

// Random traffic over few clients, networks, users and routes, so that
// buckets run dry and policies of several layers and scopes deny one
// request together; costs of 0 to 3, so some never fit a small burst.
Traffic Random(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t size) {
    return static_cast<size_t>(
        std::uniform_int_distribution<size_t>(0, size - 1)(rng));
  };
  const std::vector<std::string> ips = {"192.0.2.1",
                                        "192.0.2.2",
                                        "192.0.2.77",
                                        "198.51.100.7",
                                        "203.0.113.9",
                                        "2001:db8:bad:cafe::1",
                                        "2001:db8:bad:cafe::2",
                                        "2001:db8:bad:beef::1",
                                        "2001:db8:1::5"};
  const std::vector<std::string> users = {
      "", "", "@alice:example.org", "@bob:example.org", "@mallory:example.org"};
  struct Target {
    const char* method;
    const char* target;
  };
  const std::vector<Target> targets = {
      {"POST", "/_matrix/client/v3/login"},
      {"POST", "/_matrix/client/r0/login"},
      {"POST", "/_matrix/client/v3/register"},
      {"PUT", "/_matrix/client/v3/rooms/!a:example.org/send/m.room.message/1"},
      {"PUT", "/_matrix/client/v3/rooms/!b:example.org/send/m.room.message/2"},
      {"POST", "/_matrix/client/v3/keys/claim"},
      {"POST", "/_matrix/client/v3/keys/query"},
      {"GET", "/_matrix/client/v3/sync?timeout=30000"},
      {"GET", "/_matrix/client/v3/profile/@alice:example.org"},
      {"POST", "/_matrix/media/v3/upload"},
      {"GET", "/no/such/path"},
      {"GET", "/_matrix/client/versions"},
      {"POST", "/_matrix/client/v3/rooms/!a:example.org/redact/$e/t"},
  };
  Traffic out;
  int64_t t = 1'700'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    // Mostly bursts, now and then a pause that refills some buckets.
    t += static_cast<int64_t>(pick(50) == 0 ? pick(60'000) : pick(40));
    const Target& target = targets[pick(targets.size())];
    const int64_t cost = pick(10) == 0 ? static_cast<int64_t>(pick(4)) : 1;
    out.push_back({target.method, target.target,
                   testing::Ip(ips[pick(ips.size())]),
                   users[pick(users.size())], cost, t});
  }
  return out;
}

// The built-in defaults plus operator policies of every kind: a tighter
// login limit per /24 in its own layer, a user-scope wildcard sharing one
// counter, a blocked route, an unlimited one, an ip-scope catch-all in a
// layer of its own.
LimiterConfig OperatorConfig() {
  LimiterConfig config;
  Policy campus = MakePolicy("login-per-campus", "/_matrix/client/v3/login",
                             Scope::kIp, 10, TimeUnit::kHour, 3);
  campus.layer = "campus";
  campus.client_prefix = ClientPrefix{24, 48};
  campus.methods = {"POST"};
  Policy keys = MakePolicy("keys-all", "/_matrix/client/*/keys/*", Scope::kUser,
                           30, TimeUnit::kMinute, 4);
  keys.share_threshold = true;
  keys.layer = "keys";
  Policy blocked = MakePolicy("no-profile", "/_matrix/client/v3/profile/*",
                              Scope::kIp, 1, TimeUnit::kMinute);
  blocked.rate = Rate::Blocked();
  Policy versions = MakePolicy("versions-free", "/_matrix/client/versions",
                               Scope::kIp, 1, TimeUnit::kMinute);
  versions.rate = Rate::Unlimited();
  Policy edge =
      MakePolicy("edge-per-ip", "*", Scope::kIp, 600, TimeUnit::kMinute, 40);
  edge.layer = "edge";
  config.policies = {campus, keys, blocked, versions, edge};
  return config;
}

// Two operator policies on one route, no built-ins: the case where the
// per-user bucket used to be charged by requests the per-IP one would have
// denied.
LimiterConfig TwoPolicyConfig() {
  LimiterConfig config;
  config.builtin_policies = false;
  config.policies = {MakePolicy("send-ip", "/_matrix/client/v3/rooms/*",
                                Scope::kIp, 30, TimeUnit::kMinute, 5),
                     MakePolicy("send-user", "/_matrix/client/v3/rooms/*",
                                Scope::kUser, 20, TimeUnit::kMinute, 8)};
  config.policies[1].layer = "user";
  return config;
}

enum class Kind { kLimiter, kSharded, kSharedExact, kSharedMixed };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kLimiter:
      return "Limiter";
    case Kind::kSharded:
      return "ShardedLimiter";
    case Kind::kSharedExact:
      return "SharedLimiter(exact)";
    case Kind::kSharedMixed:
      return "SharedLimiter(approximate, local)";
  }
  return "?";
}

// Runs `traffic` through one limiter of `kind` built from `config` and
// returns every decision's (allowed, shadow_denied) and the final stats.
struct Outcomes {
  std::vector<bool> allowed;
  std::vector<bool> shadow_denied;
  LimiterStats stats;
  // SharedLimiter: charges the store made and had to give back.
  uint64_t refunds = 0;
};

template <typename L>
Outcomes Drive(L& limiter, const Traffic& traffic) {
  Outcomes run;
  for (const Line& l : traffic) {
    Request r;
    r.method = l.method;
    r.target = l.target;
    r.client = l.client;
    r.user_id = l.user;
    r.cost = l.cost;
    const Decision d =
        limiter.Check(r, MonotonicTime::FromMilliseconds(l.time_ms));
    run.allowed.push_back(d.allowed);
    run.shadow_denied.push_back(d.shadow_denied);
  }
  run.stats = limiter.Stats();
  if constexpr (std::is_same_v<L, SharedLimiter>) {
    run.refunds = limiter.StoreStats().refunds;
  }
  return run;
}

Outcomes RunWith(Kind kind, LimiterConfig config, const Traffic& traffic) {
  switch (kind) {
    case Kind::kLimiter: {
      auto l = Limiter::Create(config);
      EXPECT_TRUE(l.ok()) << l.status();
      return Drive(**l, traffic);
    }
    case Kind::kSharded: {
      auto l = ShardedLimiter::Create(config, 4);
      EXPECT_TRUE(l.ok()) << l.status();
      return Drive(**l, traffic);
    }
    case Kind::kSharedExact:
    case Kind::kSharedMixed: {
      config.store.key_secret = "0123456789abcdef-test-secret";
      config.store.clock = StoreOptions::Clock::kCaller;
      if (kind == Kind::kSharedMixed) {
        // Every other policy approximate, the rest local: the mirror decides
        // those, the store none.
        for (size_t i = 0; i < config.policies.size(); ++i) {
          config.policies[i].sharing =
              i % 2 == 0 ? Sharing::kApproximate : Sharing::kLocal;
        }
      }
      auto l = SharedLimiter::CreateWithStore(config,
                                              std::make_unique<FakeStore>(), 2);
      EXPECT_TRUE(l.ok()) << l.status();
      return Drive(**l, traffic);
    }
  }
  return {};
}

// The whole comparison: enforcing, then observe-only, then the two agree.
// Returns how many requests enforcement denied.
uint64_t ExpectShadowPredictsEnforcement(const LimiterConfig& config,
                                         const Traffic& traffic, Kind kind,
                                         const std::string& what) {
  SCOPED_TRACE(what + " through " + KindName(kind));
  EXPECT_FALSE(traffic.empty());
  LimiterConfig shadow = config;
  shadow.shadow_mode = true;
  const Outcomes enforced = RunWith(kind, config, traffic);
  const Outcomes observed = RunWith(kind, shadow, traffic);
  EXPECT_EQ(enforced.allowed.size(), traffic.size());
  EXPECT_EQ(observed.allowed.size(), traffic.size());
  uint64_t denials = 0;
  size_t mismatches = 0;
  for (size_t i = 0; i < traffic.size() && mismatches < 3; ++i) {
    EXPECT_TRUE(observed.allowed[i]) << "request " << i;
    if (observed.shadow_denied[i] != !enforced.allowed[i]) {
      ++mismatches;
      ADD_FAILURE() << "request " << i << " (" << traffic[i].method << " "
                    << traffic[i].target << " " << traffic[i].user
                    << "): enforcement "
                    << (enforced.allowed[i] ? "allows" : "denies")
                    << ", observe-only says "
                    << (observed.shadow_denied[i] ? "shadow-denied"
                                                  : "allowed");
    }
    denials += !enforced.allowed[i];
  }
  const std::vector<PolicyStats>& e = enforced.stats.policies;
  const std::vector<PolicyStats>& o = observed.stats.policies;
  EXPECT_EQ(e.size(), o.size());
  for (size_t p = 0; p < std::min(e.size(), o.size()); ++p) {
    SCOPED_TRACE(e[p].name);
    EXPECT_EQ(e[p].name, o[p].name);
    EXPECT_TRUE(o[p].shadow);
    EXPECT_EQ(o[p].counters.denied, 0u);
    EXPECT_EQ(o[p].counters.shadow_denied, e[p].counters.denied);
    EXPECT_EQ(o[p].counters.allowed, e[p].counters.allowed);
    EXPECT_EQ(o[p].counters.denied_by_other, e[p].counters.denied_by_other);
  }
  // The store charged exactly what the mirror did: one thread, so no
  // refund (a shadow bucket charged by a request another shadow bucket
  // denies would have to be given back).
  EXPECT_EQ(observed.refunds, 0u);
  EXPECT_EQ(enforced.refunds, 0u);
  // The buckets evolved alike, so the tables admitted the same ones.
  EXPECT_EQ(observed.stats.ip_table.admissions,
            enforced.stats.ip_table.admissions);
  EXPECT_EQ(observed.stats.user_table.admissions,
            enforced.stats.user_table.admissions);
  return denials;
}

const Kind kAllKinds[] = {Kind::kLimiter, Kind::kSharded, Kind::kSharedExact,
                          Kind::kSharedMixed};

TEST(ShadowModeTest, SampleSynapseLoginPerNetworkIsPredictedExactly) {
  // The case: observe-only reported 918 shadow denials of
  // login-per-network, which enforcement never makes (login-per-ip stops
  // the flood first).
  const Traffic traffic = Sample("sample-synapse.log");
  LimiterConfig shadow;
  shadow.shadow_mode = true;
  const Outcomes observed = RunWith(Kind::kLimiter, shadow, traffic);
  for (const PolicyStats& p : observed.stats.policies) {
    if (p.name == "login-per-network") {
      EXPECT_EQ(p.counters.shadow_denied, 0u);
    }
    if (p.name == "login-per-ip") {
      EXPECT_EQ(p.counters.shadow_denied, 936u);
    }
  }
}

TEST(ShadowModeTest, TwoPoliciesOnOneRouteArePredictedExactly) {
  // A flood from one user at one address: the per-IP policy denies first,
  // and the per-user bucket must not keep filling behind it.
  Traffic traffic;
  for (int i = 0; i < 60; ++i) {
    traffic.push_back(
        {"PUT", "/_matrix/client/v3/rooms/!r:x/send/m/" + std::to_string(i),
         testing::Ip("192.0.2.1"), "@u:x", 1, 1000 + i * 500});
  }
  for (Kind kind : kAllKinds) {
    EXPECT_GT(ExpectShadowPredictsEnforcement(TwoPolicyConfig(), traffic, kind,
                                              "one sender"),
              0u);
  }
}

TEST(ShadowModeTest, BundledSamplesArePredictedExactly) {
  const char* samples[] = {"sample-synapse.log",
                           "sample-synapse.json.log",
                           "sample-synapse-journald.log",
                           "sample-nginx.log",
                           "sample-nginx-xff.log",
                           "sample-caddy.json.log",
                           "sample.tsv"};
  uint64_t denials = 0;
  for (const char* name : samples) {
    const Traffic traffic = Sample(name);
    denials += ExpectShadowPredictsEnforcement(
        LimiterConfig{}, traffic, Kind::kLimiter,
        std::string(name) + ", built-ins");
    denials += ExpectShadowPredictsEnforcement(
        OperatorConfig(), traffic, Kind::kLimiter,
        std::string(name) + ", operator config");
  }
  // Some samples deny nothing; the big one and the small attack logs do.
  EXPECT_GT(denials, 5000u);
}

TEST(ShadowModeTest, SampleIsPredictedExactlyByEveryLimiter) {
  const Traffic traffic = Sample("sample-synapse.log");
  for (Kind kind : kAllKinds) {
    EXPECT_GT(ExpectShadowPredictsEnforcement(LimiterConfig{}, traffic, kind,
                                              "sample-synapse.log, built-ins"),
              0u);
    EXPECT_GT(
        ExpectShadowPredictsEnforcement(OperatorConfig(), traffic, kind,
                                        "sample-synapse.log, operator config"),
        0u);
  }
}

TEST(ShadowModeTest, RandomTrafficIsPredictedExactlyByEveryLimiter) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const Traffic traffic = Random(seed, 6000);
    for (Kind kind : kAllKinds) {
      const std::string what = "random traffic, seed " + std::to_string(seed);
      EXPECT_GT(ExpectShadowPredictsEnforcement(LimiterConfig{}, traffic, kind,
                                                what + ", built-ins"),
                0u);
      EXPECT_GT(ExpectShadowPredictsEnforcement(OperatorConfig(), traffic, kind,
                                                what + ", operator config"),
                0u);
      EXPECT_GT(ExpectShadowPredictsEnforcement(TwoPolicyConfig(), traffic,
                                                kind, what + ", two policies"),
                0u);
    }
  }
}

}  // namespace
}  // namespace mxlimit
