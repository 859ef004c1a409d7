// Snapshot and Restore (mxlimit/snapshot.h) with the built-in policies on:
// an attacker drained before a restart is still denied after it; buckets
// full by then, of changed policies, or of another process's digest keys
// are dropped; a broken snapshot changes nothing.

#include "mxlimit/snapshot.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::AllowedAtOnce;
using ::mxlimit::testing::At;
using ::mxlimit::testing::MakeRequest;
using std::chrono::hours;
using std::chrono::seconds;

const WallTime kWall = WallTime(std::chrono::hours(24 * 20000));

constexpr std::string_view kSnapLogin = "/_matrix/client/v3/login";
constexpr std::string_view kSnapSend =
    "/_matrix/client/v3/rooms/!r%3Aexample.org/send/m.room.message/t1";

// A limiter (built-ins on) with 192.0.2.7's logins and alice's messages
// drained at At(100); its snapshot.
template <typename L>
std::string DrainedSnapshot(L& limiter) {
  const Request login = MakeRequest("POST", kSnapLogin, "192.0.2.7");
  const Request send =
      MakeRequest("PUT", kSnapSend, "203.0.113.1", "@alice:example.org");
  EXPECT_EQ(AllowedAtOnce(limiter, login, At(100)), 5);
  EXPECT_EQ(AllowedAtOnce(limiter, send, At(100)), 10);
  std::ostringstream out;
  EXPECT_TRUE(limiter.Snapshot(out, At(100), kWall).ok());
  return out.str();
}

TEST(SnapshotTest, ADrainedAttackerIsStillDeniedAfterARestart) {
  auto before = *Limiter::Create(LimiterConfig{});
  const std::string snapshot = DrainedSnapshot(*before);
  // Another process: its monotonic clock starts elsewhere; a second later.
  auto after = *Limiter::Create(LimiterConfig{});
  std::istringstream in(snapshot);
  absl::StatusOr<RestoreStats> stats =
      after->Restore(in, At(3), kWall + seconds(1));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->restored, 3u);  // login-per-ip, its /24, message-send
  EXPECT_EQ(stats->unknown_policy, 0u);
  EXPECT_EQ(AllowedAtOnce(*after, MakeRequest("POST", kSnapLogin, "192.0.2.7"),
                          At(3)),
            0);
  EXPECT_EQ(AllowedAtOnce(*after,
                          MakeRequest("PUT", kSnapSend, "203.0.113.1",
                                      "@alice:example.org"),
                          At(3)),
            0);
  // Everyone else starts as before.
  EXPECT_EQ(AllowedAtOnce(*after, MakeRequest("POST", kSnapLogin, "192.0.2.99"),
                          At(3)),
            5);
}

TEST(SnapshotTest, ShardedAndLoneLimitersReadEachOthers) {
  auto sharded = *ShardedLimiter::Create(LimiterConfig{}, 8);
  const std::string snapshot = DrainedSnapshot(*sharded);
  auto lone = *Limiter::Create(LimiterConfig{});
  std::istringstream in(snapshot);
  ASSERT_TRUE(lone->Restore(in, At(3), kWall).ok());
  EXPECT_EQ(
      AllowedAtOnce(*lone, MakeRequest("POST", kSnapLogin, "192.0.2.7"), At(3)),
      0);
  std::ostringstream again;
  ASSERT_TRUE(lone->Snapshot(again, At(3), kWall).ok());
  auto sharded2 = *ShardedLimiter::Create(LimiterConfig{}, 4);
  std::istringstream in2(again.str());
  ASSERT_TRUE(sharded2->Restore(in2, At(7), kWall).ok());
  EXPECT_EQ(AllowedAtOnce(*sharded2,
                          MakeRequest("PUT", kSnapSend, "203.0.113.1",
                                      "@alice:example.org"),
                          At(7)),
            0);
}

TEST(SnapshotTest, BucketsFullAgainByNowAreDropped) {
  auto before = *Limiter::Create(LimiterConfig{});
  const std::string snapshot = DrainedSnapshot(*before);
  auto after = *Limiter::Create(LimiterConfig{});
  std::istringstream in(snapshot);
  // Two days on, every built-in bucket has refilled.
  absl::StatusOr<RestoreStats> stats =
      after->Restore(in, At(3), kWall + hours(48));
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->restored, 0u);
  EXPECT_GE(stats->refilled, 3u);
  EXPECT_EQ(after->Stats().ip_table.size, 0u);
  EXPECT_EQ(AllowedAtOnce(*after, MakeRequest("POST", kSnapLogin, "192.0.2.7"),
                          At(3)),
            5);
}

TEST(SnapshotTest, AClockThatWentBackKeepsBucketsDrained) {
  auto before = *Limiter::Create(LimiterConfig{});
  const std::string snapshot = DrainedSnapshot(*before);
  auto after = *Limiter::Create(LimiterConfig{});
  std::istringstream in(snapshot);
  ASSERT_TRUE(after->Restore(in, At(3), kWall - hours(1)).ok());
  EXPECT_EQ(AllowedAtOnce(*after, MakeRequest("POST", kSnapLogin, "192.0.2.7"),
                          At(3)),
            0);
}

