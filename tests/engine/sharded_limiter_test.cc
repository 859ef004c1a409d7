#include "mxlimit/sharded_limiter.h"

#include <array>
#include <atomic>
#include <bit>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

static_assert(!std::is_copy_constructible_v<ShardedLimiter>);
static_assert(!std::is_move_constructible_v<ShardedLimiter>);

constexpr std::string_view kSync = "/_matrix/client/v3/sync";
constexpr size_t kShards = 8;

std::unique_ptr<ShardedLimiter> MakeSharded(const LimiterConfig& config,
                                            size_t shards = kShards) {
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> limiter =
      ShardedLimiter::Create(config, shards);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

// Per-IP burst `ip_burst`, per-user burst `user_burst`, both per hour so that
// nothing refills while a test runs at one instant.
LimiterConfig TwoScopes(int64_t ip_burst, int64_t user_burst) {
  LimiterConfig config;
  config.builtin_policies = false;
  config.policies.push_back(
      MakePolicy("per-ip", "*", Scope::kIp, ip_burst, TimeUnit::kHour));
  config.policies.push_back(
      MakePolicy("per-user", "*", Scope::kUser, user_burst, TimeUnit::kHour));
  return config;
}

std::string Address(int i) {
  return "10." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) +
         ".1";
}
std::string User(int i) { return "@u" + std::to_string(i) + ":x.org"; }

// The first address / user (by index) whose shard satisfies `want`.
template <typename Want>
std::string AddressWhere(const ShardedLimiter& l, Want want) {
  for (int i = 0;; ++i) {
    if (want(l.IpShard(Ip(Address(i))))) return Address(i);
  }
}
template <typename Want>
std::string UserWhere(const ShardedLimiter& l, Want want,
                      std::string_view skip = {}) {
  for (int i = 0;; ++i) {
    if (want(l.UserShard(User(i))) && User(i) != skip) return User(i);
  }
}

// Runs `body(thread_index)` on `threads` threads at once.
template <typename Body>
void RunThreads(int threads, Body body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (std::thread& th : pool) th.join();
}

TEST(ShardedLimiterTest, AcceptsOnlyPowersOfTwoUpToTheMaximum) {
  LimiterConfig config = TwoScopes(1, 1);
  for (size_t bad : {size_t{3}, size_t{6}, ShardedLimiter::kMaxShards * 2}) {
    absl::StatusOr<std::unique_ptr<ShardedLimiter>> l =
        ShardedLimiter::Create(config, bad);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(l.status().message(),
                HasSubstr("shards: got " + std::to_string(bad)));
  }
  auto one = MakeSharded(config, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->shard_count(), 1u);
  auto fallback = MakeSharded(config, 0);
  ASSERT_NE(fallback, nullptr);
  EXPECT_EQ(fallback->shard_count(),
            ShardedLimiter::DefaultShardCount(config.tables));
  EXPECT_TRUE(std::has_single_bit(fallback->shard_count()));
}

TEST(ShardedLimiterTest, DefaultCountLeavesEveryShardItsBuckets) {
  // The default tables get the most shards; small tables fewer, never
  // below kMinDefaultShardBuckets per shard (nor below one shard).
  EXPECT_EQ(ShardedLimiter::DefaultShardCount(), ShardedLimiter::kMaxShards);
  TableOptions tables;
  tables.ip_capacity = 1000;  // 15 shards' worth: 8
  EXPECT_EQ(ShardedLimiter::DefaultShardCount(tables), 8u);
  tables.user_capacity = 100;  // the smaller table decides: 1
  EXPECT_EQ(ShardedLimiter::DefaultShardCount(tables), 1u);
  tables.ip_capacity = tables.user_capacity = 1;
  EXPECT_EQ(ShardedLimiter::DefaultShardCount(tables), 1u);
  tables.ip_capacity = tables.user_capacity = 64 * 256;
  EXPECT_EQ(ShardedLimiter::DefaultShardCount(tables), 256u);
  tables.ip_capacity = tables.user_capacity = 64 * 256 - 1;
  EXPECT_EQ(ShardedLimiter::DefaultShardCount(tables), 128u);
  LimiterConfig config = TwoScopes(1, 1);
  config.tables.ip_capacity = 1000;
  auto limiter = MakeSharded(config, 0);
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(limiter->shard_count(), 8u);
}

