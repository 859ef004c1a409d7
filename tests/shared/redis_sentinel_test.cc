// RedisStore behind Redis Sentinel (redis-sentinel://, issue #35 item 2),
// against real Sentinels watching a primary and its replica: the primary
// found, a failover followed within 2 s of the switch with every op
// answered by its deadline meanwhile, and a demoted primary never written.

#include "tests/testing/redis_sentinel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/options.h"
#include "src/shared/redis/redis_store.h"
#include "tests/testing/redis_store_testing.h"

namespace mxlimit::internal {
namespace {

using mxlimit::testing::kEpoch;
using mxlimit::testing::kSecond;
using mxlimit::testing::MakeOp;
using mxlimit::testing::SentinelSet;
using mxlimit::testing::WaitConnected;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

class RedisSentinelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    set_ = SentinelSet::Start(&why);
    if (set_ == nullptr) GTEST_SKIP() << why;
    StoreOptions o;
    o.url = set_->url();
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(WaitConnected(*store_)) << store_->last_error();
  }

  StoreResult Check(const std::string& bucket, milliseconds deadline) {
    return store_->Execute(
        MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{bucket, kSecond, 1000000}}),
        steady_clock::now() + deadline);
  }

  // Ops every millisecond, each with a 5 ms deadline, until one succeeds on
  // another Redis than before (the store's generation moved: a new run_id)
  // after the Sentinels named `new_port`; returns how long after that
  // switch it came (or -1 ms when it never did in 20 s). Every op must come
  // back by its deadline.
  milliseconds OpsUntilServedBy(int new_port, uint64_t generation) {
    const auto give_up = steady_clock::now() + std::chrono::seconds(20);
    steady_clock::time_point switched{};
    int late = 0;
    for (int i = 0; steady_clock::now() < give_up; ++i) {
      if (switched == steady_clock::time_point{} && i % 20 == 0 &&
          set_->PrimaryPort() == new_port) {
        switched = steady_clock::now();
      }
      const auto start = steady_clock::now();
      const StoreResult r = Check("load", milliseconds(5));
      // 5 ms, with room for a loaded 2-core machine's scheduler; waiting for
      // a connect, a handshake or a Sentinel would take 300 ms or more.
      if (steady_clock::now() - start > milliseconds(50)) ++late;
      if (r.status == StoreStatus::kOk &&
          switched != steady_clock::time_point{} &&
          store_->generation() != generation) {
        EXPECT_EQ(late, 0) << "ops waited past their deadline";
        return std::chrono::duration_cast<milliseconds>(steady_clock::now() -
                                                        switched);
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    return milliseconds(-1);
  }

  std::unique_ptr<SentinelSet> set_;
  std::unique_ptr<RedisStore> store_;
};

TEST_F(RedisSentinelTest, WritesGoToThePrimaryTheSentinelsName) {
  ASSERT_EQ(Check("found", milliseconds(2000)).status, StoreStatus::kOk)
      << store_->last_error();
  EXPECT_EQ(set_->primary().Command({"EXISTS", "mxl:1:t:found"}), "1");
  // The replica has it only by replication: it answers READONLY to writes.
  EXPECT_THAT(set_->replica().Command({"SET", "x", "1"}),
              HasSubstr("READONLY"));
}

TEST_F(RedisSentinelTest, APrimaryKilledUnderLoadIsReplacedWithinTwoSeconds) {
  const int new_port = set_->replica().port();
  ASSERT_EQ(Check("before", milliseconds(2000)).status, StoreStatus::kOk);
  const uint64_t generation = store_->generation();
  set_->primary().Kill();
  const milliseconds after = OpsUntilServedBy(new_port, generation);
  ASSERT_GE(after.count(), 0)
      << "no op succeeded on the new primary; " << store_->last_error();
  EXPECT_LE(after, milliseconds(2000));
  std::printf("served by the new primary %lld ms after the switch\n",
              static_cast<long long>(after.count()));
  ASSERT_EQ(Check("after", milliseconds(2000)).status, StoreStatus::kOk);
  EXPECT_EQ(set_->replica().Command({"EXISTS", "mxl:1:t:after"}), "1");
}

TEST_F(RedisSentinelTest, AManualFailoverMovesEveryWriteToTheNewPrimary) {
  const int new_port = set_->replica().port();
  ASSERT_EQ(Check("before", milliseconds(2000)).status, StoreStatus::kOk);
  const uint64_t generation = store_->generation();
  // Both stay up; the old primary goes on taking writes until the
  // Sentinels get round to making it a replica.
  ASSERT_TRUE(set_->Failover());
  const milliseconds after = OpsUntilServedBy(new_port, generation);
  ASSERT_GE(after.count(), 0) << store_->last_error();
  EXPECT_LE(after, milliseconds(2000));
  std::printf("served by the new primary %lld ms after the switch\n",
              static_cast<long long>(after.count()));
  ASSERT_EQ(Check("after-failover", milliseconds(2000)).status,
            StoreStatus::kOk);
  EXPECT_EQ(set_->replica().Command({"EXISTS", "mxl:1:t:after-failover"}), "1");
}

// A Sentinel that names a replica as the primary (a stale or lying
// Sentinel): the store checks the role itself and never writes there.
class LyingSentinel {
 public:
  explicit LyingSentinel(int replica_port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    const std::string port = std::to_string(replica_port);
    reply_ = "*2\r\n$9\r\n127.0.0.1\r\n$" + std::to_string(port.size()) +
             "\r\n" + port + "\r\n";
    thread_ = std::thread([this] { Serve(); });
  }
  ~LyingSentinel() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  void Serve() {
    for (;;) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[512];
      // One command per connection is all the resolver sends before it
      // reuses it; answer every read.
      while (recv(c, buf, sizeof buf, 0) > 0) {
        if (send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL) < 0) break;
      }
      close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::string reply_;
  std::thread thread_;
};

TEST(RedisSentinelRoleTest, AReplicaNamedAsThePrimaryIsNeverWritten) {
  std::string why;
  auto primary = mxlimit::testing::RedisServer::Start({}, &why);
  if (primary == nullptr) GTEST_SKIP() << why;
  auto replica = mxlimit::testing::RedisServer::Start(
      {{"--replicaof", "127.0.0.1", std::to_string(primary->port())}}, &why);
  ASSERT_NE(replica, nullptr) << why;
  LyingSentinel liar(replica->port());
  StoreOptions o;
  o.url =
      "redis-sentinel://127.0.0.1:" + std::to_string(liar.port()) + "/mymaster";
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE(WaitConnected(**store, milliseconds(1500)));
  EXPECT_THAT((*store)->last_error(), HasSubstr("is a replica"));
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"never", kSecond, 5}});
  EXPECT_EQ((*store)->Execute(op, steady_clock::now() + milliseconds(5)).status,
            StoreStatus::kUnavailable);
}

TEST(RedisSentinelCreateTest, NoSentinelAnsweringIsAnErrorAndNoWait) {
  StoreOptions o;
  o.url = "redis-sentinel://127.0.0.1:1,127.0.0.1:2/mymaster";
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
  ASSERT_TRUE(store.ok()) << store.status();
  const auto start = steady_clock::now();
  EXPECT_EQ(
      (*store)
          ->Execute(MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"x", kSecond, 5}}),
                    start + milliseconds(5))
          .status,
      StoreStatus::kUnavailable);
  EXPECT_LT(steady_clock::now() - start, milliseconds(6));
  const auto give_up = steady_clock::now() + std::chrono::seconds(3);
  while ((*store)->last_error().empty() && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_THAT((*store)->last_error(), HasSubstr("no primary yet"));
}

}  // namespace
}  // namespace mxlimit::internal
