#include "mxlimit/limiter.h"

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

static_assert(!std::is_copy_constructible_v<Limiter>);
static_assert(!std::is_copy_assignable_v<Limiter>);
static_assert(!std::is_move_constructible_v<Limiter>);
static_assert(!std::is_move_assignable_v<Limiter>);

constexpr std::string_view kSend =
    "/_matrix/client/v3/rooms/!room1%3Aexample.org/send/m.room.message/txn1";

std::unique_ptr<Limiter> MakeLimiter(LimiterConfig config) {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

LimiterConfig OperatorOnly() {
  LimiterConfig config;
  config.builtin_policies = false;
  return config;
}

int CountAllowed(Limiter& limiter, const Request& request, int attempts,
                 MonotonicTime now) {
  int allowed = 0;
  for (int i = 0; i < attempts; ++i)
    allowed += limiter.Check(request, now).allowed;
  return allowed;
}

TEST(LimiterTest, DeniesAfterBurstWithExactRetryAndPolicyName) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("send", "/_matrix/client/v3/rooms/*",
                                       Scope::kUser, 6, TimeUnit::kMinute, 2));
  auto limiter = MakeLimiter(config);
  Request req = MakeRequest("PUT", kSend, "203.0.113.9", "@alice:example.org");
  EXPECT_TRUE(limiter->Check(req, At(0)).allowed);
  EXPECT_TRUE(limiter->Check(req, At(0)).allowed);
  Decision d = limiter->Check(req, At(1));
  EXPECT_FALSE(d.allowed);
  EXPECT_FALSE(d.never);
  EXPECT_EQ(d.retry_after, std::chrono::seconds(9));  // T = 10 s
  EXPECT_EQ(d.limited_by, LimitScope::kUser);
  EXPECT_EQ(d.policy, "send");
  EXPECT_EQ(d.route_key,
            "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}");
  EXPECT_TRUE(limiter->Check(req, At(10)).allowed);
}

TEST(LimiterTest, FreshRoomAndTxnIdsDoNotMintBuckets) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("send", "/_matrix/client/v3/rooms/*",
                                       Scope::kUser, 5, TimeUnit::kMinute));
  auto limiter = MakeLimiter(config);
  int allowed = 0;
  std::string target;
  for (int i = 0; i < 100; ++i) {
    target = "/_matrix/client/v3/rooms/!r" + std::to_string(i) +
             "%3Ax.org/send/m.room.message/t" + std::to_string(i);
    allowed += limiter
                   ->Check(MakeRequest("PUT", target, "198.51.100.1",
                                       "@mallory:x.org"),
                           At(0))
                   .allowed;
  }
  EXPECT_EQ(allowed, 5);
  EXPECT_EQ(limiter->Stats().user_table.size, 1u);
}

TEST(LimiterTest, R0AndV3ShareOneCounter) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("sync", "/_matrix/client/v3/sync",
                                       Scope::kUser, 4, TimeUnit::kMinute));
  auto limiter = MakeLimiter(config);
  int allowed = 0;
  for (const char* prefix : {"r0", "v3", "api/v1", "unstable"}) {
    for (int i = 0; i < 2; ++i) {
      std::string target = std::string("/_matrix/client/") + prefix + "/sync";
      allowed +=
          limiter
              ->Check(MakeRequest("GET", target, "198.51.100.1", "@bob:x.org"),
                      At(0))
              .allowed;
    }
  }
  EXPECT_EQ(allowed, 4);
}

TEST(LimiterTest, Ipv6SlashSixtyFourSharesABucketAndItsNeighbourDoesNot) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                       Scope::kIp, 3, TimeUnit::kMinute));
  auto limiter = MakeLimiter(config);
  const char* same_64[] = {"2001:db8:1:2::1", "2001:db8:1:2::2",
                           "2001:db8:1:2:ffff:ffff:ffff:ffff",
                           "2001:db8:1:2:1234::9"};
  int allowed = 0;
  for (const char* ip : same_64) {
    allowed +=
        limiter
            ->Check(MakeRequest("POST", "/_matrix/client/v3/login", ip), At(0))
            .allowed;
  }
  EXPECT_EQ(allowed, 3);
  EXPECT_TRUE(limiter
                  ->Check(MakeRequest("POST", "/_matrix/client/v3/login",
                                      "2001:db8:1:3::1"),
                          At(0))
                  .allowed);
  // IPv4 stays per address by default.
  EXPECT_EQ(
      CountAllowed(*limiter,
                   MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1"),
                   5, At(0)),
      3);
  EXPECT_EQ(
      CountAllowed(*limiter,
                   MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.2"),
                   5, At(0)),
      3);
}