TEST(ShardedLimiterTest, RejectsWhatALoneLimiterRejects) {
  LimiterConfig config = TwoScopes(1, 1);
  config.tables.ipv6_prefix = 129;
  EXPECT_FALSE(ShardedLimiter::Create(config, 4).ok());
  config = TwoScopes(1, 1);
  config.policies.push_back(config.policies[0]);  // duplicate name
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> l =
      ShardedLimiter::Create(config, 4);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("per-ip"));
}

TEST(ShardedLimiterTest, SplitsTableCapacityAmongShards) {
  LimiterConfig config = TwoScopes(1, 1);
  config.tables.ip_capacity = 1000;
  config.tables.user_capacity = 10;
  auto l = MakeSharded(config, 4);
  LimiterStats s = l->Stats();
  EXPECT_EQ(s.ip_table.capacity, 1000u);
  EXPECT_EQ(s.user_table.capacity, 10u);  // 3, 3, 2, 2: the total, exactly
  EXPECT_EQ(l->table_options().ip_capacity, 1000u);
}

// The shards together hold exactly the configured capacity, for the
// default configuration (built-ins on, default tables) and minimal ones, at
// every shard count; a rounded-up share held up to shards - 1 more.
TEST(ShardedLimiterTest, TotalCapacityIsExactlyTheConfiguredOne) {
  for (size_t shards = 1; shards <= ShardedLimiter::kMaxShards; shards *= 2) {
    const LimiterConfig defaults;
    auto d = MakeSharded(defaults, shards);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->Stats().ip_table.capacity, defaults.tables.ip_capacity);
    EXPECT_EQ(d->Stats().user_table.capacity, defaults.tables.user_capacity);
    for (size_t capacity : {shards, shards + 1, 2 * shards - 1, size_t{10},
                            size_t{1000}, size_t{100'000}}) {
      if (capacity < shards) continue;
      LimiterConfig minimal = TwoScopes(1, 1);
      minimal.tables.ip_capacity = capacity;
      minimal.tables.user_capacity = capacity;
      auto l = MakeSharded(minimal, shards);
      ASSERT_NE(l, nullptr);
      EXPECT_EQ(l->Stats().ip_table.capacity, capacity) << shards;
      EXPECT_EQ(l->Stats().user_table.capacity, capacity) << shards;
    }
  }
}

// Not only the reported capacity: a flood of distinct clients never holds
// more buckets than configured, and fills what it is given.
TEST(ShardedLimiterTest, AFloodHoldsAtMostTheConfiguredCapacity) {
  LimiterConfig config = TwoScopes(1000, 1000);
  config.tables.ip_capacity = 10;
  config.tables.user_capacity = 70;
  auto l = MakeSharded(config, 8);
  for (int i = 0; i < 5000; ++i) {
    l->Check(MakeRequest("GET", kSync, Address(i), User(i)), At(0));
    ASSERT_LE(l->Stats().ip_table.size, 10u) << i;
    ASSERT_LE(l->Stats().user_table.size, 70u) << i;
  }
  EXPECT_EQ(l->Stats().ip_table.size, 10u);
  EXPECT_EQ(l->Stats().user_table.size, 70u);
}

TEST(ShardedLimiterTest, RefusesACapacityBelowTheShardCount) {
  LimiterConfig config = TwoScopes(1, 1);
  config.tables.ip_capacity = 10;
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> l =
      ShardedLimiter::Create(config, 64);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.status().message(),
            "tables.ip.capacity: got 10, expected at least 64, the shard "
            "count (each shard holds its share of the table and needs at "
            "least one bucket); raise the capacity or use fewer shards");
  config.tables.ip_capacity = 64;
  config.tables.user_capacity = 63;
  l = ShardedLimiter::Create(config, 64);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("tables.user.capacity: got 63, expected at least 64"));
  config.tables.user_capacity = 64;
  EXPECT_TRUE(ShardedLimiter::Create(config, 64).ok());
}

