// Floods of attacker-chosen identifiers against a Limiter with the built-in
// policies: each flood must cost at most one bucket's budget (or, for
// addresses, a bounded table), never memory. bench/flood_bench.cc runs the
// same floods at 10x-100x these sizes and reports peak RSS; docs/security.md
// has the figures.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

// With the built-ins on, a client has two buckets per table for one route:
// the route layer's and the aggregate layer's (shared across routes).
constexpr size_t kBucketsPerClient = 2;

using ::mxlimit::testing::At;
using ::mxlimit::testing::Ip;
using ::mxlimit::testing::MakeRequest;

constexpr int kFlood = 100'000;

std::unique_ptr<Limiter> BuiltinLimiter(size_t capacity) {
  LimiterConfig config;
  config.tables.ip_capacity = capacity;
  config.tables.user_capacity = capacity;
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

int64_t BurstOf(const Limiter& limiter, std::string_view policy) {
  std::optional<PolicyId> id = limiter.policies().Find(policy);
  EXPECT_TRUE(id.has_value()) << policy;
  return id ? limiter.policies().policy(*id).rate.burst() : -1;
}

// IPv4 address number `i` in 100.64.0.0/10 and beyond: all distinct /32s.
IpAddress V4(uint32_t i) {
  IpAddress ip = Ip("0.0.0.0");
  const uint32_t a = 0x64400000u + i;
  ip.bytes[12] = a >> 24;
  ip.bytes[13] = a >> 16;
  ip.bytes[14] = a >> 8;
  ip.bytes[15] = a;
  return ip;
}

TEST(FloodTest, DistinctAddressesKeepTheIpTableAtCapacity) {
  constexpr size_t kCapacity = 10'000;
  auto limiter = BuiltinLimiter(kCapacity);
  Request req = MakeRequest("GET", "/_matrix/client/v3/sync", "0.0.0.0");
  int allowed = 0;
  for (int i = 0; i < kFlood; ++i) {
    req.client = V4(i);
    allowed += limiter->Check(req, At(0)).allowed;
    if (i % 10'000 == 0) {
      ASSERT_LE(limiter->Stats().ip_table.size, kCapacity);
    }
  }
  const LimiterStats s = limiter->Stats();
  EXPECT_EQ(s.ip_table.size, kCapacity);
  EXPECT_EQ(s.ip_table.admissions, 2 * uint64_t{kFlood});
  EXPECT_EQ(s.ip_table.evictions, 2 * uint64_t{kFlood} - kCapacity);
  // Every address is a new client: each gets its own first request.
  EXPECT_EQ(allowed, kFlood);
}

TEST(FloodTest, Ipv6AttackerRotatingThroughOneSlash64GetsOneBucket) {
  auto limiter = BuiltinLimiter(100'000);
  Request req = MakeRequest("GET", "/_matrix/client/v3/sync", "2001:db8:1:2::");
  int allowed = 0;
  for (int i = 0; i < kFlood; ++i) {
    // Vary the interface identifier (low 64 bits) only.
    for (int b = 0; b < 4; ++b)
      req.client.bytes[12 + b] = (i * 2654435761u) >> (8 * b);
    req.client.bytes[8] = i & 0xFF;
    allowed += limiter->Check(req, At(0)).allowed;
  }
  EXPECT_EQ(allowed, BurstOf(*limiter, "catch-all-ip"));
  EXPECT_EQ(limiter->Stats().ip_table.size, kBucketsPerClient);

  // Control: distinct /64s are distinct clients, each with its own bucket.
  req.client = Ip("2001:db8:1:3::1");
  EXPECT_TRUE(limiter->Check(req, At(0)).allowed);
  EXPECT_EQ(limiter->Stats().ip_table.size, 2 * kBucketsPerClient);
}

TEST(FloodTest, DistinctRoomIdsOnOneRouteMintNoBucket) {
  auto limiter = BuiltinLimiter(100'000);
  int allowed = 0;
  std::string target;
  for (int i = 0; i < kFlood; ++i) {
    target = "/_matrix/client/v3/rooms/!room" + std::to_string(i) +
             "%3Aexample.org/send/m.room.message/txn" + std::to_string(i);
    allowed += limiter
                   ->Check(MakeRequest("PUT", target, "203.0.113.9",
                                       "@mallory:example.org"),
                           At(0))
                   .allowed;
  }
  EXPECT_EQ(allowed, BurstOf(*limiter, "message-send"));
  const LimiterStats s = limiter->Stats();
  EXPECT_EQ(s.user_table.size, kBucketsPerClient);
  EXPECT_EQ(s.ip_table.size, kBucketsPerClient);
}

TEST(FloodTest, DistinctUnknownPathsShareOneBucket) {
  auto limiter = BuiltinLimiter(100'000);
  int allowed = 0;
  std::string target;
  for (int i = 0; i < kFlood; ++i) {
    target =
        "/probe/" + std::to_string(i) + "/wp-login.php?x=" + std::to_string(i);
    Decision d =
        limiter->Check(MakeRequest("GET", target, "198.51.100.7"), At(0));
    allowed += d.allowed;
    ASSERT_EQ(d.route_key, kFallbackRouteKey);
  }
  EXPECT_EQ(allowed, BurstOf(*limiter, "unknown-paths-per-ip"));
  EXPECT_EQ(limiter->Stats().ip_table.size, kBucketsPerClient);
}

TEST(FloodTest, DistinctHugeUserIdsShareOneOverflowBucket) {
  auto limiter = BuiltinLimiter(100'000);
  // One 64 KiB buffer, made distinct per request by its first bytes.
  std::string user = "@" + std::string(64 * 1024 - 13, 'm') + ":example.org";
  int allowed = 0;
  for (int i = 0; i < kFlood; ++i) {
    const std::string n = std::to_string(i);
    user.replace(1, n.size(), n);
    allowed +=
        limiter
            ->Check(MakeRequest("GET", "/_matrix/client/v3/sync?since=s1",
                                "2001:db8::1", user),
                    At(0))
            .allowed;
  }
  EXPECT_EQ(limiter->Stats().user_table.size, kBucketsPerClient);
  EXPECT_EQ(allowed, BurstOf(*limiter, "catch-all-user"));
}

TEST(FloodTest, DistinctLongWellFormedUserIdsAreBoundedByCapacity) {
  // 41-255 byte IDs are keyed by a digest: distinct users, bounded table.
  constexpr size_t kCapacity = 10'000;
  auto limiter = BuiltinLimiter(kCapacity);
  std::string user = "@" + std::string(200, 'u') + ":example.org";
  int allowed = 0;
  for (int i = 0; i < kFlood; ++i) {
    const std::string n = std::to_string(i);
    user.replace(1, n.size(), n);
    // One request a second keeps the (shared) address under its limit.
    allowed += limiter
                   ->Check(MakeRequest("GET", "/_matrix/client/v3/sync",
                                       "2001:db8::1", user),
                           At(i))
                   .allowed;
  }
  EXPECT_EQ(allowed, kFlood);
  const LimiterStats s = limiter->Stats();
  EXPECT_EQ(s.user_table.size, kCapacity);
  EXPECT_EQ(s.user_table.evictions, 2 * uint64_t{kFlood} - kCapacity);
}

}  // namespace
}  // namespace mxlimit
