#include "src/replay/top_k.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/counting_new.h"

namespace mxlimit::replay {
namespace {

TEST(TopKTest, ExactWhileFewerItemsThanCounters) {
  TopK top(8);
  for (int i = 0; i < 5; ++i) top.Add("/sync");
  for (int i = 0; i < 3; ++i) top.Add("/send");
  top.Add("/login", 4);
  top.Add("/keys/claim");
  std::vector<TopKEntry> got = top.Top(10);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].item, "/sync");
  EXPECT_EQ(got[0].count, 5u);
  EXPECT_EQ(got[1].item, "/login");
  EXPECT_EQ(got[1].count, 4u);
  EXPECT_EQ(got[2].item, "/send");
  EXPECT_EQ(got[3].item, "/keys/claim");
  for (const TopKEntry& e : got) EXPECT_EQ(e.error, 0u);
  EXPECT_EQ(top.total(), 13u);
  EXPECT_EQ(top.max_error(), 0u);
  EXPECT_EQ(top.Top(2).size(), 2u);
}

TEST(TopKTest, TiesAreOrderedByItem) {
  TopK top(4);
  top.Add("b");
  top.Add("c");
  top.Add("a");
  std::vector<TopKEntry> got = top.Top(3);
  EXPECT_EQ(got[0].item, "a");
  EXPECT_EQ(got[1].item, "b");
  EXPECT_EQ(got[2].item, "c");
}

TEST(TopKTest, ZeroWeightDoesNothing) {
  TopK top(2);
  top.Add("x", 0);
  EXPECT_EQ(top.size(), 0u);
  EXPECT_EQ(top.total(), 0u);
}

TEST(TopKTest, CapacityOneKeepsTheLatestItemWithBoundedError) {
  TopK top(1);
  top.Add("a", 3);
  top.Add("b");
  std::vector<TopKEntry> got = top.Top(5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].item, "b");
  EXPECT_EQ(got[0].count, 4u);
  EXPECT_EQ(got[0].error, 3u);
}

// The Space-Saving guarantees against exact counts, on a skewed stream with
// far more distinct items than counters.
TEST(TopKTest, SkewedStreamKeepsHeavyHittersWithinBounds) {
  constexpr size_t kCapacity = 64;
  TopK top(kCapacity);
  std::map<std::string, uint64_t> exact;
  std::mt19937_64 rng(42);
  // Zipf-like: item i with weight ~ 1/(i+1), 5000 distinct items.
  std::vector<double> weights;
  for (int i = 0; i < 5000; ++i) weights.push_back(1.0 / (i + 1));
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  constexpr int kN = 200000;
  for (int n = 0; n < kN; ++n) {
    std::string item = "client-" + std::to_string(pick(rng));
    top.Add(item);
    ++exact[item];
  }
  EXPECT_EQ(top.total(), uint64_t{kN});
  EXPECT_EQ(top.size(), kCapacity);
  const uint64_t bound = kN / kCapacity;
  EXPECT_LE(top.max_error(), bound);

  std::vector<TopKEntry> all = top.Top(kCapacity);
  std::map<std::string, const TopKEntry*> found;
  for (const TopKEntry& e : all) {
    uint64_t truth = exact[e.item];
    EXPECT_LE(e.count - e.error, truth) << e.item;
    EXPECT_GE(e.count, truth) << e.item;
    EXPECT_LE(e.error, bound);
    found[e.item] = &e;
  }
  // Every item above N/m is present.
  for (const auto& [item, truth] : exact) {
    if (truth > bound) {
      EXPECT_TRUE(found.count(item)) << item << " " << truth;
    }
  }
  // The real top 5 is reported as the top 5, in order.
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const auto& [item, truth] : exact) ranked.push_back({truth, item});
  std::sort(ranked.rbegin(), ranked.rend());
  std::vector<TopKEntry> top5 = top.Top(5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(top5[i].item, ranked[i].second) << i;
}

