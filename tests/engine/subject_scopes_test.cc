// The origin, room and target scopes with the built-in policies on: a
// mass-join wave on one room, forged federation origins, per-account logins,
// room IDs in every spelling, hostile room values followed by real traffic,
// and the same budgets across a ShardedLimiter's shards.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/decision.h"
#include "mxlimit/limiter.h"
#include "mxlimit/options.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

constexpr char kJoinPath[] = "/_matrix/client/v3/rooms/!wave:example.org/join";

std::unique_ptr<Limiter> DefaultLimiter(TableOptions tables = {}) {
  LimiterConfig config;  // built-in policies on
  config.tables = tables;
  absl::StatusOr<std::unique_ptr<Limiter>> l = Limiter::Create(config);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *std::move(l) : nullptr;
}

std::string UserN(int i) {
  return "@joiner" + std::to_string(i) + ":spam.example";
}

std::string IpN(int i) {
  return "198.51." + std::to_string(100 + i / 200) + "." +
         std::to_string(i % 200 + 1);
}

// Many users, one room, one join each: every user is far under `join-room`,
// and `joins-per-room` (1/second, burst 10) stops the wave after ten.
template <typename L>
std::vector<Decision> JoinWave(L& limiter, int users) {
  std::vector<Decision> out;
  for (int i = 0; i < users; ++i) {
    const std::string user = UserN(i);
    const std::string ip = IpN(i);
    out.push_back(
        limiter.Check(MakeRequest("POST", kJoinPath, ip, user), At(100)));
  }
  return out;
}

TEST(SubjectScopesTest,
     AMassJoinWaveIsDeniedPerRoomWhileEachUserIsUnderTheirs) {
  std::unique_ptr<Limiter> l = DefaultLimiter();
  const std::vector<Decision> wave = JoinWave(*l, 40);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(wave[i].allowed) << i;
  for (int i = 10; i < 40; ++i) {
    ASSERT_FALSE(wave[i].allowed) << i;
    EXPECT_EQ(wave[i].policy, "joins-per-room");
    EXPECT_EQ(wave[i].limited_by, LimitScope::kRoom);
    EXPECT_EQ(wave[i].retry_after, std::chrono::seconds(1));
  }
  // Another room is untouched, and so is the same user elsewhere.
  EXPECT_TRUE(l->Check(MakeRequest("POST",
                                   "/_matrix/client/v3/rooms/!calm:example.org/"
                                   "join",
                                   IpN(39), UserN(39)),
                       At(100))
                  .allowed);
  // One second later exactly one more join gets in.
  EXPECT_TRUE(
      l->Check(MakeRequest("POST", kJoinPath, IpN(50), UserN(50)), At(101))
          .allowed);
  EXPECT_FALSE(
      l->Check(MakeRequest("POST", kJoinPath, IpN(51), UserN(51)), At(101))
          .allowed);
}

TEST(SubjectScopesTest, EverySpellingOfARoomIsOneBucket) {
  std::unique_ptr<Limiter> l = DefaultLimiter();
  // Encoded, r0, the legacy api/v1 alias and join-by-ID: the same room and
  // the same shared joins-per-room bucket.
  const char* const kSpellings[] = {
      "/_matrix/client/v3/rooms/%21wave%3Aexample.org/join",
      "/_matrix/client/r0/rooms/!wave:example.org/join",
      "/_matrix/client/api/v1/rooms/!wave%3aexample.org/join",
      "/_matrix/client/v3/join/!wave:example.org",
      "/_matrix/client/v3/join/%21wave:example.org?server_name=x",
  };
  int allowed = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string user = UserN(i);
    const Decision d =
        l->Check(MakeRequest("POST", kSpellings[i % 5], IpN(i), user), At(100));
    allowed += d.allowed;
    if (!d.allowed) {
      EXPECT_EQ(d.policy, "joins-per-room") << kSpellings[i % 5];
    }
  }
  EXPECT_EQ(allowed, 10);
  std::vector<std::string> buckets = l->DescribeBuckets(
      MakeRequest("POST", kSpellings[0], "192.0.2.1", "@a:example.org"));
  EXPECT_THAT(buckets, ::testing::Contains(
                           HasSubstr("room !wave:example.org | layer route | "
                                     "policy joins-per-room")));
}

TEST(SubjectScopesTest, AForgedOriginSpendsOnlyTheForgersBudget) {
  std::unique_ptr<Limiter> l = DefaultLimiter();
  auto fed = [](std::string_view ip) {
    Request r = MakeRequest("PUT", "/_matrix/federation/v1/send/txn1", ip);
    r.origin = "matrix.org";
    return r;
  };
  // An embedder that releases each request's leases once it is done, so
  // that federation-in-flight never binds here: the rate's budget does.
  auto check = [&](const Request& r) {
    const Decision d = l->Check(r, At(100));
    l->Release(d.leases, At(100));
    return d;
  };
  // A forger on another network claims matrix.org until denied.
  int forged_allowed = 0;
  Decision last;
  for (int i = 0; i < 200; ++i) {
    last = check(fed("198.51.100.66"));
    forged_allowed += last.allowed;
  }
  EXPECT_EQ(forged_allowed, 50);  // federation-per-origin's burst
  EXPECT_EQ(last.policy, "federation-per-origin");
  EXPECT_EQ(last.limited_by, LimitScope::kOrigin);
  // The real matrix.org, from its own network, has its whole budget.
  int real_allowed = 0;
  for (int i = 0; i < 50; ++i) {
    real_allowed += check(fed("203.0.113.5")).allowed;
  }
  EXPECT_EQ(real_allowed, 50);
  // A neighbour in the forger's /24 shares the forger's (drained) bucket.
  EXPECT_FALSE(check(fed("198.51.100.67")).allowed);

  // Verified by the embedder, the name alone keys the bucket: any network.
  Request verified = fed("192.0.2.9");
  verified.origin = "other.example";
  verified.origin_verified = true;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(check(verified).allowed);
  verified.client = Ip("2001:db8::1");
  EXPECT_FALSE(check(verified).allowed);
}

