// Writes the metrics exposition of a few limiters, in both formats, into a
// directory for check_expositions.py to parse with the real parsers
// (prometheus_client's text and OpenMetrics parsers, promtool). Each case is
// a file pair NAME.prom (text 0.0.4) and NAME.om (OpenMetrics):
//
//   limiter    a Limiter with the built-ins and operator policies, after
//              traffic that allows, denies (with and without a wait),
//              shadow-denies, exempts and hits the fallback route
//   sharded    the same traffic through an 8-shard ShardedLimiter
//   names      policies and layers with the oddest names the rules allow
//   hostile    a hand-built LimiterStats whose names hold quotes,
//              backslashes, newlines and braces: label escaping
//   daemon     (with mxlimitd) the limiter's text, the store's families (as
//              with a `store:`) and mxlimitd's own, as GET /metrics serves
//              them
//
// Usage: write_expositions DIR

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "mxlimit/stats.h"
#include "tests/testing/limiter_fixtures.h"
#ifdef MXLIMIT_WITH_DAEMON
#include "mxlimit/shared_limiter.h"
#include "src/daemon/daemon_metrics.h"
#endif

namespace mxlimit {
namespace {

using testing::At;
using testing::MakePolicy;
using testing::MakeRequest;

LimiterConfig TrafficConfig() {
  LimiterConfig config;  // built-ins on
  config.policies.push_back(MakePolicy("login-strict",
                                       "/_matrix/client/v3/login", Scope::kIp,
                                       2, TimeUnit::kHour));
  Policy blocked =
      MakePolicy("blocked-directory", "/_matrix/client/v3/publicRooms",
                 Scope::kIp, 1, TimeUnit::kHour);
  blocked.rate = Rate::Blocked();
  config.policies.push_back(blocked);
  Policy shadow = MakePolicy("shadow-sync", "/_matrix/client/v3/sync",
                             Scope::kUser, 1, TimeUnit::kHour);
  shadow.shadow_mode = true;
  shadow.layer = "observe";
  config.policies.push_back(shadow);
  Policy fallback =
      MakePolicy("unknown-paths", "<fallback>", Scope::kIp, 3, TimeUnit::kHour);
  config.policies.push_back(fallback);
  config.exempt.users.push_back("@bridge:example.org");
  return config;
}

template <typename L>
void Traffic(L& limiter) {
  for (int i = 0; i < 5; ++i) {
    limiter.Check(MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1"),
                  At(0));
    limiter.Check(
        MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.2"),
        At(0));
    limiter.Check(MakeRequest("GET", "/_matrix/client/v3/sync?since=s1",
                              "192.0.2.3", "@alice:example.org"),
                  At(0));
    limiter.Check(MakeRequest("GET", "/no/such/route", "192.0.2.4"), At(0));
    limiter.Check(MakeRequest("GET", "/_matrix/client/v3/sync?since=s1",
                              "192.0.2.5", "@bridge:example.org"),
                  At(0));
  }
}

LimiterConfig NamesConfig() {
  LimiterConfig config;
  config.builtin_policies = false;
  const std::string names[] = {"a",
                               "..",
                               "-:-",
                               "0",
                               "_",
                               "x.y:z-w_v",
                               std::string(kMaxPolicyNameBytes, 'n')};
  for (const std::string& name : names) {
    Policy p = MakePolicy(name, "/_matrix/client/v3/" + name, Scope::kIp, 1,
                          TimeUnit::kMinute);
    p.layer = name.size() <= kMaxLayerNameBytes ? name : "route";
    config.policies.push_back(std::move(p));
  }
  Policy unlimited = MakePolicy("free", "/_matrix/client/v3/free", Scope::kUser,
                                1, TimeUnit::kMinute);
  unlimited.rate = Rate::Unlimited();
  config.policies.push_back(unlimited);
  return config;
}

LimiterStats HostileStats() {
  LimiterStats s;
  PolicyStats p;
  p.name = "evil\"} 1\n# TYPE injected counter\\";
  p.layer = "lay\\er\"\n";
  p.rate = *Rate::Create(10, TimeUnit::kMinute, 3);
  p.counters.allowed = 7;
  p.counters.denied = 2;
  p.counters.never = 1;
  s.policies.push_back(p);
  s.route_denials.push_back(RouteDenials{1, "/_matrix/{a}\"b\\c\nd", 4});
  return s;
}

bool Write(const std::string& dir, const std::string& name,
           const std::string& text) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

bool WritePair(const std::string& dir, const std::string& name,
               const LimiterStats& s) {
  return Write(dir, name + ".prom", FormatPrometheus(s)) &&
         Write(dir, name + ".om", FormatOpenMetrics(s));
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_expositions DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  auto limiter = Limiter::Create(TrafficConfig());
  auto sharded = ShardedLimiter::Create(TrafficConfig(), 8);
  auto names = Limiter::Create(NamesConfig());
  if (!limiter.ok() || !sharded.ok() || !names.ok()) {
    std::fprintf(stderr, "write_expositions: cannot build a limiter\n");
    return 1;
  }
  Traffic(**limiter);
  Traffic(**sharded);
  (*names)->Check(MakeRequest("GET", "/_matrix/client/v3/a", "192.0.2.1"),
                  At(0));
  bool ok = WritePair(dir, "limiter", (*limiter)->Stats()) &&
            WritePair(dir, "sharded", (*sharded)->Stats()) &&
            WritePair(dir, "names", (*names)->Stats()) &&
            WritePair(dir, "hostile", HostileStats());
#ifdef MXLIMIT_WITH_DAEMON
  std::string served = FormatPrometheus((*sharded)->Stats());
  SharedStoreStats store;
  store.store_decisions = 40;
  store.local_denials = 3;
  store.fallback_timeout = 2;
  store.late_replies = 1;
  store.refunds = 1;
  store.connected = true;
  store.in_flight = 5;
  served += FormatStorePrometheus(store);
  daemon::DaemonMetrics metrics;
  metrics.AppendPrometheus(http::ServerCounters{}, nullptr, served);
  ok = ok && Write(dir, "daemon.prom", served);
#endif
  if (!ok) {
    std::fprintf(stderr, "write_expositions: cannot write to %s\n",
                 dir.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace mxlimit

int main(int argc, char** argv) { return mxlimit::Main(argc, argv); }