TEST(TopKTest, AttackerStandsOutAmongManyOneOffClients) {
  TopK top(16);
  for (int i = 0; i < 100000; ++i) {
    top.Add("198.51.100." + std::to_string(i % 50000));  // each seen twice
    if (i % 10 == 0) top.Add("2001:db8:dead:beef::/64");
  }
  std::vector<TopKEntry> got = top.Top(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].item, "2001:db8:dead:beef::/64");
  EXPECT_GE(got[0].count - got[0].error, 1u);
  EXPECT_GE(got[0].count, 10000u);
}

TEST(TopKTest, MemoryIsFixedAndAddNeverAllocatesWithMillionDistinctItems) {
  TopK top(1000);
  const size_t before = top.memory_bytes();
  EXPECT_LT(before, 1000u * 400);  // ~255 B text + ~40 B bookkeeping each
  char item[32];
  long allocations = ::mxlimit::testing::AllocationCount();
  for (int i = 0; i < 1000000; ++i) {
    int n = std::snprintf(item, sizeof item, "@user%d:example.org", i);
    top.Add(std::string_view(item, n));
  }
  EXPECT_EQ(::mxlimit::testing::AllocationCount(), allocations);
  EXPECT_EQ(top.memory_bytes(), before);
  EXPECT_EQ(top.size(), 1000u);
  EXPECT_EQ(top.total(), 1000000u);
  // Items all seen once: every count is 1 + inherited error, lower bound 1.
  for (const TopKEntry& e : top.Top(1000)) EXPECT_EQ(e.count - e.error, 1u);
}

TEST(TopKTest, LongItemsAreTruncatedOnAUtf8Boundary) {
  TopK top(4);
  std::string long_item = std::string(254, 'a') + "\xc3\xa9" + "tail";  // é
  top.Add(long_item);
  top.Add(std::string(254, 'a') + "\xc3\xa9" + "other tail");
  std::vector<TopKEntry> got = top.Top(4);
  ASSERT_EQ(got.size(), 1u);  // same first 254 bytes once cut: one item
  EXPECT_EQ(got[0].item, std::string(254, 'a'));
  EXPECT_TRUE(got[0].truncated);
  EXPECT_EQ(got[0].count, 2u);
  top.Add(std::string(255, 'b'));
  got = top.Top(4);
  EXPECT_EQ(got[1].item.size(), 255u);
  EXPECT_FALSE(got[1].truncated);
}

TEST(TopKTest, MatchesReferenceModelUnderChurn) {
  // Differential check of the index (insert, backward-shift erase) and heap:
  // a plain reimplementation of Space-Saving with a linear min scan.
  struct Ref {
    std::string item;
    uint64_t count, error;
  };
  constexpr size_t kCapacity = 7;
  TopK top(kCapacity);
  std::vector<Ref> ref;
  std::mt19937 rng(3);
  for (int step = 0; step < 20000; ++step) {
    std::string item = "i" + std::to_string(rng() % 40);
    uint64_t w = 1 + rng() % 3;
    top.Add(item, w);
    auto it = std::find_if(ref.begin(), ref.end(),
                           [&](const Ref& r) { return r.item == item; });
    if (it != ref.end()) {
      it->count += w;
    } else if (ref.size() < kCapacity) {
      ref.push_back({item, w, 0});
    } else {
      // Any minimum may be evicted; compare only the multiset of counts and
      // the fact that the item is present afterwards.
      auto min = std::min_element(
          ref.begin(), ref.end(),
          [](const Ref& a, const Ref& b) { return a.count < b.count; });
      *min = {item, min->count + w, min->count};
    }
    std::vector<uint64_t> want, have;
    for (const Ref& r : ref) want.push_back(r.count);
    bool present = false;
    for (const TopKEntry& e : top.Top(kCapacity)) {
      have.push_back(e.count);
      present = present || e.item == item;
    }
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    ASSERT_EQ(have, want) << "step " << step;
    ASSERT_TRUE(present) << "step " << step;
    // Re-sync names with the real table where several minima tied.
    ref.clear();
    for (const TopKEntry& e : top.Top(kCapacity)) {
      ref.push_back({e.item, e.count, e.error});
    }
  }
}

}  // namespace
}  // namespace mxlimit::replay
