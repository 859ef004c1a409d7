// `on_limit: delay` with a store: a request that the mirror can admit late
// is admitted late when the store agrees, and every bucket, the store's
// among them, is charged as of the later time. Built-in policies on.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/shared_limiter.h"
#include "src/shared/fake_store.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/shared_store_testing.h"

namespace mxlimit {
namespace {

using internal::FakeStore;
using std::chrono::milliseconds;
using testing::DelayedPolicy;
using testing::Holdable;
using testing::MakeRequest;

constexpr const char* kSearch = testing::kPublicRooms;

MonotonicTime Ms(int64_t ms) { return MonotonicTime::FromMilliseconds(ms); }

LimiterConfig Config(std::vector<Policy> policies = {}) {
  LimiterConfig config;  // Built-in policies on.
  config.policies = std::move(policies);
  config.store.key_secret = testing::kStoreKeySecret;
  config.store.clock = StoreOptions::Clock::kCaller;
  return config;
}

std::unique_ptr<SharedLimiter> Process(FakeStore& store,
                                       const LimiterConfig& config) {
  auto limiter = SharedLimiter::CreateWithStore(
      config, std::make_unique<testing::ForwardingStore>(store), 2);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

Request Federation(std::string_view origin, std::string_view ip) {
  Request r =
      MakeRequest("GET", "/_matrix/federation/v1/state_ids/!r:a.org", ip);
  r.origin = origin;
  r.may_delay = true;
  return r;
}

void ExpectSameDecision(const Decision& got, const Decision& want,
                        const std::string& what) {
  EXPECT_EQ(got.allowed, want.allowed) << what;
  EXPECT_EQ(got.delay, want.delay) << what;
  EXPECT_EQ(got.retry_after, want.retry_after) << what;
  EXPECT_EQ(got.never, want.never) << what;
  EXPECT_EQ(got.policy, want.policy) << what;
  EXPECT_EQ(got.leases.count, want.leases.count) << what;
}

TEST(SharedDelayTest, StoreBucketsQueueAsOneLimiterDoes) {
  FakeStore store;
  std::unique_ptr<SharedLimiter> shared =
      Process(store, Config({DelayedPolicy()}));
  ASSERT_NE(shared, nullptr);
  auto one = Limiter::Create(Config({DelayedPolicy()}));
  ASSERT_TRUE(one.ok());
  const Request r = Holdable(MakeRequest("GET", kSearch, "203.0.113.5"));
  // Two at once, five late by 100..500 ms, the eighth denied; then the
  // same after the queue has drained in part: every answer as one Limiter
  // gives it, which needs the store's bucket charged at the later times.
  int delayed = 0;
  for (const int64_t ms : {0, 0, 0, 0, 0, 0, 0, 0, 250, 250, 900, 901}) {
    const Decision got = shared->Check(r, Ms(ms));
    const Decision want = (*one)->Check(r, Ms(ms));
    ExpectSameDecision(got, want, "at " + std::to_string(ms) + " ms");
    if (got.delay.count() > 0) ++delayed;
  }
  EXPECT_GE(delayed, 5);
  EXPECT_GT(shared->StoreStats().store_decisions, 0u);
  // The store holds what one Limiter holds: a second process, asked now,
  // sees the queue the first one built.
  std::unique_ptr<SharedLimiter> other =
      Process(store, Config({DelayedPolicy()}));
  ASSERT_NE(other, nullptr);
  const Request plain = MakeRequest("GET", kSearch, "203.0.113.5");
  ExpectSameDecision(other->Check(plain, Ms(901)),
                     (*one)->Check(plain, Ms(901)), "second process");
}

TEST(SharedDelayTest, FederationInFlightQueuesWithAStore) {
  FakeStore store;
  std::unique_ptr<SharedLimiter> shared = Process(store, Config());
  ASSERT_NE(shared, nullptr);
  auto one = Limiter::Create(Config());
  ASSERT_TRUE(one.ok());
  const Request r = Federation("a.org", "198.51.100.7");
  // Three in flight; the rest wait for a slot (the built-in's queue)
  // instead of a 429, while federation-per-origin, shared through the
  // store, is charged at each request's start.
  int delayed = 0;
  for (int i = 0; i < 60; ++i) {
    const int64_t ms = int64_t{i} * 20;
    const Decision got = shared->Check(r, Ms(ms));
    const Decision want = (*one)->Check(r, Ms(ms));
    ExpectSameDecision(got, want, "request " + std::to_string(i));
    if (got.allowed && got.delay.count() > 0) {
      ++delayed;
      EXPECT_EQ(got.policy, "federation-in-flight");
    }
  }
  EXPECT_GT(delayed, 10);
  // An embedder that cannot hold requests is denied, as by one Limiter.
  Request now = r;
  now.may_delay = false;
  ExpectSameDecision(shared->Check(now, Ms(1'200)),
                     (*one)->Check(now, Ms(1'200)), "may_delay false");
}

// Two processes A and B on one store, and one Limiter to compare them with,
// all with the delaying policy.
class SharedDelayTwoProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = Process(store_, Config({DelayedPolicy()}));
    b_ = Process(store_, Config({DelayedPolicy()}));
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    auto one = Limiter::Create(Config({DelayedPolicy()}));
    ASSERT_TRUE(one.ok());
    one_ = *std::move(one);
  }

  FakeStore store_;
  std::unique_ptr<SharedLimiter> a_;
  std::unique_ptr<SharedLimiter> b_;
  std::unique_ptr<Limiter> one_;
};

TEST_F(SharedDelayTwoProcessesTest,
       AQueueOnlyTheStoreSawDeniesOnceThenIsJoined) {
  SharedLimiter* a = a_.get();
  SharedLimiter* b = b_.get();
  const Request r = Holdable(MakeRequest("GET", kSearch, "203.0.113.6"));
  ASSERT_TRUE(a->Check(r, Ms(0)).allowed);
  ASSERT_TRUE(a->Check(r, Ms(0)).allowed);
  // B's mirror has never seen this bucket: the store, asked as of now,
  // denies (with the exact wait), and B's mirror learns its lead...
  const Decision first = b->Check(r, Ms(0));
  EXPECT_FALSE(first.allowed);
  EXPECT_EQ(first.retry_after, milliseconds(100));
  // ...so B's next request is admitted late, as A's would be.
  const Decision second = b->Check(r, Ms(0));
  ASSERT_TRUE(second.allowed);
  EXPECT_EQ(second.delay, milliseconds(100));
  EXPECT_EQ(second.policy, "rooms-delayed");
  // A had not seen B's charge: it guesses 100 ms, the store (as of then)
  // denies, with the wait counted from now; A's next request waits 200 ms.
  const Decision third = a->Check(r, Ms(0));
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.retry_after, milliseconds(200));
  const Decision fourth = a->Check(r, Ms(0));
  ASSERT_TRUE(fourth.allowed);
  EXPECT_EQ(fourth.delay, milliseconds(200));
}

TEST_F(SharedDelayTwoProcessesTest,
       AProcessThatDoesNotDelayKeepsTheQueueOthersBuilt) {
  SharedLimiter* a = a_.get();
  SharedLimiter* b = b_.get();
  Limiter* one = one_.get();
  const Request held = Holdable(MakeRequest("GET", kSearch, "203.0.113.8"));
  Request plain = held;
  plain.may_delay = false;
  // A builds a queue 400 ms deep (two at once, two late).
  for (int i = 0; i < 4; ++i) {
    ExpectSameDecision(a->Check(held, Ms(0)), one->Check(held, Ms(0)),
                       "A " + std::to_string(i));
  }
  // B, which cannot hold this one, is denied with the wait one Limiter
  // gives (the whole queue), and the queue stays: B's next request, which
  // it can hold, is admitted as late as one Limiter admits it.
  ExpectSameDecision(b->Check(plain, Ms(0)), one->Check(plain, Ms(0)),
                     "B without delay");
  ExpectSameDecision(b->Check(held, Ms(0)), one->Check(held, Ms(0)),
                     "B with delay");
  // Five admitted by 200 ms would be one too many: 4 in [0, 200] is GCRA's.
  ExpectSameDecision(b->Check(plain, Ms(200)), one->Check(plain, Ms(200)),
                     "B at 200 ms");
}

TEST(SharedDelayTest, PeekReportsTheDelayAndChargesNothing) {
  FakeStore store;
  std::unique_ptr<SharedLimiter> shared =
      Process(store, Config({DelayedPolicy()}));
  ASSERT_NE(shared, nullptr);
  const Request r = Holdable(MakeRequest("GET", kSearch, "203.0.113.7"));
  ASSERT_TRUE(shared->Check(r, Ms(0)).allowed);
  ASSERT_TRUE(shared->Check(r, Ms(0)).allowed);
  for (int i = 0; i < 3; ++i) {
    const Decision peek = shared->Peek(r, Ms(0));
    ASSERT_TRUE(peek.allowed);
    EXPECT_EQ(peek.delay, milliseconds(100));
  }
  EXPECT_EQ(shared->Check(r, Ms(0)).delay, milliseconds(100));
}

}  // namespace
}  // namespace mxlimit
