// Proves a SharedLimiter's check path allocates nothing in steady state:
// the store round trip (here the in-process FakeStore), the local denial,
// the fallback with scaled rates and a refund. This binary replaces the
// global operator new with a counting one, so it lives apart.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/shared_limiter.h"
#include "src/shared/fake_store.h"
#include "tests/testing/counting_new.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::MakeRequest;

TEST(SharedLimiterAllocationTest, CheckPeekChargeAndFallbackAllocateNothing) {
  LimiterConfig config;  // The built-in policies.
  config.store.key_secret = "a-secret-of-at-least-16-bytes";
  config.store.clock = StoreOptions::Clock::kCaller;
  config.store.fallback_share = 0.5;
  // An approximate cap too: its charges queue, and syncs run inline at the
  // caller's time (every 50 ms of it).
  Policy cap;
  cap.name = "approximate-cap";
  cap.match = {"*"};
  cap.layer = "approx";
  cap.sharing = Sharing::kApproximate;
  cap.rate = *Rate::Create(100, TimeUnit::kSecond, 500);
  config.policies.push_back(cap);
  auto store = std::make_unique<internal::FakeStore>();
  internal::FakeStore& fake = *store;
  auto limiter = SharedLimiter::CreateWithStore(config, std::move(store), 2);
  ASSERT_TRUE(limiter.ok()) << limiter.status();

  std::vector<std::string> users, ips;
  for (int i = 0; i < 50; ++i) {
    users.push_back("@user" + std::to_string(i) + ":example.org");
    ips.push_back("2001:db8:" + std::to_string(i) + "::1");
  }
  users.push_back(std::string(65'536, 'u'));  // An absurd user ID.
  const std::vector<std::string> targets = {
      "/_matrix/client/v3/sync?since=s1",
      "/_matrix/client/v3/login",
      "/_matrix/client/r0/rooms/!a%3Aexample.org/send/m.room.message/t1",
      "/wp-admin/../../etc/passwd",
  };
  std::vector<Request> requests;
  for (size_t i = 0; i < 1000; ++i) {
    requests.push_back(
        MakeRequest(i % 2 ? "PUT" : "POST", targets[i % targets.size()],
                    ips[i % ips.size()], users[i % users.size()]));
  }
  auto run = [&](int64_t& t) {
    for (const Request& r : requests) {
      (*limiter)->Check(r, MonotonicTime::FromNanoseconds(t++ * 10'000'000));
      (*limiter)->Peek(r, MonotonicTime::FromNanoseconds(t * 10'000'000));
      (*limiter)->Charge(r, MonotonicTime::FromNanoseconds(t * 10'000'000));
    }
  };
  // Warm up: the store's table and the mirror reach their working size.
  int64_t t = 0;
  run(t);
  t = 0;
  const long before = ::mxlimit::testing::AllocationCount();
  run(t);
  fake.SetDown(true);  // Fallback, then the breaker.
  run(t);
  EXPECT_EQ(::mxlimit::testing::AllocationCount() - before, 0);
  const SharedStoreStats s = (*limiter)->StoreStats();
  EXPECT_GT(s.store_decisions, 0u);
  EXPECT_GT(s.local_denials, 0u);
  EXPECT_GT(s.fallback_unavailable + s.fallback_breaker_open, 0u);
  EXPECT_GT(s.sync_batches, 0u);
}

}  // namespace
}  // namespace mxlimit