// The per-IP key keeps exactly the configured prefix: for every prefix length
// an address that differs from the first only after the prefix shares its
// bucket, one that differs in the prefix's last bit does not.
TEST(LimiterTest, ConfiguredPrefixesDecideWhichAddressesShareABucket) {
  for (int v4 : {0, 1, 8, 17, 24, 31, 32}) {
    for (int v6 : {0, 7, 48, 64, 65, 127, 128}) {
      LimiterConfig config = OperatorOnly();
      config.tables.ipv4_prefix = v4;
      config.tables.ipv6_prefix = v6;
      config.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                           Scope::kIp, 1, TimeUnit::kHour));
      auto limiter = MakeLimiter(config);
      // Flips bit `bit` (0 = most significant) of the address's own bits.
      auto flip = [](IpAddress a, int bit, bool is_v4) {
        const int at = (is_v4 ? 96 : 0) + bit;
        a.bytes[at / 8] ^= static_cast<uint8_t>(0x80 >> (at % 8));
        return a;
      };
      auto login = [&](const IpAddress& ip) {
        Request r = MakeRequest("POST", "/_matrix/client/v3/login", "::");
        r.client = ip;
        return limiter->Check(r, At(0)).allowed;
      };
      const IpAddress base4 = Ip("203.0.113.77");
      const IpAddress base6 = Ip("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff");
      for (auto [base, prefix, width, is_v4] :
           {std::tuple{base4, v4, 32, true},
            std::tuple{base6, v6, 128, false}}) {
        SCOPED_TRACE(::testing::Message()
                     << (is_v4 ? "v4 /" : "v6 /") << prefix);
        ASSERT_TRUE(login(base));  // a new bucket
        if (prefix < width) {
          EXPECT_FALSE(login(flip(base, width - 1, is_v4)))
              << "a bit after the prefix must not matter";
        }
        if (prefix > 0) {
          EXPECT_TRUE(login(flip(base, prefix - 1, is_v4)))
              << "the prefix's last bit must matter";
        }
      }
    }
  }
}

TEST(LimiterTest, ChargesBothScopesAllOrNothing) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(
      MakePolicy("per-ip", "*", Scope::kIp, 3, TimeUnit::kMinute));
  config.policies.push_back(
      MakePolicy("per-user", "*", Scope::kUser, 1, TimeUnit::kMinute));
  auto limiter = MakeLimiter(config);
  Request alice = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.7",
                              "@alice:x.org");
  ASSERT_TRUE(limiter->Check(alice, At(0)).allowed);
  // The user bucket is empty now; these denials must not drain the IP one.
  for (int i = 0; i < 10; ++i) {
    Decision d = limiter->Check(alice, At(0));
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.limited_by, LimitScope::kUser);
  }
  Request bob =
      MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.7", "@bob:x.org");
  EXPECT_TRUE(limiter->Check(bob, At(0)).allowed);
  Request anon = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.7");
  EXPECT_TRUE(limiter->Check(anon, At(0)).allowed);
  Decision d = limiter->Check(anon, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.limited_by, LimitScope::kIp);
}

TEST(LimiterTest, PeekNeverChargesAndChargeDrainsOrRefunds) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                       Scope::kIp, 3, TimeUnit::kMinute));
  auto limiter = MakeLimiter(config);
  Request req = MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.9");
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter->Peek(req, At(0)).allowed);
  EXPECT_EQ(limiter->Stats().ip_table.size, 0u);
  req.cost = 3;  // A failed login recorded after the fact, three times over.
  limiter->Charge(req, At(0));
  req.cost = 1;
  Decision peek = limiter->Peek(req, At(0));
  EXPECT_FALSE(peek.allowed);
  EXPECT_EQ(peek.retry_after, std::chrono::seconds(20));
  req.cost = -1;
  limiter->Charge(req, At(0));
  req.cost = 1;
  EXPECT_TRUE(limiter->Check(req, At(0)).allowed);
  EXPECT_FALSE(limiter->Check(req, At(0)).allowed);
}

