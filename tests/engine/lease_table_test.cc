// LeaseTable on its own: groups counted and ended in expiry order, emptied
// groups kept for their bucket's next request and given up, least recently
// emptied first, when a new group needs their record; never more groups or
// leases than the capacity.

#include "src/engine/lease_table.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "src/engine/bucket_keys.h"

namespace mxlimit::internal {
namespace {

// The group of user `n`'s bucket under one policy, hashed by `table`.
struct TestGroup {
  LeaseGroupKey key;
  size_t hash = 0;
  LeaseTable::HashedGroup hashed() const { return {&key, hash}; }
};

TestGroup GroupOf(const LeaseTable& table, int n) {
  const UserBucketKey user = UserBucketKey::Make(
      "@u" + std::to_string(n) + ":example.org", 1, 2, SipKey{1, 2});
  TestGroup g;
  g.key = LeaseGroupKey::Of(1, user);
  g.hash = table.Hash(user);
  return g;
}

TEST(LeaseTableTest, CountsInFlightAndEndsInExpiryOrder) {
  LeaseTable table(8);
  const TestGroup a = GroupOf(table, 1);
  table.Acquire(a.hashed(), 300);
  table.Acquire(a.hashed(), 100);
  const LeaseId mid = table.Acquire(a.hashed(), 200);
  LeaseTable::Group g = table.Find(a.hashed(), 0);
  EXPECT_EQ(g.in_flight, 3u);
  EXPECT_EQ(g.earliest_expiry_ns, 100);
  EXPECT_EQ(table.NthExpiry(a.hashed(), 0, 2), 200);
  EXPECT_TRUE(table.Release(mid));
  EXPECT_FALSE(table.Release(mid));  // ended already
  EXPECT_EQ(table.NthExpiry(a.hashed(), 0, 2), 300);
  table.Expire(100);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find(a.hashed(), 100).earliest_expiry_ns, 300);
  table.Expire(300);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Find(a.hashed(), 300).in_flight, 0u);
  EXPECT_EQ(table.expirations(), 2u);
  EXPECT_EQ(table.releases(), 1u);
}

TEST(LeaseTableTest, EmptiedGroupsStayIndexedUntilTheirRecordIsNeeded) {
  LeaseTable table(4);
  // Four buckets each take a lease and lose it, in order: four empty groups
  // kept.
  for (int n = 0; n < 4; ++n) {
    table.Acquire(GroupOf(table, n).hashed(), 10 + n);
  }
  table.Expire(13);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.groups(), 4u);
  // Bucket 0 comes back: its group is found again, no record is taken.
  table.Acquire(GroupOf(table, 0).hashed(), 20);
  EXPECT_EQ(table.groups(), 4u);
  // New buckets take the records of the least recently emptied groups
  // (1, then 2), never of a group holding a lease.
  table.Acquire(GroupOf(table, 10).hashed(), 20);
  table.Acquire(GroupOf(table, 11).hashed(), 20);
  EXPECT_EQ(table.groups(), 4u);
  EXPECT_EQ(table.Find(GroupOf(table, 0).hashed(), 0).in_flight, 1u);
  EXPECT_EQ(table.Find(GroupOf(table, 10).hashed(), 0).in_flight, 1u);
  EXPECT_EQ(table.Find(GroupOf(table, 11).hashed(), 0).in_flight, 1u);
  // A fourth lease takes the last empty group's record (3's); then, full of
  // leases, the one nearest its end is evicted first.
  table.Acquire(GroupOf(table, 12).hashed(), 15);
  table.Acquire(GroupOf(table, 13).hashed(), 30);
  EXPECT_EQ(table.evictions(), 1u);
  EXPECT_EQ(table.size(), 4u);
  EXPECT_LE(table.groups(), 4u);
  EXPECT_EQ(table.Find(GroupOf(table, 12).hashed(), 0).in_flight, 0u);
}

TEST(LeaseTableTest, ChurnOverManyBucketsStaysWithinTheCapacity) {
  LeaseTable table(64);
  int64_t now = 0;
  for (int i = 0; i < 100'000; ++i) {
    now += 1;
    table.Expire(now);
    const LeaseId id =
        table.Acquire(GroupOf(table, i % 997).hashed(), now + 1 + i % 200);
    if (i % 3 == 0) table.Release(id);
    ASSERT_LE(table.size(), 64u);
    ASSERT_LE(table.groups(), 64u);
  }
  EXPECT_GT(table.evictions(), 0u);
}

// Random expiries, early releases and expiry sweeps against a plain map of
// the leases held: the heap ends exactly the leases due, whatever the order
// they came in.
TEST(LeaseTableTest, ExpiresExactlyTheLeasesDue) {
  LeaseTable table(512);
  std::mt19937 rng(3);
  std::map<LeaseId, int64_t> held;
  int64_t now = 0;
  for (int i = 0; i < 50'000; ++i) {
    const uint32_t op = rng() % 8;
    if (op < 5 && held.size() < 512) {
      const int64_t expiry = now + 1 + static_cast<int64_t>(rng() % 1000);
      held[table.Acquire(GroupOf(table, static_cast<int>(rng() % 50)).hashed(),
                         expiry)] = expiry;
    } else if (op < 7 && !held.empty()) {
      auto it = held.begin();
      std::advance(it, rng() % held.size());
      ASSERT_TRUE(table.Release(it->first));
      held.erase(it);
    } else {
      now += static_cast<int64_t>(rng() % 200);
      table.Expire(now);
      std::erase_if(held, [&](const auto& l) { return l.second <= now; });
    }
    ASSERT_EQ(table.size(), held.size());
  }
  EXPECT_EQ(table.evictions(), 0u);
}

TEST(LeaseTableTest, EraseIfDropsLeasesAndEmptyGroups) {
  LeaseTable table(8);
  table.Acquire(GroupOf(table, 1).hashed(), 10);
  table.Acquire(GroupOf(table, 2).hashed(), 50);
  table.Expire(10);  // group 1 empty, kept
  EXPECT_EQ(table.groups(), 2u);
  table.Clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.groups(), 0u);
  // Every record is free again.
  for (int n = 0; n < 8; ++n) table.Acquire(GroupOf(table, n).hashed(), 99);
  EXPECT_EQ(table.size(), 8u);
  EXPECT_EQ(table.evictions(), 0u);
}

}  // namespace
}  // namespace mxlimit::internal
