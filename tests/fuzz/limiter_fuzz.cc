// Fuzz target: the engine behind `Limiter::Check` (src/engine/engine.h; a
// Limiter only forwards to it) driven by an attacker who chooses every
// request's method, target, address, user ID, cost and arrival time, against
// tiny tables (1-16 buckets) so admission and eviction run on most requests.
// Each input gets a fresh engine over policy sets compiled once per process.
//
// Input: three setup bytes (policy mix, address prefixes, capacities), then a
// sequence of operations: Check (mostly), Charge, a failing or an identical
// Reload, each at a time the fuzzer moves forwards, backwards, by years, or
// to raw int64 values. Invariants after every operation:
//   * Peek right before Check answers exactly what Check answers;
//   * neither table holds more buckets than its capacity;
//   * allowed: retry 0, no limiting scope or policy; denied with a wait:
//     0 < retry <= period x burst (tau) of the limiting policy; denied
//     `never`: retry 0 and the policy is blocked or the cost exceeds its
//     burst; remaining >= 0; the route key is one of the normalizer's keys;
//   * a denial's retry time is exact: the same request is still denied one
//     nanosecond earlier and allowed at that time, even after the clock
//     stepped back;
//   * a Reload that fails, or that installs the same config, changes no
//     decision (no bucket state is lost).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mxlimit/limiter.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/rate.h"
#include "mxlimit/route.h"
#include "src/engine/engine.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_input.h"

