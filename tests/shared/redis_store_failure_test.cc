// RedisStore when Redis misbehaves or is reached in other ways: scripts
// flushed, a restart, a frozen server, late replies, a full queue, many
// threads, a server down at start, AUTH and databases, a unix socket. The
// script's semantics are tested in redis_store_test.cc.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/internal/mutex.h"
#include "src/shared/redis/redis_store.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/redis_store_testing.h"
#include "tests/testing/sanitizers.h"

namespace mxlimit::internal {
namespace {

using mxlimit::testing::FormatTat;
using mxlimit::testing::kEpoch;
using mxlimit::testing::kSecond;
using mxlimit::testing::MakeOp;
using mxlimit::testing::RedisServer;
using mxlimit::testing::RedisStoreFixture;
using mxlimit::testing::WaitConnected;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

class RedisStoreFailureTest : public RedisStoreFixture {};

TEST_F(RedisStoreFailureTest, NoscriptAfterScriptFlushIsTransparent) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"ns", kSecond, 100}});
  ASSERT_EQ(Run(*store, op).status, StoreStatus::kOk);
  ASSERT_EQ(redis_->Command({"SCRIPT", "FLUSH"}), "OK");
  const StoreResult r = Run(*store, op);
  EXPECT_EQ(r.status, StoreStatus::kOk);
  EXPECT_EQ(r.lead[0], kSecond);
  EXPECT_EQ(store->counters().script_reloads, 1u);
  EXPECT_EQ(store->counters().ops_error, 0u);
  EXPECT_EQ(Run(*store, op).status, StoreStatus::kOk);
  EXPECT_EQ(store->counters().script_reloads, 1u);
}

TEST_F(RedisStoreFailureTest, PipelinedOpsAfterScriptFlushAllSucceed) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"nsp", kSecond, 1000}});
  ASSERT_EQ(Run(*store, op).status, StoreStatus::kOk);
  ASSERT_EQ(redis_->Command({"SCRIPT", "FLUSH"}), "OK");
  // Every op written before the reload gets NOSCRIPT and is resent after
  // it: one SCRIPT LOAD, no error.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(store->Post(op));
  const StoreResult r = Run(*store, op);
  EXPECT_EQ(r.status, StoreStatus::kOk);
  const auto give_up = steady_clock::now() + std::chrono::seconds(3);
  while (store->counters().in_flight > 0 && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  const StoreCounters c = store->counters();
  EXPECT_EQ(c.ops_ok, 52u);
  EXPECT_EQ(c.ops_error, 0u);
  EXPECT_EQ(c.script_reloads, 1u);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:nsp"}),
            FormatTat(kEpoch + 52 * kSecond));
}

TEST_F(RedisStoreFailureTest, RestartBumpsGenerationAndRecoversWithinASecond) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"rs", kSecond, 100}});
  ASSERT_EQ(Run(*store, op).status, StoreStatus::kOk);
  EXPECT_EQ(store->generation(), 0u);
  ASSERT_TRUE(redis_->Restart());
  const auto up = steady_clock::now();
  StoreResult r;
  while (steady_clock::now() - up < std::chrono::seconds(3)) {
    r = store->Execute(op, steady_clock::now() + milliseconds(50));
    if (r.status == StoreStatus::kOk) break;
    std::this_thread::sleep_for(milliseconds(1));
  }
  const auto recovered = steady_clock::now() - up;
  ASSERT_EQ(r.status, StoreStatus::kOk) << store->last_error();
  EXPECT_LT(recovered, std::chrono::seconds(1));
  EXPECT_EQ(r.lead[0], 0);  // The restart lost the bucket.
  EXPECT_EQ(store->generation(), 1u);
  EXPECT_GE(store->counters().reconnects, 1u);
}

