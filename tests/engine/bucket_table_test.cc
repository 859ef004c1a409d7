#include "src/engine/bucket_table.h"

#include <cstdint>
#include <list>
#include <map>
#include <random>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "src/engine/bucket_keys.h"
#include "tests/testing/sanitizers.h"

namespace mxlimit::internal {
namespace {

// Distinct small integers map to distinct IP keys (the id spread over the
// address bytes, policy and route), so tests can reason in integers.
IpBucketKey K(uint64_t id) {
  IpBucketKey k;
  for (int i = 0; i < 8; ++i) {
    k.address[15 - i] = static_cast<uint8_t>(id >> (8 * i));
  }
  k.address[0] = 0x20;
  k.policy = static_cast<PolicyId>(id % 3);
  k.route = static_cast<RouteId>(id % 5);
  return k;
}

// The limiter's configuration: its keys under its seeded hash.
using IpTable = BucketTable<IpBucketKey, BucketKeyHash>;

std::vector<IpBucketKey> Contents(const IpTable& t) {
  std::vector<IpBucketKey> keys;
  t.ForEach([&](const IpBucketKey& k, const GcraState&) { keys.push_back(k); });
  return keys;
}

static_assert(!std::is_copy_constructible_v<IpTable>);
static_assert(!std::is_move_constructible_v<IpTable>);
static_assert(!std::is_copy_assignable_v<IpTable>);
static_assert(!std::is_move_assignable_v<IpTable>);

TEST(BucketTableTest, AdmitsFreshBucketsAndFindsThemAgain) {
  IpTable t(4);
  GcraState* s = t.FindOrAdmit(K(1));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->tat, GcraState::kFresh);
  s->tat = 42;
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.admissions(), 1u);
  EXPECT_EQ(t.hits(), 0u);

  GcraState* again = t.Find(K(1));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->tat, 42);
  EXPECT_EQ(t.hits(), 1u);
  EXPECT_EQ(t.Find(K(2)), nullptr);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.admissions(), 1u);
}

TEST(BucketTableTest, EvictsLeastRecentlyUsedKeyWhenFull) {
  IpTable t(3);
  t.FindOrAdmit(K(1))->tat = 1;
  t.FindOrAdmit(K(2))->tat = 2;
  t.FindOrAdmit(K(3))->tat = 3;
  ASSERT_NE(t.Find(K(1)), nullptr);  // 2 is now the oldest.
  EXPECT_EQ(*t.LeastRecentlyUsed(), K(2));
  EXPECT_EQ(*t.MostRecentlyUsed(), K(1));

  GcraState* s4 = t.FindOrAdmit(K(4));
  EXPECT_EQ(s4->tat, GcraState::kFresh);  // Not the evicted bucket's state.
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.evictions(), 1u);
  EXPECT_EQ(t.Peek(K(2)), nullptr);
  EXPECT_EQ(Contents(t), (std::vector<IpBucketKey>{K(3), K(1), K(4)}));
  EXPECT_EQ(t.Peek(K(3))->tat, 3);
  EXPECT_EQ(t.Peek(K(1))->tat, 1);
}

TEST(BucketTableTest, LocateThenAcquireBehavesExactlyLikeFindOrAdmit) {
  IpTable one_step(64);
  IpTable two_step(64);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20'000; ++i) {
    const IpBucketKey key = K(rng() % 200);
    GcraState* a = one_step.FindOrAdmit(key);
    const IpTable::HashedKey hashed = two_step.Hashed(key);
    const uint32_t slot = two_step.Locate(hashed);
    EXPECT_EQ(slot != 0, two_step.Peek(key) != nullptr);
    GcraState* b = two_step.Acquire(hashed, slot);
    // Give the two states the same distinct value so contents compare.
    a->tat = b->tat = i;
    ASSERT_EQ(Contents(one_step), Contents(two_step)) << "step " << i;
  }
  EXPECT_EQ(one_step.hits(), two_step.hits());
  EXPECT_EQ(one_step.evictions(), two_step.evictions());
  EXPECT_EQ(one_step.admissions(), two_step.admissions());
}

TEST(BucketTableTest, PeekDoesNotTouchOrCount) {
  IpTable t(2);
  t.FindOrAdmit(K(1));
  t.FindOrAdmit(K(2));
  ASSERT_NE(t.Peek(K(1)), nullptr);
  EXPECT_EQ(t.hits(), 0u);
  t.FindOrAdmit(K(3));  // Evicts 1: peeking did not make it recent.
  EXPECT_EQ(t.Peek(K(1)), nullptr);
  EXPECT_NE(t.Peek(K(2)), nullptr);
}

