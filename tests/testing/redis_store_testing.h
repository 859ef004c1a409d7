// Helpers for the RedisStore tests: ops over named buckets at a caller
// clock, and a fixture that starts its own redis-server (skipping the test
// when there is none).

#ifndef MXLIMIT_TESTS_TESTING_REDIS_STORE_TESTING_H_
#define MXLIMIT_TESTS_TESTING_REDIS_STORE_TESTING_H_

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "src/shared/redis/redis_store.h"
#include "src/shared/store.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/redis_server.h"

namespace mxlimit::testing {

using internal::BucketMode;
using internal::RedisStore;
using internal::Store;
using internal::StoreBucket;
using internal::StoreKey;
using internal::StoreOp;
using internal::StoreOpKind;
using internal::StoreResult;

// A caller clock that looks like the wall clock: seconds and nanoseconds
// both matter.
inline constexpr int64_t kEpoch = 1'700'000'000 * kSecond + 123'456'789;

inline StoreKey Key(std::string_view name) {
  StoreKey k;
  const std::string full = "mxl:1:t:" + std::string(name);
  assert(full.size() <= StoreKey::kCapacity);
  std::copy(full.begin(), full.end(), k.bytes.begin());
  k.size = static_cast<uint8_t>(full.size());
  return k;
}

struct Bucket {
  std::string key;
  int64_t interval_ns;
  int64_t burst;
  BucketMode mode = BucketMode::kEnforcing;
};

inline StoreOp MakeOp(StoreOpKind kind, int64_t cost, int64_t now,
                      const std::vector<Bucket>& buckets) {
  StoreOp op;
  op.kind = kind;
  op.cost = cost;
  op.caller_clock = true;
  op.now_ns = now;
  for (const Bucket& b : buckets) {
    StoreBucket& sb = op.buckets[op.count++];
    sb.key = Key(b.key);
    sb.interval_ns = b.interval_ns;
    sb.burst = b.burst;
    sb.mode = b.mode;
  }
  return op;
}

inline std::string FormatTat(int64_t tat) { return std::to_string(tat); }

inline bool WaitConnected(
    const Store& store,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!store.counters().connected) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class RedisStoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    redis_ = RedisServer::Start({}, &why);
    if (redis_ == nullptr) GTEST_SKIP() << why;
  }

  std::unique_ptr<RedisStore> NewStore(StoreOptions o = {}) {
    if (o.url.empty()) o.url = redis_->url();
    absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(o);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    EXPECT_TRUE(WaitConnected(**store)) << (*store)->last_error();
    return *std::move(store);
  }

  static StoreResult Run(Store& store, const StoreOp& op) {
    return store.Execute(
        op, std::chrono::steady_clock::now() + std::chrono::seconds(2));
  }

  std::unique_ptr<RedisServer> redis_;
};

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_REDIS_STORE_TESTING_H_
