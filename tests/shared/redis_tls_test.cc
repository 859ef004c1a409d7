// RedisStore over TLS (rediss://, issue #35 item 1) against a real
// redis-server with a TLS port and certificates the test makes: the same
// answers as plain TCP, the server always verified (CA, name), client
// certificates, a handshake that never finishes, restarts, many threads.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/options.h"
#include "src/shared/redis/redis_store.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/redis_store_testing.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"

namespace mxlimit::internal {
namespace {

using mxlimit::testing::kEpoch;
using mxlimit::testing::kSecond;
using mxlimit::testing::MakeOp;
using mxlimit::testing::RedisServer;
using mxlimit::testing::WaitConnected;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

class RedisTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = mxlimit::testing::MakeTempDir("mxlimit-tls-");
    std::string why;
    if (!mxlimit::testing::MakeTestCertificates(dir_, &why)) {
      GTEST_SKIP() << why;
    }
  }
  void TearDown() override {
    redis_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A server with a TLS port; false (and the test skipped) without
  // redis-server.
  bool StartRedis(std::string cert = "server",
                  std::string auth_clients = "no") {
    RedisServer::Options o;
    o.tls_dir = dir_;
    o.tls_cert = std::move(cert);
    o.tls_auth_clients = std::move(auth_clients);
    std::string why;
    redis_ = RedisServer::Start(o, &why);
    if (redis_ == nullptr) {
      ADD_FAILURE() << why;  // Certificates made, but no server: say so.
      return false;
    }
    return true;
  }

  StoreOptions TlsOptions() const {
    StoreOptions o;
    o.url = redis_->tls_url();
    o.tls.ca_file = dir_ + "/ca.crt";
    return o;
  }

  static std::unique_ptr<RedisStore> Create(const StoreOptions& o) {
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // The first connection error the store reports, waiting up to 3 s.
  static std::string FirstError(const RedisStore& store) {
    const auto give_up = steady_clock::now() + std::chrono::seconds(3);
    while (store.last_error().empty() && steady_clock::now() < give_up) {
      std::this_thread::sleep_for(milliseconds(2));
    }
    return store.last_error();
  }

  static StoreResult Run(Store& store, const StoreOp& op) {
    return store.Execute(op, steady_clock::now() + std::chrono::seconds(2));
  }

  std::string dir_;
  std::unique_ptr<RedisServer> redis_;
};

TEST_F(RedisTlsTest, DecidesExactlyAsPlainTcp) {
  if (!StartRedis()) return;
  std::unique_ptr<RedisStore> tls = Create(TlsOptions());
  StoreOptions plain_options;
  plain_options.url = redis_->url();
  std::unique_ptr<RedisStore> plain = Create(plain_options);
  ASSERT_NE(tls, nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_TRUE(WaitConnected(*tls)) << tls->last_error();
  ASSERT_TRUE(WaitConnected(*plain)) << plain->last_error();
  // The same ops on twin buckets: the same answers and leads.
  for (int i = 0; i < 40; ++i) {
    const int64_t now = kEpoch + i * (kSecond / 10);
    const StoreOp a =
        MakeOp(StoreOpKind::kCheck, 1, now, {{"over-tls", kSecond, 5}});
    const StoreOp b =
        MakeOp(StoreOpKind::kCheck, 1, now, {{"over-tcp", kSecond, 5}});
    const StoreResult ra = Run(*tls, a);
    const StoreResult rb = Run(*plain, b);
    ASSERT_EQ(ra.status, StoreStatus::kOk) << tls->last_error();
    ASSERT_EQ(rb.status, StoreStatus::kOk) << plain->last_error();
    EXPECT_EQ(ra.allowed, rb.allowed) << i;
    EXPECT_EQ(ra.lead[0], rb.lead[0]) << i;
  }
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:over-tls"}), "1");
  EXPECT_EQ(tls->counters().ops_ok, 40u);
}

TEST_F(RedisTlsTest, ThePortSpeaksOnlyTls) {
  if (!StartRedis()) return;
  // A plain client at the TLS port never gets a reply: the check is why
  // the other tests' traffic went over TLS.
  StoreOptions o;
  o.url = "redis://127.0.0.1:" + std::to_string(redis_->tls_port());
  std::unique_ptr<RedisStore> store = Create(o);
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(WaitConnected(*store, milliseconds(1500)));
  EXPECT_FALSE(FirstError(*store).empty());
}

TEST_F(RedisTlsTest, AServerTheCaDidNotSignIsRefusedAndChecksFallBackAtOnce) {
  if (!StartRedis()) return;
  StoreOptions o = TlsOptions();
  o.tls.ca_file = dir_ + "/other-ca.crt";
  std::unique_ptr<RedisStore> store = Create(o);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(FirstError(*store), HasSubstr("certificate"));
  EXPECT_FALSE(store->counters().connected);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"x", kSecond, 5}});
  const auto start = steady_clock::now();
  EXPECT_EQ(store->Execute(op, start + milliseconds(5)).status,
            StoreStatus::kUnavailable);
  EXPECT_LT(steady_clock::now() - start, milliseconds(6));
  // Nothing was written through the refused connection.
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:x"}), "0");
  // The right CA, and traffic flows.
  std::unique_ptr<RedisStore> good = Create(TlsOptions());
  ASSERT_TRUE(WaitConnected(*good)) << good->last_error();
  EXPECT_EQ(Run(*good, op).status, StoreStatus::kOk);
}

