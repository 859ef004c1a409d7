// SharedLimiter against a real redis-server it starts itself (skipped
// without one): the bundled Synapse log round-robin over four processes
// decides exactly as one Limiter, and approximate sharing keeps its debt in
// Redis as it does in the in-process store.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/shared_limiter.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/shared_store_testing.h"

namespace mxlimit {
namespace {

using testing::MakePolicy;
using testing::MakeRequest;
using testing::RedisServer;

class SharedLimiterRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    redis_ = RedisServer::Start({}, &why);
    if (redis_ == nullptr) GTEST_SKIP() << why;
  }

  LimiterConfig Config() const {
    LimiterConfig config;  // The built-in policies.
    config.store.url = redis_->url();
    config.store.key_secret = "redis-test-secret-0123456789";
    config.store.clock = StoreOptions::Clock::kCaller;
    config.store.timeout = std::chrono::seconds(2);  // Loaded CI machines.
    return config;
  }

  std::vector<std::unique_ptr<SharedLimiter>> Processes(
      int n, const LimiterConfig& config) {
    std::vector<std::unique_ptr<SharedLimiter>> out;
    for (int i = 0; i < n; ++i) {
      auto l = SharedLimiter::Create(config, 2);
      EXPECT_TRUE(l.ok()) << l.status();
      if (!l.ok()) return {};
      for (int k = 0; k < 500 && !(*l)->StoreStats().connected; ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_TRUE((*l)->StoreStats().connected);
      out.push_back(*std::move(l));
    }
    return out;
  }

  std::unique_ptr<RedisServer> redis_;
};

TEST_F(SharedLimiterRedisTest, SampleLogRoundRobinOverFourMatchesOneLimiter) {
  LimiterConfig config = Config();
  config.store.local_denial = false;  // Exact waits too.
  auto procs = Processes(4, config);
  ASSERT_EQ(procs.size(), 4u);
  auto one = Limiter::Create(LimiterConfig{});
  ASSERT_TRUE(one.ok());
  size_t n = 0, denied = 0;
  ASSERT_TRUE(testing::ForEachSampleRequest(
      [&](const Request& r, MonotonicTime now, const std::string& line) {
        const Decision a = procs[n % 4]->Check(r, now);
        const Decision b = (*one)->Check(r, now);
        ++n;
        EXPECT_EQ(a.allowed, b.allowed) << "line " << n << ": " << line;
        if (!b.allowed) {
          ++denied;
          EXPECT_EQ(a.limited_by, b.limited_by) << "line " << n;
          EXPECT_EQ(a.policy, b.policy) << "line " << n;
          EXPECT_EQ(a.retry_after, b.retry_after) << "line " << n;
        }
        return !::testing::Test::HasFailure();  // Stop at the first.
      }));
  EXPECT_GT(n, 20000u);
  EXPECT_GT(denied, 0u);
  uint64_t fallbacks = 0;
  for (auto& p : procs) {
    const SharedStoreStats s = p->StoreStats();
    fallbacks += s.fallback_timeout + s.fallback_error +
                 s.fallback_unavailable + s.fallback_breaker_open;
  }
  EXPECT_EQ(fallbacks, 0u);
}

TEST_F(SharedLimiterRedisTest, ApproximateDebtLivesInRedis) {
  LimiterConfig config = Config();
  config.builtin_policies = false;
  Policy cap = MakePolicy("cap", "*", Scope::kIp, 100, TimeUnit::kSecond, 10);
  cap.sharing = Sharing::kApproximate;
  config.policies = {cap};
  auto procs = Processes(3, config);
  ASSERT_EQ(procs.size(), 3u);
  const Request r = MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.9");
  const MonotonicTime t0 = MonotonicTime::FromNanoseconds(1'000'000'000);
  for (auto& p : procs) {
    int allowed = 0;
    for (int i = 0; i < 15; ++i) allowed += p->Check(r, t0).allowed;
    EXPECT_EQ(allowed, 10);
  }
  for (auto& p : procs) p->SyncNow(t0);
  // 30 charges of 10 ms: the last process to sync learns all of them, 200 ms
  // past tau, and waits them out.
  const Decision d = procs[2]->Check(r, t0);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after.count(), 300'000'000 + 10'000'000 - 100'000'000);
  EXPECT_GT(procs[2]->StoreStats().sync_batches, 0u);
}

}  // namespace
}  // namespace mxlimit