TEST(LimiterTest, CostAboveBurstIsNever) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("upload", "/_matrix/media/*", Scope::kIp,
                                       10, TimeUnit::kMinute, 4));
  auto limiter = MakeLimiter(config);
  Request req = MakeRequest("POST", "/_matrix/media/v3/upload", "192.0.2.9");
  req.cost = 5;
  Decision d = limiter->Check(req, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.never);
  EXPECT_EQ(d.retry_after.count(), 0);
}

TEST(LimiterTest, SharedWildcardIsOneCounterAcrossRoutes) {
  LimiterConfig config = OperatorOnly();
  Policy shared = MakePolicy("rooms-shared", "/_matrix/client/v3/rooms/*",
                             Scope::kUser, 10, TimeUnit::kHour);
  shared.share_threshold = true;
  config.policies.push_back(shared);
  auto limiter = MakeLimiter(config);
  const char* targets[] = {
      "/_matrix/client/v3/rooms/!a%3Ax/send/m.room.message/1",
      "/_matrix/client/v3/rooms/!a%3Ax/state/m.room.topic/",
      "/_matrix/client/v3/rooms/!b%3Ax/messages?dir=b",
      "/_matrix/client/v3/rooms/!b%3Ax/typing/%40u%3Ax",
      "/_matrix/client/v3/rooms/!c%3Ax/invite"};
  int allowed = 0;
  for (int round = 0; round < 4; ++round) {
    for (const char* t : targets) {
      allowed +=
          limiter->Check(MakeRequest("POST", t, "192.0.2.1", "@u:x"), At(0))
              .allowed;
    }
  }
  EXPECT_EQ(allowed, 10);
  EXPECT_EQ(limiter->Stats().user_table.size, 1u);
}

TEST(LimiterTest, IsolatedWildcardGivesEachRouteItsOwnCounter) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("rooms", "/_matrix/client/v3/rooms/*",
                                       Scope::kUser, 20, TimeUnit::kHour));
  auto limiter = MakeLimiter(config);
  const char* targets[] = {
      "/_matrix/client/v3/rooms/!a%3Ax/send/m.room.message/1",
      "/_matrix/client/v3/rooms/!a%3Ax/state/m.room.topic/",
      "/_matrix/client/v3/rooms/!b%3Ax/messages"};
  for (const char* t : targets) {
    EXPECT_EQ(CountAllowed(*limiter, MakeRequest("PUT", t, "192.0.2.1", "@u:x"),
                           30, At(0)),
              20)
        << t;
  }
  // A different room on the same route shares that route's counter.
  EXPECT_FALSE(limiter
                   ->Check(MakeRequest("PUT",
                                       "/_matrix/client/v3/rooms/!zzz%3Ax/send/"
                                       "m.room.message/2",
                                       "192.0.2.1", "@u:x"),
                           At(0))
                   .allowed);
}

TEST(LimiterTest, ShadowPolicyCountsButNeverDenies) {
  LimiterConfig config = OperatorOnly();
  Policy shadow = MakePolicy("sync-shadow", "/_matrix/client/v3/sync",
                             Scope::kIp, 2, TimeUnit::kMinute);
  shadow.shadow_mode = true;
  config.policies.push_back(shadow);
  auto limiter = MakeLimiter(config);
  Request req = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.3");
  int shadowed = 0;
  for (int i = 0; i < 5; ++i) {
    Decision d = limiter->Check(req, At(0));
    EXPECT_TRUE(d.allowed);
    if (d.shadow_denied) {
      ++shadowed;
      EXPECT_EQ(d.shadow_policy, "sync-shadow");
    }
  }
  EXPECT_EQ(shadowed, 3);
  LimiterStats stats = limiter->Stats();
  ASSERT_EQ(stats.policies.size(), 1u);
  EXPECT_EQ(stats.policies[0].counters.allowed, 2u);
  EXPECT_EQ(stats.policies[0].counters.shadow_denied, 3u);
}

TEST(LimiterTest, ShadowPoliciesInBothScopesAreEachCountedAsShadowDenied) {
  LimiterConfig config = OperatorOnly();
  Policy ip = MakePolicy("ip-shadow", "*", Scope::kIp, 1, TimeUnit::kHour);
  Policy user =
      MakePolicy("user-shadow", "*", Scope::kUser, 1, TimeUnit::kHour);
  ip.shadow_mode = true;
  user.shadow_mode = true;
  config.policies = {ip, user};
  auto limiter = MakeLimiter(config);
  Request req = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.3",
                            "@carol:x.org");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter->Check(req, At(0)).allowed);
  LimiterStats stats = limiter->Stats();
  ASSERT_EQ(stats.policies.size(), 2u);
  for (const PolicyStats& p : stats.policies) {
    EXPECT_EQ(p.counters.allowed, 1u) << p.name;
    EXPECT_EQ(p.counters.shadow_denied, 2u) << p.name;
  }
}

