// SharedLimiter against a real redis-server it starts itself (skipped
// without one): the bundled Synapse log round-robin over four processes
// decides exactly as one Limiter, and approximate sharing keeps its debt in
// Redis as it does in the in-process store.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/shared_limiter.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/sanitizers.h"
#include "tests/testing/shared_store_testing.h"

namespace mxlimit {
namespace {

using testing::MakePolicy;
using testing::MakeRequest;
using testing::RedisServer;

// Time bounds hold on a plain build; a sanitizer slows every step several
// times over, so there only gross stalls fail.
#if defined(MXLIMIT_TEST_SANITIZED)
constexpr int kSlowdown = 5;
#else
constexpr int kSlowdown = 1;
#endif

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
  const auto [n, denied] =
      mxlimit::testing::ExpectSampleDecidedAsOneLimiter(procs);
  EXPECT_GT(n, 20000u);
  EXPECT_GT(denied, 0u);
  EXPECT_EQ(mxlimit::testing::TotalFallbacks(procs), 0u);
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

// Redis frozen under load (SIGSTOP): every check still answers by its
// deadline, the breaker opens after five timeouts, and within about a
// second of SIGCONT the store decides again. Then killed and restarted, and
// its scripts flushed: no check ever fails.
TEST_F(SharedLimiterRedisTest, FrozenKilledAndFlushedRedisCostsNoError) {
  LimiterConfig config = Config();
  config.store.clock = StoreOptions::Clock::kStore;
  const auto timeout = std::chrono::milliseconds(5) * kSlowdown;
  config.store.timeout = timeout;
  auto procs = Processes(1, config);
  ASSERT_EQ(procs.size(), 1u);
  SharedLimiter& l = *procs[0];
  int next_user = 0;
  // A check of a fresh user: the built-in catch-alls send it to the store.
  auto check = [&] {
    const std::string user =
        "@u" + std::to_string(next_user++) + ":example.org";
    const Request r =
        MakeRequest("GET", "/_matrix/client/v3/sync", "192.0.2.44", user);
    const auto start = std::chrono::steady_clock::now();
    const Decision d = l.Check(r, MonotonicTime::FromSteadyClock());
    EXPECT_TRUE(d.allowed);
    return std::chrono::steady_clock::now() - start;
  };
  for (int i = 0; i < 20; ++i) check();
  // Counted from here: a slow machine may have timed out a warm-up check.
  const uint64_t timeouts_before = l.StoreStats().fallback_timeout;

  redis_->Freeze();
  std::chrono::steady_clock::duration longest{};
  for (int i = 0; i < 50; ++i) longest = std::max(longest, check());
  SharedStoreStats s = l.StoreStats();
  EXPECT_TRUE(s.breaker_open);
  EXPECT_EQ(s.fallback_timeout - timeouts_before, 5u)
      << "the breaker opens after 5 timeouts";
  // The deadline is 5 ms; a 2-core CI machine may add a scheduling delay
  // on top (the bench measures the bound on a quiet one).
  EXPECT_LT(longest, timeout + std::chrono::milliseconds(25) * kSlowdown);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (int i = 0; i < 5; ++i) check();

  redis_->Thaw();
  const auto thawed = std::chrono::steady_clock::now();
  const uint64_t decided = l.StoreStats().store_decisions;
  while (l.StoreStats().store_decisions == decided &&
         std::chrono::steady_clock::now() - thawed < std::chrono::seconds(5)) {
    check();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto back = std::chrono::steady_clock::now() - thawed;
  EXPECT_LT(back, std::chrono::milliseconds(1100) * kSlowdown)
      << "exact again too late";

  // Killed and restarted on the same port; then SCRIPT FLUSH.
  redis_->Kill();
  for (int i = 0; i < 20; ++i) check();
  ASSERT_TRUE(redis_->Restart());
  const auto restarted = std::chrono::steady_clock::now();
  const uint64_t before_restart = l.StoreStats().store_decisions;
  while (l.StoreStats().store_decisions == before_restart &&
         std::chrono::steady_clock::now() - restarted <
             std::chrono::seconds(5)) {
    check();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - restarted,
            std::chrono::milliseconds(1100) * kSlowdown);
  EXPECT_EQ(l.StoreStats().mirror_resets, 1u);
  redis_->Command({"SCRIPT", "FLUSH"});
  const SharedStoreStats before_flush = l.StoreStats();
  for (int i = 0; i < 10; ++i) check();
  const SharedStoreStats after_flush = l.StoreStats();
  // A NOSCRIPT reply is answered by loading the script and sending the call
  // again, so it never shows as an error or as the store being unavailable.
  // A check the loaded machine kept past its 5 ms deadline is a timeout,
  // whatever the script: those are allowed, but only a few.
  EXPECT_EQ(after_flush.fallback_error, before_flush.fallback_error)
      << "NOSCRIPT must not cost a decision";
  EXPECT_EQ(after_flush.fallback_unavailable, before_flush.fallback_unavailable)
      << "NOSCRIPT must not cost a decision";
  const uint64_t timed_out =
      after_flush.fallback_timeout - before_flush.fallback_timeout;
  EXPECT_EQ(
      after_flush.store_decisions - before_flush.store_decisions + timed_out,
      10u);
  EXPECT_LE(timed_out, 3u);
  EXPECT_GE(after_flush.script_reloads, 1u);
}

}  // namespace
}  // namespace mxlimit