TEST(BucketTableTest, CapacityOneKeepsOnlyTheLastKey) {
  IpTable t(1);
  EXPECT_EQ(t.capacity(), 1u);
  EXPECT_EQ(t.LeastRecentlyUsed(), nullptr);
  t.FindOrAdmit(K(1))->tat = 10;
  EXPECT_EQ(t.FindOrAdmit(K(1))->tat, 10);  // Hit, no eviction.
  EXPECT_EQ(t.evictions(), 0u);
  for (uint64_t i = 2; i < 100; ++i) {
    GcraState* s = t.FindOrAdmit(K(i));
    EXPECT_EQ(s->tat, GcraState::kFresh);
    s->tat = static_cast<int64_t>(i);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.Peek(K(i - 1)), nullptr);
    EXPECT_EQ(*t.LeastRecentlyUsed(), K(i));
    EXPECT_EQ(*t.MostRecentlyUsed(), K(i));
  }
  EXPECT_EQ(t.evictions(), 98u);
  EXPECT_EQ(t.admissions(), 99u);
  EXPECT_EQ(t.hits(), 1u);
  EXPECT_TRUE(t.Erase(K(99)));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.LeastRecentlyUsed(), nullptr);
  t.FindOrAdmit(K(7));
  EXPECT_EQ(t.size(), 1u);
}

TEST(BucketTableTest, ZeroCapacityIsClampedToOneInReleaseBuilds) {
#ifdef NDEBUG
  IpTable t(0);
  EXPECT_EQ(t.capacity(), 1u);
  t.FindOrAdmit(K(1));
  t.FindOrAdmit(K(2));
  EXPECT_EQ(t.size(), 1u);
#else
  GTEST_SKIP() << "capacity 0 asserts in debug builds";
#endif
}

TEST(BucketTableTest, EraseFreesARecordThatTheNextAdmissionReuses) {
  IpTable t(3);
  t.FindOrAdmit(K(1));
  t.FindOrAdmit(K(2));
  t.FindOrAdmit(K(3));
  EXPECT_TRUE(t.Erase(K(2)));
  EXPECT_FALSE(t.Erase(K(2)));
  EXPECT_EQ(t.size(), 2u);
  t.FindOrAdmit(K(4));  // Room left: no eviction.
  EXPECT_EQ(t.evictions(), 0u);
  EXPECT_EQ(Contents(t), (std::vector<IpBucketKey>{K(1), K(3), K(4)}));
}

TEST(BucketTableTest, EraseIfRemovesMatchingEntriesAndKeepsOrder) {
  IpTable t(10);
  for (uint64_t i = 0; i < 10; ++i) t.FindOrAdmit(K(i))->tat = int64_t(i);
  size_t n = t.EraseIf(
      [](const IpBucketKey&, const GcraState& s) { return s.tat % 2 == 0; });
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(Contents(t),
            (std::vector<IpBucketKey>{K(1), K(3), K(5), K(7), K(9)}));
  for (uint64_t i = 10; i < 15; ++i) t.FindOrAdmit(K(i));
  EXPECT_EQ(t.size(), 10u);
  EXPECT_EQ(t.evictions(), 0u);
}

TEST(BucketTableTest, ClearForgetsEverythingAndTheTableRefills) {
  IpTable t(5);
  for (uint64_t i = 0; i < 8; ++i) t.FindOrAdmit(K(i));
  const size_t bytes = t.memory_bytes();
  t.Clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(Contents(t).empty());
  EXPECT_EQ(t.Peek(K(7)), nullptr);
  for (uint64_t i = 100; i < 105; ++i) {
    EXPECT_EQ(t.FindOrAdmit(K(i))->tat, GcraState::kFresh);
  }
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(t.memory_bytes(), bytes);
}