TEST(LimiterTest, ExemptRequestsAreNeitherCheckedNorCharged) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(
      MakePolicy("all-ip", "*", Scope::kIp, 1, TimeUnit::kHour));
  config.policies.push_back(
      MakePolicy("all-user", "*", Scope::kUser, 1, TimeUnit::kHour));
  config.exempt.ips.push_back(*ParseCidr("10.0.0.0/8"));
  config.exempt.users.push_back("@bridge:x.org");
  auto limiter = MakeLimiter(config);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(
        limiter->Check(MakeRequest("GET", "/x", "10.1.2.3"), At(0)).exempt);
    EXPECT_TRUE(
        limiter
            ->Check(MakeRequest("GET", "/x", "192.0.2.1", "@bridge:x.org"),
                    At(0))
            .allowed);
    Request flagged = MakeRequest("GET", "/x", "192.0.2.2", "@as:x.org");
    flagged.exempt = true;
    EXPECT_TRUE(limiter->Check(flagged, At(0)).allowed);
  }
  LimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.ip_table.size, 0u);
  EXPECT_EQ(stats.user_table.size, 0u);
  EXPECT_EQ(stats.exempt, 15u);
  // Not exempt: limited as usual.
  EXPECT_TRUE(
      limiter->Check(MakeRequest("GET", "/x", "192.0.2.1"), At(0)).allowed);
  EXPECT_FALSE(
      limiter->Check(MakeRequest("GET", "/x", "192.0.2.1"), At(0)).allowed);
}

TEST(LimiterTest, ReloadKeepsUnchangedBucketsAndDropsChangedOnes) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                       Scope::kIp, 2, TimeUnit::kHour));
  config.policies.push_back(MakePolicy("sync", "/_matrix/client/v3/sync",
                                       Scope::kIp, 2, TimeUnit::kHour));
  auto limiter = MakeLimiter(config);
  Request login = MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1");
  Request sync = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.1");
  ASSERT_EQ(CountAllowed(*limiter, login, 3, At(0)), 2);
  ASSERT_EQ(CountAllowed(*limiter, sync, 3, At(0)), 2);

  // New order, a new policy in front, login unchanged, sync's rate changed.
  LimiterConfig next = OperatorOnly();
  next.policies.push_back(
      MakePolicy("media", "/_matrix/media/*", Scope::kIp, 5, TimeUnit::kHour));
  next.policies.push_back(MakePolicy("sync", "/_matrix/client/v3/sync",
                                     Scope::kIp, 3, TimeUnit::kHour));
  next.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                     Scope::kIp, 2, TimeUnit::kHour));
  ASSERT_TRUE(limiter->Reload(next).ok());
  EXPECT_FALSE(limiter->Check(login, At(0)).allowed);    // state kept
  EXPECT_EQ(CountAllowed(*limiter, sync, 5, At(0)), 3);  // fresh buckets

  // A broken config is rejected whole; the old policies stay in force.
  LimiterConfig broken = next;
  broken.policies.push_back(next.policies[0]);  // duplicate name
  EXPECT_FALSE(limiter->Reload(broken).ok());
  LimiterConfig resized = next;
  resized.tables.ip_capacity = 5;
  absl::Status s = limiter->Reload(resized);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(limiter->Check(login, At(0)).allowed);
  EXPECT_FALSE(limiter->Check(sync, At(0)).allowed);
  EXPECT_EQ(limiter->policies().size(), 3u);
}

TEST(LimiterTest, BuiltinsGiveEveryRequestABucket) {
  auto limiter = MakeLimiter(LimiterConfig{});
  Decision d = limiter->Check(
      MakeRequest("GET", "/totally/unknown/path", "192.0.2.1", "@u:x.org"),
      At(0));
  EXPECT_TRUE(d.allowed);
  EXPECT_NE(d.ip_policy, kNoPolicy);
  EXPECT_NE(d.user_policy, kNoPolicy);
  EXPECT_EQ(d.route_key, kFallbackRouteKey);
}