TEST(SubjectScopesTest,
     ClientRequestsAndMalformedOriginsDoNotMintOriginBuckets) {
  std::unique_ptr<Limiter> l = DefaultLimiter();
  // No origin: federation-per-origin does not apply.
  Request r =
      MakeRequest("GET", "/_matrix/federation/v1/version", "198.51.100.66");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(l->Check(r, At(100)).allowed);
  EXPECT_EQ(l->Stats().origin_table.size, 0u);
  // Garbage origins share one overflow bucket: they cannot escape by
  // varying the name, nor grow the table.
  std::vector<std::string> junk;
  for (int i = 0; i < 100; ++i) junk.push_back("bad name " + std::to_string(i));
  int allowed = 0;
  for (const std::string& name : junk) {
    r.origin = name;
    const Decision d = l->Check(r, At(200));
    l->Release(d.leases, At(200));  // done: federation-in-flight stays clear
    allowed += d.allowed;
  }
  EXPECT_EQ(allowed, 50);
  EXPECT_EQ(l->Stats().origin_table.size, 1u);
}

TEST(SubjectScopesTest,
     LoginPerAccountAppliesOnlyWhenTheEmbedderNamesTheAccount) {
  std::unique_ptr<Limiter> l = DefaultLimiter();
  // From five networks (so the per-IP and per-network login limits stay
  // clear), the same target account.
  int allowed = 0;
  Decision last;
  for (int i = 0; i < 8; ++i) {
    Request r = MakeRequest("POST", "/_matrix/client/v3/login",
                            "203.0." + std::to_string(i) + ".7");
    r.target_user = "@victim:example.org";
    last = l->Check(r, At(100));
    allowed += last.allowed;
  }
  EXPECT_EQ(allowed, 5);
  EXPECT_EQ(last.policy, "login-per-account");
  EXPECT_EQ(last.limited_by, LimitScope::kTarget);
  // Without a target (mxlimitd, replay) the policy does not apply.
  for (int i = 0; i < 5; ++i) {
    Request r = MakeRequest("POST", "/_matrix/client/v3/login",
                            "203.1." + std::to_string(i) + ".7");
    EXPECT_TRUE(l->Check(r, At(100)).allowed);
  }
}

TEST(SubjectScopesTest,
     HostileRoomValuesStayInTheTableThenRealRoomsAreLimited) {
  TableOptions tables;
  tables.room_capacity = 1000;
  std::unique_ptr<Limiter> l = DefaultLimiter(tables);
  // 20,000 distinct room IDs, a 64 KiB one among them, and raw junk.
  const std::string huge(64 * 1024, 'x');
  for (int i = 0; i < 20'000; ++i) {
    std::string room = i == 7       ? "!" + huge + ":example.org"
                       : i % 3 == 0 ? "%00junk" + std::to_string(i)
                                    : "!r" + std::to_string(i) + ":example.org";
    const std::string path = "/_matrix/client/v3/rooms/" + room + "/join";
    const std::string user = UserN(i);
    l->Check(MakeRequest("POST", path, IpN(i % 1000), user), At(100));
  }
  LimiterStats stats = l->Stats();
  EXPECT_LE(stats.room_table.size, 1000u);
  EXPECT_EQ(stats.room_table.capacity, 1000u);
  // Then real traffic: the wave on one room is still cut at ten.
  const std::vector<Decision> wave = JoinWave(*l, 20);
  int allowed = 0;
  for (const Decision& d : wave) allowed += d.allowed;
  EXPECT_EQ(allowed, 10);
}

TEST(SubjectScopesTest, ShardsShareOneRoomAndOriginBudget) {
  LimiterConfig config;
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> sharded =
      ShardedLimiter::Create(config, 8);
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  std::unique_ptr<Limiter> single = DefaultLimiter();
  const std::vector<Decision> a = JoinWave(**sharded, 40);
  const std::vector<Decision> b = JoinWave(*single, 40);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].allowed, b[i].allowed) << i;
    EXPECT_EQ(a[i].policy, b[i].policy) << i;
  }
  LimiterStats stats = (*sharded)->Stats();
  EXPECT_EQ(stats.room_table.size, 1u);  // counted once, not per shard
}

// Threads joining one room through different shards meet one bucket: the
// shared table's lock keeps the count exact (and tsan watches it).
TEST(SubjectScopesTest, ConcurrentJoinsAcrossShardsShareOneRoomBudget) {
  LimiterConfig config;
  absl::StatusOr<std::unique_ptr<ShardedLimiter>> sharded =
      ShardedLimiter::Create(config, 8);
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int n = t * 50 + i;
        const std::string user = UserN(n);
        const std::string ip = IpN(n);
        allowed +=
            (*sharded)
                ->Check(MakeRequest("POST", kJoinPath, ip, user), At(100))
                .allowed;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(allowed.load(), 10);
}

}  // namespace
}  // namespace mxlimit