TEST(BucketTableTest, ForEachVisitsOldestFirstAndCanUpdateState) {
  IpTable t(4);
  for (uint64_t i = 1; i <= 4; ++i) t.FindOrAdmit(K(i));
  t.Find(K(2));
  std::vector<IpBucketKey> seen;
  t.ForEach([&](const IpBucketKey& k, GcraState& s) {
    seen.push_back(k);
    s.tat = 5;
  });
  EXPECT_EQ(seen, (std::vector<IpBucketKey>{K(1), K(3), K(4), K(2)}));
  EXPECT_EQ(t.Peek(K(3))->tat, 5);
  EXPECT_EQ(*t.LeastRecentlyUsed(), K(1));  // ForEach changed no recency.
}

// Every key hashes alike: lookups must still tell keys apart by equality.
struct ConstantHash {
  size_t operator()(const IpBucketKey&) const { return 0x9e3779b97f4a7c15u; }
};

TEST(BucketTableTest, StaysCorrectWhenEveryKeyCollides) {
  BucketTable<IpBucketKey, ConstantHash> t(40);
  for (uint64_t i = 0; i < 200; ++i) t.FindOrAdmit(K(i))->tat = int64_t(i);
  EXPECT_EQ(t.size(), 40u);
  for (uint64_t i = 0; i < 160; ++i) EXPECT_EQ(t.Peek(K(i)), nullptr);
  for (uint64_t i = 160; i < 200; ++i) {
    ASSERT_NE(t.Peek(K(i)), nullptr);
    EXPECT_EQ(t.Peek(K(i))->tat, int64_t(i));
  }
}

TEST(BucketTableTest, MemoryIsWithinBudgetAndConstant) {
  IpTable t(1'000'000);
  const size_t bytes = t.memory_bytes();
  EXPECT_LE(bytes / t.capacity(), 128u);
  EXPECT_EQ(IpTable::entry_bytes(), 40u);
  EXPECT_EQ(BucketTable<UserBucketKey>::entry_bytes(), 64u);
  for (uint64_t i = 0; i < 2'000'000; ++i) t.FindOrAdmit(K(i));
  EXPECT_EQ(t.memory_bytes(), bytes);
}

// --- Differential test against a plain model ---------------------------------
//
// The model: std::list of ids in recency order (front = least recent) and a
// std::map from id to (list position, stored tat). Each step applies one
// random operation to both and compares the outcome, the size, both ends of
// the recency order and the counters; every `kFullCompareEvery` steps and at
// the end of each run, the complete contents in order, with states.

struct Model {
  size_t capacity = 0;
  std::list<uint64_t> order;
  std::map<uint64_t, std::pair<std::list<uint64_t>::iterator, int64_t>> map;
  uint64_t admissions = 0, evictions = 0, hits = 0;

  void Touch(uint64_t id) {
    auto& [pos, tat] = map.at(id);
    order.splice(order.end(), order, pos);
  }
  // Returns the stored tat or kFresh; admits like the table.
  int64_t FindOrAdmit(uint64_t id) {
    auto it = map.find(id);
    if (it != map.end()) {
      ++hits;
      Touch(id);
      return it->second.second;
    }
    if (map.size() == capacity) {
      map.erase(order.front());
      order.pop_front();
      ++evictions;
    }
    order.push_back(id);
    map[id] = {std::prev(order.end()), GcraState::kFresh};
    ++admissions;
    return GcraState::kFresh;
  }
};

void ExpectSameContents(const IpTable& t, const Model& m) {
  std::vector<std::pair<IpBucketKey, int64_t>> got, want;
  t.ForEach([&](const IpBucketKey& k, const GcraState& s) {
    got.emplace_back(k, s.tat);
  });
  for (uint64_t id : m.order) want.emplace_back(K(id), m.map.at(id).second);
  ASSERT_EQ(got, want);
}