TEST_F(RedisStoreFailureTest, FrozenServerTimesOutAtTheDeadline) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"frz", kSecond, 1000}});
  ASSERT_EQ(Run(*store, op).status, StoreStatus::kOk);
  redis_->Freeze();
  // How far past its deadline each call returned (an unavailable one: past
  // start + 5 ms, i.e. never).
  std::vector<std::chrono::nanoseconds> late;
  // How late a plain sleep to the same kind of deadline wakes, measured
  // between the calls: the scheduler's share, which no store can beat.
  std::vector<std::chrono::nanoseconds> sleep_late;
  int timeouts = 0;
  for (int i = 0; i < 150; ++i) {
    const auto sleep_deadline = steady_clock::now() + milliseconds(1);
    std::this_thread::sleep_until(sleep_deadline);
    sleep_late.push_back(steady_clock::now() - sleep_deadline);
    const auto start = steady_clock::now();
    const auto deadline = start + milliseconds(5);
    const StoreResult r = store->Execute(op, deadline);
    const auto end = steady_clock::now();
    // After a second of silence the connection is dropped: the op it
    // carried then fails (kError: it was sent, so it may have been applied),
    // and the next ones are unavailable at once. Both are as good as a
    // timeout here; only an answer would be wrong.
    ASSERT_TRUE(r.status == StoreStatus::kTimeout ||
                r.status == StoreStatus::kUnavailable ||
                r.status == StoreStatus::kError)
        << static_cast<int>(r.status) << ": " << store->last_error();
    timeouts += r.status == StoreStatus::kTimeout;
    late.push_back(end - deadline);
  }
  redis_->Thaw();
  std::sort(late.begin(), late.end());
  std::sort(sleep_late.begin(), sleep_late.end());
  const auto p50 = late[late.size() / 2], p90 = late[late.size() * 9 / 10],
             max = late.back();
  const auto sleep_p90 = sleep_late[sleep_late.size() * 9 / 10],
             sleep_max = sleep_late.back();
  std::printf(
      "frozen: %d timeouts; returned past the deadline by p50 %.3f ms, "
      "p90 %.3f ms, max %.3f ms (a plain sleep: p90 %.3f ms, max %.3f ms)\n",
      timeouts, p50.count() / 1e6, p90.count() / 1e6, max.count() / 1e6,
      sleep_p90.count() / 1e6, sleep_max.count() / 1e6);
  EXPECT_GT(timeouts, 100);
  // The wait itself ends at the deadline (a futex with an absolute
  // timeout); what exceeds it is the scheduler's wake-up latency. On a quiet
  // machine the max is ~0.2 ms; on this 2-core machine shared with other
  // builds a waking thread can wait several ms for a core. So the bounds are
  // 1 ms (p90) and 25 ms (max) beyond what a plain sleep suffered meanwhile.
  // Under a sanitizer the I/O thread's own work after the wake-up takes
  // several times longer, so only gross overruns fail there.
#if defined(MXLIMIT_TEST_SANITIZED)
  constexpr int kSlowdown = 5;
#else
  constexpr int kSlowdown = 1;
#endif
  EXPECT_LE(p90, kSlowdown * milliseconds(1) + 2 * sleep_p90);
  EXPECT_LE(max, milliseconds(25) + 2 * sleep_max);
  // Thawed, it answers again (after a reconnect if it was dropped).
  const auto give_up = steady_clock::now() + std::chrono::seconds(3);
  StoreResult r;
  while (steady_clock::now() < give_up) {
    r = store->Execute(op, steady_clock::now() + milliseconds(100));
    if (r.status == StoreStatus::kOk) break;
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_EQ(r.status, StoreStatus::kOk) << store->last_error();
}

class RecordingHandler : public LateReplyHandler {
 public:
  void OnLateReply(const StoreOp& op, const StoreResult& result) override {
    MutexLock lock(mu_);
    costs_.push_back(op.cost);
    ok_ = ok_ && result.status == StoreStatus::kOk;
  }
  std::vector<int64_t> costs() {
    MutexLock lock(mu_);
    return costs_;
  }
  bool ok() {
    MutexLock lock(mu_);
    return ok_;
  }

 private:
  Mutex mu_;
  std::vector<int64_t> costs_ ABSL_GUARDED_BY(mu_);
  bool ok_ ABSL_GUARDED_BY(mu_) = true;
};

TEST_F(RedisStoreFailureTest, LateRepliesReachTheHandler) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  RecordingHandler handler;
  store->SetLateReplyHandler(&handler);
  redis_->Freeze();
  for (int64_t cost = 1; cost <= 5; ++cost) {
    const StoreResult r = store->Execute(
        MakeOp(StoreOpKind::kCheck, cost, kEpoch, {{"late", kSecond, 100}}),
        steady_clock::now() + milliseconds(2));
    EXPECT_EQ(r.status, StoreStatus::kTimeout);
  }
  redis_->Thaw();
  const auto give_up = steady_clock::now() + std::chrono::seconds(3);
  while (handler.costs().size() < 5 && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_THAT(handler.costs(), ::testing::ElementsAre(1, 2, 3, 4, 5));
  EXPECT_TRUE(handler.ok());
  EXPECT_EQ(store->counters().late_replies, 5u);
  EXPECT_EQ(store->counters().ops_timeout, 5u);
  // Redis applied them all.
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:late"}),
            FormatTat(kEpoch + 15 * kSecond));
  EXPECT_EQ(store->counters().in_flight, 0u);
}