namespace mxlimit::fuzz {
namespace {

using internal::Engine;

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kDayNs = 86'400 * kSecondNs;

Policy MakePolicy(std::string name, std::string match, Scope scope, Rate rate,
                  bool share = false) {
  Policy p;
  p.name = std::move(name);
  p.match = {std::move(match)};
  p.scope = scope;
  p.rate = rate;
  p.share_threshold = share;
  return p;
}

LimiterConfig MakeConfig(uint8_t flags, uint8_t capacities) {
  LimiterConfig c;
  c.builtin_policies = flags & 1;
  constexpr std::array<int, 4> kV6 = {64, 48, 128, 0};
  c.tables.ipv6_prefix = kV6[(flags >> 2) & 3];
  c.tables.ipv4_prefix = (flags & 0x10) ? 24 : 32;
  c.tables.ip_capacity = 1 + (capacities & 0x0F);
  c.tables.user_capacity = 1 + (capacities >> 4);
  if (flags & 2) {
    c.policies.push_back(
        MakePolicy("send-user", "/_matrix/client/v3/rooms/{roomId}/send/*",
                   Scope::kUser, *Rate::Create(5, TimeUnit::kMinute, 3)));
    c.policies.push_back(MakePolicy("rooms-ip", "/_matrix/client/v3/rooms/*",
                                    Scope::kIp,
                                    *Rate::Create(10, TimeUnit::kSecond, 2)));
    c.policies.push_back(MakePolicy("media-shared", "/_matrix/media/*",
                                    Scope::kIp,
                                    *Rate::Create(3, TimeUnit::kHour, 3),
                                    /*share=*/true));
    Policy login = MakePolicy("login-blocked", "/_matrix/client/v3/login",
                              Scope::kIp, Rate::Blocked());
    login.methods = {"POST"};
    c.policies.push_back(login);
    Policy sync = MakePolicy("sync-shadow", "/_matrix/client/v3/sync",
                             Scope::kUser, *Rate::Create(1, TimeUnit::kDay, 1));
    sync.shadow_mode = true;
    c.policies.push_back(sync);
    c.policies.push_back(MakePolicy("keys-inner", "/_matrix/*/keys/*",
                                    Scope::kUser,
                                    *Rate::Create(100, TimeUnit::kMinute, 7)));
    c.policies.push_back(
        MakePolicy("health", "/health", Scope::kIp, Rate::Unlimited()));
    c.policies.push_back(MakePolicy("unknown", "<fallback>", Scope::kIp,
                                    *Rate::Create(1, TimeUnit::kSecond, 2)));
  }
  if (flags & 0x20) {
    c.exempt.ips.push_back(*ParseCidr("10.0.0.0/8"));
    c.exempt.users.push_back("@admin:example.org");
  }
  return c;
}

constexpr std::array<std::string_view, 8> kMethods = {
    "GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "get", ""};

// Route shapes with one attacker-chosen identifier spliced in at '%'.
constexpr std::array<std::string_view, 10> kTargets = {
    "/_matrix/client/v3/rooms/%/send/m.room.message/t1",
    "/_matrix/client/r0/rooms/!r:x/send/m.room.message/%",
    "/_matrix/client/v3/rooms/%/state/m.room.name/",
    "/_matrix/client/v3/sync?since=%",
    "/_matrix/client/v3/login",
    "/_matrix/media/v3/download/example.org/%",
    "/_matrix/client/v3/keys/%",
    "/_matrix/client/unstable/keys/query/%",
    "/health",
    "/%",
};

constexpr std::array<std::string_view, 6> kAddresses = {
    "203.0.113.9",      "203.0.113.10", "2001:db8::1",
    "2001:db8::ffff:1", "10.1.2.3",     "::ffff:203.0.113.9"};

constexpr std::array<std::string_view, 5> kUsers = {
    "", "@alice:example.org", "@bob:example.org", "@admin:example.org",
    "@a-very-long-localpart-well-over-forty-bytes-long:example.org"};

MonotonicTime NextTime(FuzzInput& in, MonotonicTime now) {
  const uint8_t how = in.Byte();
  const int64_t n = in.Byte();
  switch (how % 8) {
    case 0:
    case 1:
      return now;  // The clock stands still.
    case 2:
      return now + std::chrono::milliseconds(n * 37);
    case 3:
      return now + std::chrono::seconds(n);
    case 4:
      return now - std::chrono::seconds(n);  // Backwards by seconds.
    case 5:
      return now - std::chrono::nanoseconds(n * kDayNs);  // ... by days.
    case 6:
      return now + std::chrono::nanoseconds(n * 365 * kDayNs);  // Years.
    default:
      return MonotonicTime::FromNanoseconds(in.Int<int64_t>());
  }
}

// The read-only parts every input's engine shares: building them per input
// (a route trie of a thousand nodes, the built-ins matched against every
// route) took most of each execution.
struct SharedParts {
  std::shared_ptr<const RouteNormalizer> normalizer;
  // By MakeConfig's policy bits (flags & 3): built-ins, operator policies.
  std::array<std::shared_ptr<const PolicySet>, 4> policies;
};

const SharedParts& Shared() {
  static const SharedParts* parts = [] {
    auto* p = new SharedParts;
    p->normalizer = std::make_shared<const RouteNormalizer>();
    for (uint8_t mix = 0; mix < 4; ++mix) {
      absl::StatusOr<std::shared_ptr<const PolicySet>> compiled =
          Engine::CompilePolicies(MakeConfig(mix, 0), *p->normalizer);
      MXLIMIT_FUZZ_CHECK(compiled.ok());
      p->policies[mix] = *std::move(compiled);
    }
    return p;
  }();
  return *parts;
}

// A decision's content, with owned strings: views into a Limiter's policies
// die with a successful Reload (decision.h), so snapshots cannot hold them.
struct Outcome {
  bool allowed, never, shadow_denied, exempt;
  int64_t retry_ns, remaining;
  LimitScope limited_by;
  std::string policy;
  RouteId route_id;
  PolicyId ip_policy, user_policy;

  explicit Outcome(const Decision& d)
      : allowed(d.allowed),
        never(d.never),
        shadow_denied(d.shadow_denied),
        exempt(d.exempt),
        retry_ns(d.retry_after.count()),
        remaining(d.remaining),
        limited_by(d.limited_by),
        policy(d.policy),
        route_id(d.route_id),
        ip_policy(d.ip_policy),
        user_policy(d.user_policy) {}

  friend bool operator==(const Outcome&, const Outcome&) = default;
};

bool SameDecision(const Decision& a, const Decision& b) {
  return Outcome(a) == Outcome(b);
}

void CheckDecision(const Engine& limiter, const Request& req,
                   const Decision& d) {
  MXLIMIT_FUZZ_CHECK(d.retry_after.count() >= 0);
  MXLIMIT_FUZZ_CHECK(d.remaining >= 0);
  const RouteNormalizer& n = limiter.normalizer();
  MXLIMIT_FUZZ_CHECK(d.route_id < n.size());
  // The key is the normalizer's own string, not merely equal text; exempt
  // requests are normalized too, so reports can name their route.
  MXLIMIT_FUZZ_CHECK(d.route_key.data() == n.keys()[d.route_id].data());
  if (d.exempt) {
    MXLIMIT_FUZZ_CHECK(d.allowed && d.policy.empty() && !d.shadow_denied);
    return;
  }
  if (d.allowed) {
    MXLIMIT_FUZZ_CHECK(d.retry_after.count() == 0 && !d.never);
    MXLIMIT_FUZZ_CHECK(d.limited_by == LimitScope::kNone && d.policy.empty());
    return;
  }
  MXLIMIT_FUZZ_CHECK(d.limited_by != LimitScope::kNone);
  const PolicyId id = d.denied_policy;
  MXLIMIT_FUZZ_CHECK(id < limiter.policies().size());
  const Policy& p = limiter.policies().policy(id);
  MXLIMIT_FUZZ_CHECK(d.policy == p.name && !p.shadow_mode);
  MXLIMIT_FUZZ_CHECK(d.layer == limiter.policies().layer_name(
                                    limiter.policies().layer_of(id)));
  MXLIMIT_FUZZ_CHECK(
      p.scope == (d.limited_by == LimitScope::kIp ? Scope::kIp : Scope::kUser));
  if (d.never) {
    MXLIMIT_FUZZ_CHECK(d.retry_after.count() == 0);
    MXLIMIT_FUZZ_CHECK(p.rate.blocked() || req.cost > p.rate.burst());
  } else {
    MXLIMIT_FUZZ_CHECK(!p.rate.unlimited() && !p.rate.blocked());
    MXLIMIT_FUZZ_CHECK(d.retry_after.count() > 0);
    MXLIMIT_FUZZ_CHECK(d.retry_after.count() <= p.rate.tolerance_ns());
  }
}

// A client told to retry after r is denied at now + r - 1 and allowed at
// now + r (unless time is pinned at the top of the range; see rate.h).
void CheckRetryIsExact(const Engine& limiter, const Request& req,
                       const Decision& d, MonotonicTime now) {
  if (d.allowed || d.never) return;
  const int64_t retry = d.retry_after.count();
  if (now.nanoseconds() > internal::kLatestNow - retry) return;
  MXLIMIT_FUZZ_CHECK(
      !limiter.Peek(req, now + std::chrono::nanoseconds(retry - 1)).allowed);
  MXLIMIT_FUZZ_CHECK(
      limiter.Peek(req, now + std::chrono::nanoseconds(retry)).allowed);
}

void CheckTables(const Engine& limiter) {
  const LimiterStats s = limiter.Stats();
  MXLIMIT_FUZZ_CHECK(s.ip_table.size <= s.ip_table.capacity);
  MXLIMIT_FUZZ_CHECK(s.user_table.size <= s.user_table.capacity);
  MXLIMIT_FUZZ_CHECK(s.ip_table.capacity ==
                     limiter.table_options().ip_capacity);
  MXLIMIT_FUZZ_CHECK(s.user_table.capacity ==
                     limiter.table_options().user_capacity);
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit;
  using namespace mxlimit::fuzz;
  FuzzInput in(data, size);
  const uint8_t flags = in.Byte();
  const uint8_t capacities = in.Byte();
  const LimiterConfig config = MakeConfig(flags, capacities);
  // A fresh engine per input (nothing carries over between inputs), on the
  // process's one normalizer and policy sets compiled once per mix.
  MXLIMIT_FUZZ_CHECK(ValidateTableOptions(config.tables).ok());
  Engine limiter(config.tables, Shared().normalizer, internal::RandomSipKey());
  limiter.Install(Shared().policies[flags & 3], config.exempt, nullptr);

  MonotonicTime now = MonotonicTime::FromNanoseconds(in.Int<int64_t>());
  std::string target;
  for (int ops = 0; ops < 512 && !in.empty(); ++ops) {
    const uint8_t op = in.Byte();
    now = NextTime(in, now);

    Request req;
    const uint8_t m = in.Byte();
    req.method =
        (m & 0x80) ? in.ShortString(12) : kMethods[m % kMethods.size()];
    const uint8_t t = in.Byte();
    const std::string_view id = in.ShortString(64);
    if (t & 0x80) {
      target.assign(id);
    } else {
      std::string_view shape = kTargets[t % kTargets.size()];
      const size_t at = shape.find('%');
      target.assign(shape.substr(0, at));
      if (at != std::string_view::npos) {
        target.append(id);
        target.append(shape.substr(at + 1));
      }
    }
    req.target = target;
    const uint8_t a = in.Byte();
    if (a & 0x80) {
      const std::string_view raw = in.Bytes(16);
      std::copy(raw.begin(), raw.end(), req.client.bytes.begin());
    } else {
      req.client = *ParseIpAddress(kAddresses[a % kAddresses.size()]);
      req.client.bytes[15] ^= a & 0x70;  // Neighbours in the same /64 or /24.
    }
    const uint8_t u = in.Byte();
    req.user_id = (u & 0x80) ? in.ShortString(80) : kUsers[u % kUsers.size()];
    const uint8_t c = in.Byte();
    req.cost = (c & 0x80) ? static_cast<int8_t>(in.Byte()) : 1;
    req.exempt = c == 0x7F;

    // Reloads recompile the policy set (milliseconds under ASan): keep them
    // rare (op 0xF6 and 0xF7) so most of the budget goes to requests.
    switch (op < 0xF6 ? op % 6 : op - 0xF0) {
      default: {
        if (req.cost < 0) req.cost = 0;  // Check takes costs >= 0.
        const Decision peeked = limiter.Peek(req, now);
        const Decision d = limiter.Check(req, now);
        MXLIMIT_FUZZ_CHECK(SameDecision(peeked, d));
        CheckDecision(limiter, req, d);
        CheckRetryIsExact(limiter, req, d, now);
        break;
      }
      case 5:
        limiter.Charge(req, now);  // Negative costs refund.
        break;
      case 6: {
        // A config that does not compile (duplicate policy name) or changes
        // the tables must leave everything as it was.
        LimiterConfig broken = config;
        if (m & 1) {
          broken.policies.push_back(
              broken.policies.empty()
                  ? MakePolicy("x", "/x", Scope::kIp, Rate::Unlimited())
                  : broken.policies.front());
          broken.policies.push_back(broken.policies.back());
        } else {
          broken.tables.ip_capacity += 1;
        }
        if (req.cost < 0) req.cost = 0;
        const Outcome before(limiter.Peek(req, now));
        MXLIMIT_FUZZ_CHECK(!limiter.Reload(broken).ok());
        MXLIMIT_FUZZ_CHECK(before == Outcome(limiter.Peek(req, now)));
        break;
      }
      case 7: {
        if (req.cost < 0) req.cost = 0;
        const Outcome before(limiter.Peek(req, now));
        MXLIMIT_FUZZ_CHECK(limiter.Reload(config).ok());
        MXLIMIT_FUZZ_CHECK(before == Outcome(limiter.Peek(req, now)));
        break;
      }
    }
    CheckTables(limiter);
  }
  return 0;
}