// A differential test: the same requests, in the same order, through a lone
// Limiter and an 8-shard one, with the built-ins and a few operator policies.
TEST(ShardedLimiterTest, DecidesExactlyAsALoneLimiter) {
  LimiterConfig config;
  config.policies.push_back(MakePolicy("send", "/_matrix/client/v3/rooms/*",
                                       Scope::kUser, 20, TimeUnit::kMinute, 4));
  config.policies.push_back(MakePolicy("login", "/_matrix/client/v3/login",
                                       Scope::kIp, 6, TimeUnit::kMinute, 2));
  Policy shadow = MakePolicy("sync-shadow", std::string(kSync), Scope::kIp, 1,
                             TimeUnit::kHour);
  shadow.shadow_mode = true;
  config.policies.push_back(shadow);
  config.exempt.users.push_back("@bridge:x.org");
  absl::StatusOr<std::unique_ptr<Limiter>> lone = Limiter::Create(config);
  ASSERT_TRUE(lone.ok()) << lone.status();
  auto sharded = MakeSharded(config);

  const std::array<std::string_view, 5> targets = {
      "/_matrix/client/v3/rooms/!a%3Ax.org/send/m.room.message/t1",
      "/_matrix/client/v3/login", kSync, "/_matrix/client/v3/keys/query",
      "/_matrix/media/v3/upload"};
  const std::array<std::string_view, 4> methods = {"PUT", "POST", "GET",
                                                   "POST"};
  std::vector<std::string> users = {"", "@bridge:x.org", "not a user id"};
  for (int u = 0; u < 6; ++u) users.push_back(User(u));
  int denied = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string ip = Address(i * 7 % 5);
    Request req = MakeRequest(methods[i % 4], targets[i * 3 % 5], ip,
                              users[i * 5 % users.size()]);
    req.cost = i % 11 == 0 ? 3 : 1;
    const MonotonicTime now = MonotonicTime::FromMilliseconds(i * 50);
    const Decision p1 = (*lone)->Peek(req, now);
    const Decision p2 = sharded->Peek(req, now);
    const Decision d1 = (*lone)->Check(req, now);
    const Decision d2 = sharded->Check(req, now);
    for (const auto& [a, b] : {std::pair(p1, p2), std::pair(d1, d2)}) {
      ASSERT_EQ(a.allowed, b.allowed) << "request " << i;
      ASSERT_EQ(a.never, b.never);
      ASSERT_EQ(a.retry_after, b.retry_after);
      ASSERT_EQ(a.remaining, b.remaining);
      ASSERT_EQ(a.limited_by, b.limited_by);
      ASSERT_EQ(a.policy, b.policy);
      ASSERT_EQ(a.shadow_denied, b.shadow_denied);
      ASSERT_EQ(a.shadow_policy, b.shadow_policy);
      ASSERT_EQ(a.exempt, b.exempt);
      ASSERT_EQ(a.route_key, b.route_key);
    }
    denied += !d1.allowed;
  }
  EXPECT_GT(denied, 100);  // The sequence does exercise denials.
  const LimiterStats s1 = (*lone)->Stats();
  const LimiterStats s2 = sharded->Stats();
  EXPECT_EQ(s1.exempt, s2.exempt);
  EXPECT_EQ(s1.ip_table.size, s2.ip_table.size);
  EXPECT_EQ(s1.user_table.size, s2.user_table.size);
  ASSERT_EQ(s1.policies.size(), s2.policies.size());
  for (size_t p = 0; p < s1.policies.size(); ++p) {
    EXPECT_EQ(s1.policies[p].name, s2.policies[p].name);
    EXPECT_EQ(s1.policies[p].counters.allowed, s2.policies[p].counters.allowed)
        << s1.policies[p].name;
    EXPECT_EQ(s1.policies[p].counters.denied, s2.policies[p].counters.denied);
    EXPECT_EQ(s1.policies[p].counters.shadow_denied,
              s2.policies[p].counters.shadow_denied);
  }
}