TEST_F(RedisTlsTest, TheCertificateMustNameTheHost) {
  if (!StartRedis("wrong-name")) return;
  std::unique_ptr<RedisStore> store = Create(TlsOptions());
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(FirstError(*store), HasSubstr("certificate"));
  EXPECT_FALSE(store->counters().connected);
}

TEST_F(RedisTlsTest, ADnsNameIsVerifiedAndSent) {
  if (!StartRedis()) return;
  // localhost: the certificate's DNS name (SNI and verification), not
  // its IP address.
  StoreOptions o = TlsOptions();
  o.url = "rediss://localhost:" + std::to_string(redis_->tls_port());
  std::unique_ptr<RedisStore> store = Create(o);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(WaitConnected(*store)) << store->last_error();
  EXPECT_EQ(
      Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"dns", kSecond, 5}}))
          .status,
      StoreStatus::kOk);
}

TEST_F(RedisTlsTest, ClientCertificatesWhenRedisRequiresThem) {
  if (!StartRedis("server", "yes")) return;
  std::unique_ptr<RedisStore> without = Create(TlsOptions());
  ASSERT_NE(without, nullptr);
  EXPECT_FALSE(WaitConnected(*without, milliseconds(1500)));
  EXPECT_FALSE(FirstError(*without).empty());

  StoreOptions o = TlsOptions();
  o.tls.cert_file = dir_ + "/client.crt";
  o.tls.key_file = dir_ + "/client.key";
  std::unique_ptr<RedisStore> with = Create(o);
  ASSERT_NE(with, nullptr);
  ASSERT_TRUE(WaitConnected(*with)) << with->last_error();
  EXPECT_EQ(Run(*with, MakeOp(StoreOpKind::kCheck, 1, kEpoch,
                              {{"client-cert", kSecond, 5}}))
                .status,
            StoreStatus::kOk);
}

TEST_F(RedisTlsTest, BadFilesAreErrorsAtCreateNamingTheOption) {
  StoreOptions o;
  o.url = "rediss://127.0.0.1:1";
  o.tls.ca_file = dir_ + "/missing.crt";
  absl::StatusOr<std::unique_ptr<RedisStore>> s = RedisStore::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("store.tls.ca_file: " + dir_ + "/missing.crt"));
  o.tls.ca_file = dir_ + "/ca.crt";
  o.tls.cert_file = dir_ + "/client.crt";
  o.tls.key_file = dir_ + "/server.key";  // Not the certificate's key.
  s = RedisStore::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("store.tls.key_file"));
  o.tls.cert_file = dir_ + "/openssl.log";  // Not PEM.
  s = RedisStore::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("store.tls.cert_file"));
}

TEST_F(RedisTlsTest, AHandshakeThatNeverEndsTimesOutAndNothingWaitsForIt) {
  if (!StartRedis()) return;
  redis_->Freeze();  // The kernel accepts; nobody answers the hello.
  std::unique_ptr<RedisStore> store = Create(TlsOptions());
  ASSERT_NE(store, nullptr);
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"frozen", kSecond, 5}});
  const auto start = steady_clock::now();
  EXPECT_EQ(store->Execute(op, start + milliseconds(5)).status,
            StoreStatus::kUnavailable);
  EXPECT_LT(steady_clock::now() - start, milliseconds(6));
  EXPECT_THAT(FirstError(*store), HasSubstr("TLS handshake timed out"));
  redis_->Thaw();
  ASSERT_TRUE(WaitConnected(*store, milliseconds(4000))) << store->last_error();
  EXPECT_EQ(Run(*store, op).status, StoreStatus::kOk);
}