TEST(SnapshotTest, OnlyBucketsOfUnchangedPoliciesComeBack) {
  LimiterConfig config;
  config.policies.push_back(
      ::mxlimit::testing::MakePolicy("kept", "/_matrix/client/v3/publicRooms",
                                     Scope::kIp, 6, TimeUnit::kMinute, 3));
  config.policies.push_back(::mxlimit::testing::MakePolicy(
      "changed", "/_matrix/client/v3/user_directory/search", Scope::kIp, 6,
      TimeUnit::kMinute, 3));
  auto before = *Limiter::Create(config);
  const Request rooms =
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.1");
  const Request search = MakeRequest(
      "POST", "/_matrix/client/v3/user_directory/search", "192.0.2.1");
  EXPECT_EQ(AllowedAtOnce(*before, rooms, At(100)), 3);
  EXPECT_EQ(AllowedAtOnce(*before, search, At(100)), 3);
  std::ostringstream out;
  ASSERT_TRUE(before->Snapshot(out, At(100), kWall).ok());

  config.policies[1].rate = *Rate::Create(60, TimeUnit::kMinute, 3);
  auto after = *Limiter::Create(config);
  std::istringstream in(out.str());
  absl::StatusOr<RestoreStats> stats = after->Restore(in, At(3), kWall);
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->unknown_policy, 1u);
  EXPECT_EQ(AllowedAtOnce(*after, rooms, At(3)), 0);   // kept: still drained
  EXPECT_EQ(AllowedAtOnce(*after, search, At(3)), 3);  // changed: fresh
}

TEST(SnapshotTest, LongUserIdsKeyedByAnotherProcessesDigestAreDropped) {
  auto before = *Limiter::Create(LimiterConfig{});
  const std::string user = "@" + std::string(60, 'a') + ":example.org";
  EXPECT_EQ(
      AllowedAtOnce(*before, MakeRequest("PUT", kSnapSend, "203.0.113.1", user),
                    At(100)),
      10);
  std::ostringstream out;
  ASSERT_TRUE(before->Snapshot(out, At(100), kWall).ok());
  auto after = *Limiter::Create(LimiterConfig{});
  std::istringstream in(out.str());
  absl::StatusOr<RestoreStats> stats = after->Restore(in, At(3), kWall);
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->unmatched, 1u);
}

TEST(SnapshotTest, ABrokenSnapshotChangesNothing) {
  auto before = *Limiter::Create(LimiterConfig{});
  const std::string good = DrainedSnapshot(*before);
  auto target = *Limiter::Create(LimiterConfig{});
  const Request mine = MakeRequest("POST", kSnapLogin, "198.51.100.1");
  EXPECT_EQ(AllowedAtOnce(*target, mine, At(3)), 5);
  std::vector<std::string> broken;
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    broken.push_back(good.substr(0, cut));  // truncated
  }
  for (size_t at = 0; at < good.size(); at += 5) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x41);
    broken.push_back(flipped);
  }
  broken.push_back(good + "x");
  broken.push_back(std::string(1 << 16, '\0'));
  for (const std::string& bytes : broken) {
    std::istringstream in(bytes);
    absl::StatusOr<RestoreStats> stats = target->Restore(in, At(3), kWall);
    ASSERT_FALSE(stats.ok()) << bytes.size();
    EXPECT_TRUE(stats.status().code() == absl::StatusCode::kDataLoss ||
                stats.status().code() == absl::StatusCode::kFailedPrecondition)
        << stats.status();
  }
  // Nothing was applied: the attacker's buckets never arrived, and the
  // target's own state is as it was.
  EXPECT_EQ(AllowedAtOnce(*target, MakeRequest("POST", kSnapLogin, "192.0.2.7"),
                          At(3)),
            5);
  EXPECT_EQ(AllowedAtOnce(*target, mine, At(3)), 0);
}

TEST(SnapshotTest, RestoringNeverGrowsATablePastItsCapacity) {
  LimiterConfig big;
  big.tables.ip_capacity = 4096;
  auto before = *Limiter::Create(big);
  for (int i = 0; i < 3000; ++i) {
    const std::string ip =
        "10." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ".1";
    before->Check(MakeRequest("POST", kSnapLogin, ip), At(100));
  }
  std::ostringstream out;
  ASSERT_TRUE(before->Snapshot(out, At(100), kWall).ok());
  LimiterConfig small;
  small.tables.ip_capacity = 1024;
  auto after = *Limiter::Create(small);
  std::istringstream in(out.str());
  ASSERT_TRUE(after->Restore(in, At(3), kWall).ok());
  EXPECT_LE(after->Stats().ip_table.size, after->Stats().ip_table.capacity);
  // The most recent clients are the ones kept.
  EXPECT_EQ(AllowedAtOnce(
                *after, MakeRequest("POST", kSnapLogin, "10.11.249.1"), At(3)),
            4);
}

// Checks, resets and tier changes go on while a ShardedLimiter is written
// and restored, shard by shard (run under ThreadSanitizer by the tsan
// preset).
TEST(SnapshotShardedTest, ChecksGoOnDuringSnapshotAndRestore) {
  LimiterConfig config;
  config.tiers.tiers = {{.name = "bridge", .scale = 10}};
  auto limiter = *ShardedLimiter::Create(config, 4);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string ip =
            "10." + std::to_string(t) + "." + std::to_string(i % 200) + ".1";
        limiter->Check(MakeRequest("POST", kSnapLogin, ip), At(100));
        if (i % 50 == 0) (void)limiter->ResetBuckets(ip);
        if (i % 70 == 0)
          (void)limiter->SetTier(ip, "bridge", std::nullopt, At(100));
      }
    });
  }
  for (int round = 0; round < 20; ++round) {
    std::ostringstream out;
    ASSERT_TRUE(limiter->Snapshot(out, At(100), kWall).ok());
    std::istringstream in(out.str());
    ASSERT_TRUE(limiter->Restore(in, At(100), kWall).ok());
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_LE(limiter->Stats().ip_table.size, limiter->Stats().ip_table.capacity);
}

}  // namespace
}  // namespace mxlimit
