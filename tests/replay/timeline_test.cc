#include "src/replay/timeline.h"

#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/counting_new.h"

namespace mxlimit::replay {
namespace {

uint64_t Sum(std::span<const uint64_t> v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0});
}

TEST(TimelineTest, EmptyHasNoBins) {
  Timeline t(4, 8);
  EXPECT_EQ(t.bins(), 0u);
  EXPECT_EQ(t.Series(Outcome::kAllowed).size(), 0u);
  EXPECT_EQ(t.policy_slots(), 0u);
  EXPECT_TRUE(t.TopClients(10).empty());
}

TEST(TimelineTest, OneSecondBinsAlignedToWholeSeconds) {
  Timeline t(1, 8);
  t.Add(10'500, Outcome::kAllowed);
  t.Add(10'999, Outcome::kDenied);
  t.Add(11'000, Outcome::kShadowDenied);
  t.Add(13'000, Outcome::kAllowed);
  EXPECT_EQ(t.origin_ms(), 10'000);
  EXPECT_EQ(t.bin_ms(), 1000);
  ASSERT_EQ(t.bins(), 4u);
  EXPECT_EQ(std::vector<uint64_t>(t.Series(Outcome::kAllowed).begin(),
                                  t.Series(Outcome::kAllowed).end()),
            (std::vector<uint64_t>{1, 0, 0, 1}));
  EXPECT_EQ(t.Series(Outcome::kDenied)[0], 1u);
  EXPECT_EQ(t.Series(Outcome::kShadowDenied)[1], 1u);
}

// The last second that fits in kMaxBins one-second bins keeps the width; the
// next widens to 2 s, merging pairs of bins.
TEST(TimelineTest, WidensAtTheBoundary) {
  Timeline t(1, 8);
  t.Add(0, Outcome::kAllowed);
  t.Add(int64_t{Timeline::kMaxBins} * 1000 - 1, Outcome::kAllowed);
  EXPECT_EQ(t.bin_ms(), 1000);
  EXPECT_EQ(t.bins(), Timeline::kMaxBins);
  t.Add(int64_t{Timeline::kMaxBins} * 1000, Outcome::kAllowed);
  EXPECT_EQ(t.bin_ms(), 2000);
  EXPECT_EQ(t.bins(), Timeline::kMaxBins / 2 + 1);
  EXPECT_EQ(t.Series(Outcome::kAllowed)[0], 1u);
  EXPECT_EQ(t.Series(Outcome::kAllowed)[Timeline::kMaxBins / 2 - 1], 1u);
  EXPECT_EQ(t.Series(Outcome::kAllowed)[Timeline::kMaxBins / 2], 1u);
}

TEST(TimelineTest, EarlierTimeCountsInTheFirstBin) {
  Timeline t(1, 8);
  t.Add(5'000, Outcome::kAllowed);
  t.Add(1'000, Outcome::kDenied);
  EXPECT_EQ(t.bins(), 1u);
  EXPECT_EQ(t.Series(Outcome::kDenied)[0], 1u);
}

TEST(TimelineTest, NegativeTimesFloorToTheBin) {
  Timeline t(1, 8);
  t.Add(-1'500, Outcome::kAllowed);
  EXPECT_EQ(t.origin_ms(), -2'000);
  t.Add(0, Outcome::kAllowed);
  EXPECT_EQ(t.bins(), 3u);
}

TEST(TimelineTest, PoliciesPastTheCapShareOther) {
  Timeline t(Timeline::kMaxPolicies + 5, 8);
  t.Add(0, Outcome::kAllowed);
  for (uint32_t id = 0; id < Timeline::kMaxPolicies + 5; ++id) {
    t.AddPolicy(id, Outcome::kAllowed);
  }
  t.AddPolicy(Timeline::kMaxPolicies + 100, Outcome::kAllowed);  // ignored
  EXPECT_EQ(t.policy_slots(), Timeline::kMaxPolicies);
  EXPECT_TRUE(t.has_other_policies());
  EXPECT_EQ(t.policy_of_slot(3), 3u);
  EXPECT_EQ(Sum(t.PolicySeries(Timeline::kOtherPolicies, Outcome::kAllowed)),
            5u);
}

// A differential test against a map of every event: whatever the times, the
// bins hold exactly the events of their interval, and every series sums to
// what was added.
TEST(TimelineTest, MatchesAReferenceModelOverRandomLogs) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    Timeline t(3, 4);
    std::vector<std::pair<int64_t, Outcome>> events;
    int64_t now = static_cast<int64_t>(rng() % 100'000'000) - 50'000'000;
    const int64_t max_step = int64_t{1} << (rng() % 30);
    for (int i = 0; i < 3000; ++i) {
      now += static_cast<int64_t>(rng() % static_cast<uint64_t>(max_step));
      const auto o = static_cast<Outcome>(rng() % kOutcomes);
      t.Add(now, o);
      t.AddPolicy(static_cast<uint32_t>(rng() % 3), o);
      events.emplace_back(now, o);
    }
    ASSERT_LE(t.bins(), Timeline::kMaxBins);
    ASSERT_EQ(t.origin_ms() % t.bin_ms(), 0);
    std::map<std::pair<size_t, int>, uint64_t> want;
    for (const auto& [time, o] : events) {
      ++want[{static_cast<size_t>((time - t.origin_ms()) / t.bin_ms()),
              static_cast<int>(o)}];
    }
    uint64_t policy_total = 0;
    for (size_t slot = 0; slot < t.policy_slots(); ++slot) {
      for (size_t o = 0; o < kOutcomes; ++o) {
        policy_total += Sum(t.PolicySeries(slot, static_cast<Outcome>(o)));
      }
    }
    EXPECT_EQ(policy_total, events.size());
    for (size_t o = 0; o < kOutcomes; ++o) {
      const auto s = t.Series(static_cast<Outcome>(o));
      for (size_t b = 0; b < s.size(); ++b) {
        const auto it = want.find({b, static_cast<int>(o)});
        ASSERT_EQ(s[b], it == want.end() ? 0 : it->second)
            << "round " << round << " bin " << b << " width " << t.bin_ms();
      }
    }
  }
}

// A client's series sums to its count minus its error: exact while the sketch
// has room, and only what was seen since it took its counter after.
TEST(TimelineTest, ClientSeriesSumToCountMinusError) {
  Timeline t(1, 2);
  t.Add(0, Outcome::kDenied);
  t.AddLimitedClient("a");
  t.Add(1000, Outcome::kDenied);
  t.AddLimitedClient("a");
  t.Add(2000, Outcome::kDenied);
  t.AddLimitedClient("b");
  t.Add(3000, Outcome::kDenied);
  t.AddLimitedClient("c");  // replaces b (count 1)
  t.Add(4000, Outcome::kDenied);
  t.AddLimitedClient("c");
  for (const TopKEntry& e : t.TopClients(10)) {
    EXPECT_EQ(Sum(t.ClientSeries(e.counter)), e.count - e.error) << e.item;
  }
  const std::vector<TopKEntry> top = t.TopClients(10);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].item, "c");
  EXPECT_EQ(top[0].error, 1u);
  EXPECT_EQ(t.ClientSinceMs(top[0].counter), 3000);
}

// Shadow denials have a sketch and series of their own; a policy's fourth
// outcome (denied by another policy) a row of its own.
TEST(TimelineTest, ShadowClientsAndDeniedByOtherHaveTheirOwnRows) {
  Timeline t(2, 4, 4);
  t.Add(0, Outcome::kShadowDenied);
  t.AddPolicy(0, Outcome::kShadowDenied);
  t.AddPolicy(1, Outcome::kDeniedByOther);
  t.AddLimitedClient("s", Outcome::kShadowDenied);
  t.Add(1000, Outcome::kDenied);
  t.AddPolicy(0, Outcome::kDenied);
  t.AddPolicy(1, Outcome::kDeniedByOther);
  t.AddLimitedClient("d");
  t.Add(2000, Outcome::kShadowDenied);
  t.AddLimitedClient("s", Outcome::kShadowDenied);
  const std::vector<TopKEntry> denied = t.TopClients(10);
  const std::vector<TopKEntry> shadow =
      t.TopClients(10, Outcome::kShadowDenied);
  ASSERT_EQ(denied.size(), 1u);
  ASSERT_EQ(shadow.size(), 1u);
  EXPECT_EQ(denied[0].item, "d");
  EXPECT_EQ(shadow[0].item, "s");
  EXPECT_EQ(shadow[0].count, 2u);
  EXPECT_THAT(t.ClientSeries(shadow[0].counter, Outcome::kShadowDenied),
              ::testing::ElementsAre(1, 0, 1));
  EXPECT_THAT(t.ClientSeries(denied[0].counter),
              ::testing::ElementsAre(0, 1, 0));
  EXPECT_EQ(t.ClientSinceMs(shadow[0].counter, Outcome::kShadowDenied), 0);
  EXPECT_EQ(t.ClientSinceMs(denied[0].counter), 1000);
  ASSERT_EQ(t.policy_slots(), 2u);
  EXPECT_EQ(Sum(t.PolicySeries(1, Outcome::kDeniedByOther)), 2u);
  EXPECT_EQ(Sum(t.PolicySeries(1, Outcome::kDenied)), 0u);
  EXPECT_EQ(Sum(t.PolicySeries(0, Outcome::kDeniedByOther)), 0u);
  EXPECT_EQ(Sum(t.PolicySeries(0, Outcome::kShadowDenied)), 1u);
  EXPECT_EQ(Sum(t.PolicySeries(0, Outcome::kDenied)), 1u);
  // Without a shadow sketch, shadow-limited clients are not counted.
  Timeline without(1, 4);
  without.Add(0, Outcome::kShadowDenied);
  without.AddLimitedClient("s", Outcome::kShadowDenied);
  EXPECT_TRUE(without.TopClients(10, Outcome::kShadowDenied).empty());
  EXPECT_TRUE(without.TopClients(10).empty());
}

// Per line, nothing allocates: not the bins, not a widening, not the sketch's
// churn once it is full.
TEST(TimelineTest, AddNeverAllocates) {
  Timeline t(4, 16);
  std::vector<std::string> clients;
  for (int i = 0; i < 100; ++i)
    clients.push_back("client-" + std::to_string(i));
  const long allocations = ::mxlimit::testing::AllocationCount();
  for (int i = 0; i < 100'000; ++i) {
    t.Add(int64_t{i} * 997, Outcome::kDenied);
    t.AddPolicy(static_cast<uint32_t>(i % 4), Outcome::kDenied);
    t.AddLimitedClient(clients[static_cast<size_t>(i) % clients.size()]);
  }
  EXPECT_EQ(::mxlimit::testing::AllocationCount(), allocations);
  EXPECT_GT(t.bin_ms(), 1000);
}

}  // namespace
}  // namespace mxlimit::replay