TEST(ShardedLimiterTest, ManyThreadsOnOneClientGetExactlyTheBurst) {
  auto l = MakeSharded(TwoScopes(50, 1'000'000));
  std::atomic<int> allowed{0};
  RunThreads(8, [&](int t) {
    const std::string user = User(t);  // outlives the request's view of it
    const Request req = MakeRequest("GET", kSync, "192.0.2.1", user);
    for (int i = 0; i < 200; ++i) allowed += l->Check(req, At(0)).allowed;
  });
  EXPECT_EQ(allowed.load(), 50);
  // Ten seconds later at 50 per hour nothing has refilled; an hour later the
  // whole burst has.
  RunThreads(4, [&](int) {
    const Request req = MakeRequest("GET", kSync, "192.0.2.1");
    for (int i = 0; i < 100; ++i) allowed += l->Check(req, At(10)).allowed;
  });
  EXPECT_EQ(allowed.load(), 50);
  RunThreads(4, [&](int) {
    const Request req = MakeRequest("GET", kSync, "192.0.2.1");
    for (int i = 0; i < 100; ++i) allowed += l->Check(req, At(3600)).allowed;
  });
  EXPECT_EQ(allowed.load(), 100);
}

// Every thread walks every client, so each client's bucket is hammered from
// all threads at once and the shards serve different clients in parallel.
TEST(ShardedLimiterTest, ManyThreadsOnManyClientsGiveEachExactlyItsRate) {
  constexpr int kClients = 64;
  constexpr int kIpBurst = 5;
  constexpr int kUserBurst = 7;
  LimiterConfig config;
  config.builtin_policies = false;
  // 1 per second: after the burst at t=0, exactly 3 more by t=3 (less than
  // either burst, so the refill is not capped).
  config.policies.push_back(
      MakePolicy("per-ip", "*", Scope::kIp, 1, TimeUnit::kSecond, kIpBurst));
  config.policies.push_back(MakePolicy("per-user", "*", Scope::kUser, 1,
                                       TimeUnit::kSecond, kUserBurst));
  auto l = MakeSharded(config);
  std::array<std::atomic<int>, kClients> by_ip{};
  std::array<std::atomic<int>, kClients> by_user{};
  for (int64_t second : {0, 3}) {
    RunThreads(6, [&](int t) {
      for (int round = 0; round < 12; ++round) {
        for (int c = 0; c < kClients; ++c) {
          const int k = (c + t * 11) % kClients;
          // Anonymous requests use the per-IP budget; the user ones come from
          // an address of their own, so only the per-user budget binds.
          const std::string ip = Address(k);
          const std::string own_ip = Address(1000 + k * 8 + t);
          by_ip[k] +=
              l->Check(MakeRequest("GET", kSync, ip), At(second)).allowed;
          by_user[k] +=
              l->Check(MakeRequest("GET", kSync, own_ip, User(k)), At(second))
                  .allowed;
        }
      }
    });
    const int ip_total = kIpBurst + static_cast<int>(second);
    const int user_total = kUserBurst + static_cast<int>(second);
    for (int c = 0; c < kClients; ++c) {
      ASSERT_EQ(by_ip[c].load(), ip_total) << Address(c) << " at " << second;
      ASSERT_EQ(by_user[c].load(), user_total) << User(c) << " at " << second;
    }
  }
  // Every allowed request counts once for each policy that applied to it;
  // user requests pass the per-IP policy too.
  const LimiterStats s = l->Stats();
  ASSERT_EQ(s.policies.size(), 2u);
  EXPECT_EQ(s.policies[0].counters.allowed,
            uint64_t{kClients} * (kIpBurst + 3 + kUserBurst + 3));
  EXPECT_EQ(s.policies[1].counters.allowed,
            uint64_t{kClients} * (kUserBurst + 3));
}