void RunDifferential(size_t capacity, uint64_t universe, int steps,
                     uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "capacity " << capacity << " universe "
                                  << universe << " seed " << seed);
  IpTable t(capacity);
  Model m;
  m.capacity = capacity;
  std::mt19937_64 rng(seed);
  const int full_compare_every = capacity <= 8 ? 1 : capacity <= 64 ? 16 : 256;
  for (int step = 0; step < steps; ++step) {
    const uint64_t id = rng() % universe;
    const int op = static_cast<int>(rng() % 100);
    const int64_t new_tat = static_cast<int64_t>(rng() >> 1);
    if (op < 55) {  // Touch or admit (evicting when full).
      GcraState* s = t.FindOrAdmit(K(id));
      ASSERT_NE(s, nullptr);
      ASSERT_EQ(s->tat, m.FindOrAdmit(id)) << "step " << step;
      s->tat = new_tat;
      m.map.at(id).second = new_tat;
    } else if (op < 80) {  // Touch only.
      GcraState* s = t.Find(K(id));
      auto it = m.map.find(id);
      ASSERT_EQ(s != nullptr, it != m.map.end()) << "step " << step;
      if (s != nullptr) {
        ++m.hits;
        m.Touch(id);
        ASSERT_EQ(s->tat, it->second.second);
      }
    } else if (op < 90) {  // Look without touching.
      const GcraState* s = t.Peek(K(id));
      auto it = m.map.find(id);
      ASSERT_EQ(s != nullptr, it != m.map.end()) << "step " << step;
      if (s != nullptr) {
        ASSERT_EQ(s->tat, it->second.second);
      }
    } else if (op < 99) {  // Erase.
      auto it = m.map.find(id);
      const bool present = it != m.map.end();
      if (present) {
        m.order.erase(it->second.first);
        m.map.erase(it);
      }
      ASSERT_EQ(t.Erase(K(id)), present) << "step " << step;
    } else if (rng() % 50 == 0) {  // Rarely: clear.
      t.Clear();
      m.order.clear();
      m.map.clear();
    }
    ASSERT_EQ(t.size(), m.map.size()) << "step " << step;
    if (m.order.empty()) {
      ASSERT_EQ(t.LeastRecentlyUsed(), nullptr);
    } else {
      ASSERT_EQ(*t.LeastRecentlyUsed(), K(m.order.front())) << "step " << step;
      ASSERT_EQ(*t.MostRecentlyUsed(), K(m.order.back())) << "step " << step;
    }
    ASSERT_EQ(t.admissions(), m.admissions);
    ASSERT_EQ(t.evictions(), m.evictions);
    ASSERT_EQ(t.hits(), m.hits);
    if (step % full_compare_every == 0) {
      ExpectSameContents(t, m);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
  ExpectSameContents(t, m);
}

TEST(BucketTableTest, MatchesReferenceModelOverAMillionRandomOperations) {
  struct Run {
    size_t capacity;
    uint64_t universe;
    int steps;
  };
  // 1.2M operations in all: tiny tables where every corner case recurs
  // constantly, and larger ones where the index churns through rehashes.
  const Run runs[] = {{1, 3, 50'000},       {2, 5, 50'000},
                      {3, 4, 50'000},       {7, 20, 100'000},
                      {64, 100, 250'000},   {1000, 3000, 300'000},
                      {5000, 6000, 400'000}};
  uint32_t seed = 1;
  int total = 0;
  for (const Run& r : runs) {
    RunDifferential(r.capacity, r.universe, r.steps, seed++);
    if (HasFatalFailure()) return;
    total += r.steps;
  }
  EXPECT_GE(total, 1'000'000);
}

TEST(BucketTableTest, FloodOfDistinctKeysKeepsSizeAtCapacity) {
  constexpr size_t kCapacity = 100'000;
#if defined(MXLIMIT_TEST_ASAN)
  constexpr uint64_t kKeys = 2'000'000;  // Same shape, sanitizer-friendly.
#else
  constexpr uint64_t kKeys = 10'000'000;
#endif
  IpTable t(kCapacity);
  const size_t bytes = t.memory_bytes();
  for (uint64_t i = 0; i < kKeys; ++i) {
    GcraState* s = t.FindOrAdmit(K(i));
    if (s->tat != GcraState::kFresh) FAIL() << "key " << i << " not fresh";
    s->tat = static_cast<int64_t>(i);
    if (i >= kCapacity && t.size() != kCapacity) {
      FAIL() << "size " << t.size() << " after key " << i;
    }
  }
  EXPECT_EQ(t.size(), kCapacity);
  EXPECT_EQ(t.admissions(), kKeys);
  EXPECT_EQ(t.evictions(), kKeys - kCapacity);
  EXPECT_EQ(t.memory_bytes(), bytes);
  // The survivors are exactly the last kCapacity keys, oldest first.
  uint64_t expect = kKeys - kCapacity;
  t.ForEach([&](const IpBucketKey& k, const GcraState& s) {
    EXPECT_EQ(k, K(expect));
    EXPECT_EQ(s.tat, static_cast<int64_t>(expect));
    ++expect;
  });
  EXPECT_EQ(expect, kKeys);
}

}  // namespace
}  // namespace mxlimit::internal