TEST_F(RedisStoreFailureTest, FullQueueIsUnavailableAtOnce) {
  StoreOptions o;
  o.max_in_flight = 4;
  std::unique_ptr<RedisStore> store = NewStore(o);
  ASSERT_NE(store, nullptr);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"full", kSecond, 100}});
  redis_->Freeze();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(store->Post(op));
  EXPECT_FALSE(store->Post(op));
  const auto start = steady_clock::now();
  const StoreResult r = store->Execute(op, start + std::chrono::seconds(1));
  const auto took = steady_clock::now() - start;
  EXPECT_EQ(r.status, StoreStatus::kUnavailable);
  EXPECT_LT(took, milliseconds(1));
  EXPECT_EQ(store->counters().in_flight, 4u);
  EXPECT_EQ(store->counters().ops_unavailable, 2u);
  redis_->Thaw();
  const auto give_up = steady_clock::now() + std::chrono::seconds(3);
  while (store->counters().in_flight > 0 && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(store->counters().in_flight, 0u);
  EXPECT_EQ(store->counters().ops_ok, 4u);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:full"}),
            FormatTat(kEpoch + 4 * kSecond));
}

TEST_F(RedisStoreFailureTest, SixteenThreadsGetTheirOwnReplies) {
  StoreOptions o;
  o.connections = 2;
  std::unique_ptr<RedisStore> store = NewStore(o);
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 16, kOps = 500;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread's bucket: the i-th check finds lead i * T, so a reply
      // matched to the wrong caller shows.
      const StoreOp op =
          MakeOp(StoreOpKind::kCheck, 1, kEpoch,
                 {{"thr" + std::to_string(t), kSecond, 1'000'000}});
      for (int i = 0; i < kOps; ++i) {
        const StoreResult r =
            store->Execute(op, steady_clock::now() + std::chrono::seconds(5));
        if (r.status != StoreStatus::kOk || !r.allowed ||
            r.lead[0] != i * kSecond) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const StoreCounters c = store->counters();
  EXPECT_EQ(c.ops_ok, uint64_t{kThreads} * kOps);
  EXPECT_EQ(c.in_flight, 0u);
}

TEST_F(RedisStoreFailureTest, DownAtStartThenConnects) {
  const int port = redis_->port();
  redis_->Kill();
  StoreOptions o;
  o.url = "redis://127.0.0.1:" + std::to_string(port);
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
  ASSERT_TRUE(store.ok()) << store.status();
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"down", kSecond, 5}});
  const auto start = steady_clock::now();
  EXPECT_EQ((*store)->Execute(op, start + std::chrono::seconds(1)).status,
            StoreStatus::kUnavailable);
  EXPECT_LT(steady_clock::now() - start, milliseconds(1));
  EXPECT_FALSE((*store)->Post(op));
  const auto give_up = steady_clock::now() + std::chrono::seconds(2);
  while ((*store)->last_error().empty() && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_THAT((*store)->last_error(), HasSubstr("refused"));
  ASSERT_TRUE(redis_->Restart());
  ASSERT_TRUE(WaitConnected(**store, milliseconds(3000)));
  EXPECT_EQ(Run(**store, op).status, StoreStatus::kOk);
}

TEST(RedisStoreAuthTest, PasswordUserAndDatabase) {
  std::string why;
  auto redis = RedisServer::Start({{"--requirepass", "pw1", "--user", "alice",
                                    "on", ">pw2", "~*", "&*", "+@all"}},
                                  &why);
  if (redis == nullptr) GTEST_SKIP() << why;
  redis->set_password("pw1");
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"auth", kSecond, 5}});
  const std::string hostport = "127.0.0.1:" + std::to_string(redis->port());
  for (const std::string& url : {"redis://:pw1@" + hostport + "/3",
                                 "redis://alice:pw2@" + hostport + "/4"}) {
    StoreOptions o;
    o.url = url;
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(WaitConnected(**store))
        << url << ": " << (*store)->last_error();
    EXPECT_EQ((*store)
                  ->Execute(op, steady_clock::now() + std::chrono::seconds(2))
                  .status,
              StoreStatus::kOk);
  }
  EXPECT_EQ(redis->Command({"EXISTS", "mxl:1:t:auth"}, 3), "1");
  EXPECT_EQ(redis->Command({"EXISTS", "mxl:1:t:auth"}, 4), "1");
  EXPECT_EQ(redis->Command({"EXISTS", "mxl:1:t:auth"}, 0), "0");

  StoreOptions o;
  o.url = "redis://:wrong@" + hostport;
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
  ASSERT_TRUE(store.ok());
  const auto give_up = steady_clock::now() + std::chrono::seconds(2);
  while ((*store)->last_error().empty() && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_THAT((*store)->last_error(), HasSubstr("AUTH failed"));
  EXPECT_FALSE((*store)->counters().connected);
}

TEST_F(RedisStoreFailureTest, UnixSocketAndDatabase) {
  StoreOptions o;
  o.url = "unix://" + redis_->unix_path() + "?db=5";
  std::unique_ptr<RedisStore> store = NewStore(o);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Run(*store,
                MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"unix", kSecond, 5}}))
                .status,
            StoreStatus::kOk);
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:unix"}, 5), "1");
}

}  // namespace
}  // namespace mxlimit::internal