TEST(ShardedLimiterTest, CrossShardDenialChargesNeitherScope) {
  auto l = MakeSharded(TwoScopes(1, 3));
  const std::string x = AddressWhere(*l, [](size_t s) { return s == 1; });
  const std::string y = AddressWhere(*l, [](size_t s) { return s == 2; });
  const std::string u = UserWhere(*l, [](size_t s) { return s == 5; });
  ASSERT_TRUE(l->Check(MakeRequest("GET", kSync, x, u), At(0)).allowed);
  for (int i = 0; i < 5; ++i) {
    Decision d = l->Check(MakeRequest("GET", kSync, x, u), At(0));
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.limited_by, LimitScope::kIp);
    EXPECT_EQ(d.policy, "per-ip");
  }
  // The user's bucket paid for the one allowed request only.
  EXPECT_TRUE(l->Check(MakeRequest("GET", kSync, y, u), At(0)).allowed);
  EXPECT_TRUE(
      l->Check(MakeRequest("GET", kSync, Address(900), u), At(0)).allowed);
  Decision d = l->Check(MakeRequest("GET", kSync, "192.0.2.200", u), At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.limited_by, LimitScope::kUser);

  // The other way round: the user scope denies, the address keeps its budget.
  auto m = MakeSharded(TwoScopes(3, 1));
  const std::string v = UserWhere(*m, [](size_t s) { return s == 6; });
  const std::string w = UserWhere(*m, [](size_t s) { return s == 0; });
  const std::string z = AddressWhere(*m, [](size_t s) { return s == 3; });
  ASSERT_TRUE(m->Check(MakeRequest("GET", kSync, z, v), At(0)).allowed);
  for (int i = 0; i < 5; ++i) {
    ASSERT_FALSE(m->Check(MakeRequest("GET", kSync, z, v), At(0)).allowed);
  }
  EXPECT_TRUE(m->Check(MakeRequest("GET", kSync, z, w), At(0)).allowed);
  EXPECT_TRUE(m->Check(MakeRequest("GET", kSync, z), At(0)).allowed);
  EXPECT_FALSE(m->Check(MakeRequest("GET", kSync, z), At(0)).allowed);
}

// Requests from one address for two users who live in other shards, and
// address/user pairs whose shards cross (one pair has its address in shard 3
// and user in shard 6, the other the reverse), so the same two shards are
// locked for requests in both directions. The address allows 4, the users 3
// each: exactly 4 pass from it, and the users' buckets together paid exactly
// 4 (checked from fresh addresses afterwards): denials charged nothing.
TEST(ShardedLimiterTest, CrossShardAllOrNothingHoldsUnderContention) {
  auto l = MakeSharded(TwoScopes(4, 3));
  auto in = [](size_t shard) {
    return [shard](size_t s) { return s == shard; };
  };
  const std::string x = AddressWhere(*l, in(0));
  const std::string u = UserWhere(*l, in(3));
  const std::string v = UserWhere(*l, in(6));
  const std::string p = AddressWhere(*l, in(3));
  const std::string q = AddressWhere(*l, in(6));
  // Users other than u and v, in the same two shards.
  const std::string v2 = UserWhere(*l, in(3), u);
  const std::string w2 = UserWhere(*l, in(6), v);
  std::atomic<int> from_x{0};
  std::atomic<int> crossed{0};
  RunThreads(8, [&](int t) {
    const Request a = MakeRequest("GET", kSync, x, t % 2 == 0 ? u : v);
    const Request b = t % 2 == 0 ? MakeRequest("GET", kSync, p, w2)
                                 : MakeRequest("GET", kSync, q, v2);
    for (int i = 0; i < 300; ++i) {
      from_x += l->Check(a, At(0)).allowed;
      crossed += l->Check(b, At(0)).allowed;
    }
  });
  EXPECT_EQ(from_x.load(), 4);
  EXPECT_EQ(crossed.load(), 6);  // 3 for w2 via p, 3 for v2 via q

  auto m = MakeSharded(TwoScopes(4, 3));
  std::atomic<int> allowed{0};
  RunThreads(8, [&](int t) {
    const Request a = MakeRequest("GET", kSync, x, t % 2 == 0 ? u : v);
    for (int i = 0; i < 300; ++i) allowed += m->Check(a, At(0)).allowed;
  });
  ASSERT_EQ(allowed.load(), 4);
  int left = 0;
  for (const std::string& user : {u, v}) {
    for (int i = 0; i < 5; ++i) {
      left += m->Check(MakeRequest("GET", kSync, Address(500 + i), user), At(0))
                  .allowed;
    }
  }
  EXPECT_EQ(left, 2 * 3 - 4);
}