// A default Request: method and target are views with no data (nullptr),
// which the C ABI also passes for empty strings. The canonical path walk must
// not hand that pointer to memchr (UBSan under the asan preset catches it).
TEST(LimiterTest, EmptyTargetWithoutDataIsTheFallback) {
  auto limiter = MakeLimiter(LimiterConfig{});
  Request req;
  ASSERT_EQ(req.target.data(), nullptr);
  req.client = *ParseIpAddress("192.0.2.1");
  Decision d = limiter->Check(req, At(0));
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.route_key, kFallbackRouteKey);
}

// A table smaller than a request's bucket count: the denied request must not
// admit its other (fresh, uncharged) buckets, or the admission would evict
// the bucket that denied it and the client could retry before its time.
TEST(LimiterTest, DenialKeepsItsBucketInATinyTable) {
  LimiterConfig config = OperatorOnly();
  config.tables.ip_capacity = 1;
  Policy client = MakePolicy("client-ip", "/_matrix/client/v3/*", Scope::kIp, 1,
                             TimeUnit::kMinute, 1);
  client.share_threshold = true;  // One counter over all its routes.
  config.policies.push_back(client);
  Policy login = MakePolicy("login-ip", "/_matrix/client/v3/login", Scope::kIp,
                            100, TimeUnit::kMinute, 100);
  login.layer = "aggregate";
  config.policies.push_back(login);
  auto limiter = MakeLimiter(config);
  const Request sync =
      MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.1");
  const Request post =
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1");
  ASSERT_TRUE(limiter->Check(sync, At(0)).allowed);
  const Decision d = limiter->Check(post, At(0));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "client-ip");
  EXPECT_EQ(d.retry_after, std::chrono::seconds(60));
  EXPECT_FALSE(limiter->Peek(post, At(59)).allowed);
  EXPECT_TRUE(limiter->Peek(post, At(60)).allowed);
  EXPECT_EQ(limiter->Stats().ip_table.evictions, 0u);
}

TEST(LimiterTest, RejectsBadTableOptions) {
  LimiterConfig config;
  config.tables.ip_capacity = 0;
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  ASSERT_FALSE(limiter.ok());
  EXPECT_THAT(limiter.status().message(), HasSubstr("tables.ip.capacity"));
  config.tables.ip_capacity = 10;
  config.tables.ipv6_prefix = 129;
  EXPECT_FALSE(Limiter::Create(config).ok());
}

TEST(LimiterTest, TablesStayWithinCapacityUnderAnAddressFlood) {
  LimiterConfig config = OperatorOnly();
  config.tables.ip_capacity = 1000;
  config.policies.push_back(
      MakePolicy("all", "*", Scope::kIp, 10, TimeUnit::kMinute));
  auto limiter = MakeLimiter(config);
  for (uint32_t i = 0; i < 100'000; ++i) {
    Request r = MakeRequest("GET", "/_matrix/client/v3/sync", "0.0.0.0");
    r.client.bytes[12] = static_cast<uint8_t>(i >> 24);
    r.client.bytes[13] = static_cast<uint8_t>(i >> 16);
    r.client.bytes[14] = static_cast<uint8_t>(i >> 8);
    r.client.bytes[15] = static_cast<uint8_t>(i);
    ASSERT_TRUE(limiter->Check(r, At(i)).allowed);
  }
  LimiterStats stats = limiter->Stats();
  EXPECT_EQ(stats.ip_table.size, 1000u);
  EXPECT_EQ(stats.ip_table.evictions, 99'000u);
}

TEST(LimiterTest, PrometheusTextHasTablesAndPolicies) {
  LimiterConfig config = OperatorOnly();
  config.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                       Scope::kIp, 1, TimeUnit::kHour));
  auto limiter = MakeLimiter(config);
  Request login = MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1");
  limiter->Check(login, At(0));
  limiter->Check(login, At(0));
  std::string text = FormatPrometheus(limiter->Stats());
  EXPECT_THAT(text, HasSubstr("mxlimit_table_size{table=\"ip\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("mxlimit_table_capacity{table=\"user\"} 100000\n"));
  EXPECT_THAT(text, HasSubstr("mxlimit_policy_requests_total{policy=\"login\","
                              "scope=\"ip\",result=\"denied\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE mxlimit_policy_requests_total counter"));
}

}  // namespace
}  // namespace mxlimit