TEST_F(RedisTlsTest, ARestartedRedisIsReachedAgainOverTls) {
  if (!StartRedis()) return;
  std::unique_ptr<RedisStore> store = Create(TlsOptions());
  ASSERT_TRUE(WaitConnected(*store)) << store->last_error();
  const uint64_t generation = store->generation();
  ASSERT_TRUE(redis_->Restart());
  const StoreOp op =
      MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"restart", kSecond, 5}});
  const auto give_up = steady_clock::now() + std::chrono::seconds(4);
  StoreResult r;
  do {
    std::this_thread::sleep_for(milliseconds(10));
    r = Run(*store, op);
  } while (r.status != StoreStatus::kOk && steady_clock::now() < give_up);
  EXPECT_EQ(r.status, StoreStatus::kOk) << store->last_error();
  EXPECT_GT(store->generation(), generation);
}

TEST_F(RedisTlsTest, ManyThreadsGetTheirOwnRepliesInBigBatches) {
  if (!StartRedis()) return;
  StoreOptions o = TlsOptions();
  o.connections = 2;
  std::unique_ptr<RedisStore> store = Create(o);
  ASSERT_TRUE(WaitConnected(*store)) << store->last_error();
  // Each thread its own bucket of burst 1000: its 1000 checks are all
  // allowed and each lead is one interval more than the one before, so a
  // reply handed to the wrong caller or a batch cut wrongly shows.
  constexpr int kThreads = 8;
  constexpr int kOps = 1000;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string name = "thread-" + std::to_string(t);
      for (int i = 0; i < kOps; ++i) {
        const StoreOp op =
            MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{name, kSecond, kOps}});
        const StoreResult r = Run(*store, op);
        if (r.status != StoreStatus::kOk || !r.allowed ||
            r.lead[0] != int64_t{i} * kSecond) {
          wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0) << store->last_error();
}

TEST_F(RedisTlsTest, APipelineLargerThanTheSocketBuffersArrivesWhole) {
  if (!StartRedis()) return;
  StoreOptions o = TlsOptions();
  o.max_in_flight = 100'000;
  std::unique_ptr<RedisStore> store = Create(o);
  ASSERT_TRUE(WaitConnected(*store)) << store->last_error();
  // Up to 24 MB of calls while Redis reads nothing: the socket's buffers
  // (at most 4 MB to send, 128 KB to receive here) fill, TLS writes stop
  // half way and resume with the same bytes once Redis reads again.
  // Posting stops after 600 ms, well before the one-second stall limit
  // (a sanitizer's build posts fewer).
  constexpr int kMaxOps = 12'000;
  std::vector<mxlimit::testing::Bucket> buckets;
  for (size_t k = 0; k < kMaxStoreBuckets; ++k) {
    buckets.push_back({"pipeline-" + std::to_string(k), kSecond, 1 << 30});
  }
  const StoreOp op = MakeOp(StoreOpKind::kCheck, 1, kEpoch, buckets);
  redis_->Freeze();
  const auto stop_posting = steady_clock::now() + milliseconds(600);
  int posted = 0;
  while (posted < kMaxOps && steady_clock::now() < stop_posting) {
    ASSERT_TRUE(store->Post(op)) << store->last_error();
    ++posted;
  }
  std::this_thread::sleep_for(milliseconds(50));
  redis_->Thaw();
  const auto give_up = steady_clock::now() + std::chrono::seconds(20);
  while (store->counters().ops_ok < static_cast<uint64_t>(posted) &&
         store->counters().ops_error == 0 && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(store->counters().ops_ok, static_cast<uint64_t>(posted))
      << store->last_error();
  EXPECT_EQ(store->counters().ops_error, 0u);
  // Each charged once: every bucket is `posted` intervals ahead.
  const StoreResult r = Run(*store, op);
  ASSERT_EQ(r.status, StoreStatus::kOk);
  for (size_t k = 0; k < kMaxStoreBuckets; ++k) {
    EXPECT_EQ(r.lead[k], int64_t{posted} * kSecond) << k;
  }
}

}  // namespace
}  // namespace mxlimit::internal
