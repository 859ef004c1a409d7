// SharedLimiter from many threads at once (run under ThreadSanitizer by
// scripts/ci/tsan): exact checks through the store, local denials,
// approximate charges queued and synced by the sync thread, peeks, refunds
// and reloads, all concurrently, over the in-process store.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/shared_limiter.h"
#include "src/shared/fake_store.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using testing::MakePolicy;
using testing::MakeRequest;

LimiterConfig Config(int64_t approximate_rate) {
  LimiterConfig config;  // The built-in policies, exact.
  config.store.key_secret = "threads-test-secret-0123456789";
  config.store.sync_interval = std::chrono::milliseconds(5);
  Policy cap = MakePolicy("approximate-cap", "*", Scope::kUser,
                          approximate_rate, TimeUnit::kSecond, 100);
  cap.layer = "approx";
  cap.sharing = Sharing::kApproximate;
  config.policies.push_back(cap);
  return config;
}

TEST(SharedLimiterThreadsTest, ChecksSyncsAndReloadsRaceFree) {
  auto store = std::make_unique<internal::FakeStore>();
  internal::FakeStore& fake = *store;
  auto limiter =
      SharedLimiter::CreateWithStore(Config(50), std::move(store), 4);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  SharedLimiter& l = **limiter;

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> allowed{0}, denied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::string> users;
      for (int u = 0; u < 8; ++u) {
        users.push_back("@u" + std::to_string((t * 3 + u) % 20) +
                        ":example.org");
      }
      // Until the reloads are done, and at least 2000 requests.
      for (int i = 0; i < 2000 || !stop.load(); ++i) {
        const Request r = MakeRequest(
            i % 3 ? "GET" : "POST",
            i % 3 ? "/_matrix/client/v3/sync" : "/_matrix/client/v3/login",
            i % 2 ? "192.0.2.1" : "198.51.100.2", users[i % users.size()]);
        const MonotonicTime now = MonotonicTime::FromSteadyClock();
        if (i % 50 == 7) {
          l.Peek(r, now);
        } else if (i % 97 == 11) {
          Request refund = r;
          refund.cost = -1;
          l.Charge(refund, now);
        } else {
          (l.Check(r, now).allowed ? allowed : denied).fetch_add(1);
        }
      }
    });
  }
  threads.emplace_back([&] {
    // Reloads that keep the policies, and one store restart.
    for (int i = 0; i < 20; ++i) {
      EXPECT_TRUE(l.Reload(Config(50)).ok());
      if (i == 10) fake.Restart();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop = true;
  });
  for (std::thread& th : threads) th.join();
  const SharedStoreStats s = l.StoreStats();
  EXPECT_GT(allowed.load(), 0u);
  EXPECT_GT(denied.load(), 0u);  // The login budgets ran out.
  EXPECT_GT(s.store_decisions, 0u);
  EXPECT_GT(s.local_denials, 0u);
  EXPECT_GT(s.sync_batches, 0u);
  EXPECT_EQ(s.mirror_resets, 1u);
}

}  // namespace
}  // namespace mxlimit