TEST(ShardedLimiterTest, PeekChargeAndExemptionsWorkAcrossShards) {
  LimiterConfig config = TwoScopes(3, 3);
  config.exempt.users.push_back("@bridge:x.org");
  auto l = MakeSharded(config);
  const std::string x = AddressWhere(*l, [](size_t s) { return s == 2; });
  const std::string u = UserWhere(*l, [](size_t s) { return s == 7; });
  Request req = MakeRequest("GET", kSync, x, u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(l->Peek(req, At(0)).allowed);
  EXPECT_EQ(l->Stats().ip_table.size, 0u);
  req.cost = 2;
  l->Charge(req, At(0));  // both scopes: one left in each
  req.cost = 1;
  Decision peek = l->Peek(req, At(0));
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.remaining, 0);
  EXPECT_TRUE(l->Check(req, At(0)).allowed);
  Decision d = l->Peek(req, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, std::chrono::minutes(20));  // T = 3600 s / 3
  req.cost = -1;
  l->Charge(req, At(0));  // refund both
  req.cost = 1;
  EXPECT_TRUE(l->Check(req, At(0)).allowed);

  const std::string y = AddressWhere(*l, [](size_t s) { return s == 4; });
  for (int i = 0; i < 5; ++i) {
    Decision e = l->Check(MakeRequest("GET", kSync, y, "@bridge:x.org"), At(0));
    EXPECT_TRUE(e.exempt);
  }
  EXPECT_EQ(l->Stats().exempt, 5u);
  EXPECT_TRUE(l->Check(MakeRequest("GET", kSync, y), At(0)).allowed);
}

TEST(ShardedLimiterTest, MalformedUserIdsShareOneBudgetAsInALoneLimiter) {
  auto l = MakeSharded(TwoScopes(1'000, 3));
  EXPECT_EQ(l->UserShard("alice"), 0u);
  EXPECT_EQ(l->UserShard(std::string(300, 'a')), 0u);
  int allowed = 0;
  for (int i = 0; i < 20; ++i) {
    std::string junk = "junk user " + std::to_string(i);
    allowed +=
        l->Check(MakeRequest("GET", kSync, Address(i), junk), At(0)).allowed;
  }
  EXPECT_EQ(allowed, 3);
}

TEST(ShardedLimiterTest, ReloadUnderTrafficKeepsUnchangedBucketsInEveryShard) {
  constexpr int kClients = 32;
  auto make = [](int64_t media_rate, int64_t sync_burst) {
    LimiterConfig c;
    c.builtin_policies = false;
    c.policies.push_back(MakePolicy("sync", std::string(kSync), Scope::kIp,
                                    sync_burst, TimeUnit::kHour));
    c.policies.push_back(MakePolicy("media", "/_matrix/media/*", Scope::kIp,
                                    media_rate, TimeUnit::kMinute));
    return c;
  };
  auto l = MakeSharded(make(10, 4));
  std::array<std::atomic<int>, kClients> allowed{};
  std::atomic<bool> done{false};
  std::atomic<int> reloads{0};
  std::vector<std::string_view> names;  // views from before the reloads
  std::thread reloader([&] {
    for (int i = 0; !done.load() || i < 20; ++i) {
      // "sync" is the same in both configs; "media" changes every time.
      ASSERT_TRUE(l->Reload(make(10 + i % 2, 4)).ok());
      LimiterConfig broken = make(5, 4);
      broken.policies.push_back(broken.policies[0]);
      ASSERT_FALSE(l->Reload(broken).ok());
      ++reloads;
    }
  });
  Decision first_denial;
  RunThreads(4, [&](int t) {
    for (int round = 0; round < 40; ++round) {
      for (int c = 0; c < kClients; ++c) {
        Decision d = l->Check(MakeRequest("GET", kSync, Address(c)), At(0));
        allowed[c] += d.allowed;
        if (t == 0 && c == 0 && !d.allowed && first_denial.policy.empty()) {
          first_denial = d;
        }
      }
    }
  });
  done = true;
  reloader.join();
  EXPECT_GE(reloads.load(), 20);
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(allowed[c].load(), 4) << c;
  // The policy name in a decision made before many reloads is still readable.
  EXPECT_EQ(first_denial.policy, "sync");

  // A changed rate drops the buckets in every shard: each client starts over.
  ASSERT_TRUE(l->Reload(make(10, 6)).ok());
  for (int c = 0; c < kClients; ++c) {
    int n = 0;
    for (int i = 0; i < 10; ++i) {
      n += l->Check(MakeRequest("GET", kSync, Address(c)), At(0)).allowed;
    }
    EXPECT_EQ(n, 6) << c;
  }
  LimiterConfig resized = make(10, 6);
  resized.tables.user_capacity = 7;
  EXPECT_EQ(l->Reload(resized).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace mxlimit
