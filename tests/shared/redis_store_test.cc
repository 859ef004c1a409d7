#include "src/shared/redis/redis_store.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/shared/fake_store.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/redis_store_testing.h"

namespace mxlimit::internal {
namespace {

using mxlimit::testing::Bucket;
using mxlimit::testing::FormatTat;
using mxlimit::testing::kEpoch;
using mxlimit::testing::Key;
using mxlimit::testing::kSecond;
using mxlimit::testing::MakeOp;
using mxlimit::testing::RedisStoreFixture;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

TEST(RedisStoreCreateTest, RejectsBadOptionsNamingTheField) {
  StoreOptions o;
  o.url = "ftp://x";
  EXPECT_THAT(RedisStore::Create(o).status().message(), HasSubstr("store.url"));
  // The grammar the loader checks (issue #31): a URL without a port was
  // accepted here (as port 6379) though `check-config` refused it.
  o.url = "redis://127.0.0.1";
  EXPECT_THAT(RedisStore::Create(o).status().message(),
              HasSubstr("store.url: got \"redis://127.0.0.1\""));
  o.url = "redis://127.0.0.1:1";
  o.connections = 0;
  EXPECT_THAT(RedisStore::Create(o).status().message(),
              HasSubstr("store.connections"));
  o.connections = 5;
  EXPECT_THAT(RedisStore::Create(o).status().message(),
              HasSubstr("store.connections"));
  o.connections = 1;
  o.max_in_flight = 0;
  EXPECT_THAT(RedisStore::Create(o).status().message(),
              HasSubstr("store.max_in_flight"));
}

class RedisStoreTest : public RedisStoreFixture {};

TEST_F(RedisStoreTest, ScriptShaIsWhatScriptLoadReturns) {
  EXPECT_EQ(
      redis_->Command({"SCRIPT", "LOAD", std::string(RedisStore::Script())}),
      RedisStore::ScriptSha1());
  EXPECT_THAT(std::string(RedisStore::Script()),
              ::testing::StartsWith("-- mxl:1\n"));
}

// The differential test: thousands of random ops through FakeStore (which
// runs store_ops.h) and through the script give the same verdicts, the same
// leads and the same stored values.
TEST_F(RedisStoreTest, RandomOpsMatchFakeStore) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  FakeStore fake;
  std::mt19937_64 rng(20240611);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  // Each key has its policy's rate. T >= 1 s keeps every written key's PX
  // far above the test's real running time: Redis must never expire a key
  // (by its wall clock) that the simulated clock still needs.
  struct KeyRate {
    std::string name;
    int64_t interval_ns, burst;
  };
  std::vector<KeyRate> keys;
  for (int i = 0; i < 6; ++i) {
    keys.push_back({"rnd" + std::to_string(i), uniform(kSecond, 60 * kSecond),
                    uniform(1, 5)});
  }
  int64_t now = kEpoch;
  int allowed = 0, denied = 0, pullbacks = 0, syncs = 0, late = 0;
  int queued = 0;
  for (int step = 0; step < 4000; ++step) {
    // The clock: mostly forward by up to a few intervals, sometimes not at
    // all, sometimes by less than a millisecond, sometimes backwards.
    const int64_t roll = uniform(0, 99);
    if (roll < 60) {
      now += uniform(0, 120 * kSecond);
    } else if (roll < 80) {
      now += uniform(0, 1'000'000);
    } else if (roll < 90) {
      now -= uniform(0, 90 * kSecond);
      ++pullbacks;
    }
    std::vector<Bucket> buckets;
    const int n = static_cast<int>(uniform(0, 3));
    for (int b = 0; b < n; ++b) {
      const KeyRate& k = keys[static_cast<size_t>(uniform(0, 5))];
      const int64_t mode_roll = uniform(0, 7);
      buckets.push_back({k.name, k.interval_ns, k.burst,
                         mode_roll < 5   ? BucketMode::kEnforcing
                         : mode_roll < 7 ? BucketMode::kShadow
                                         : BucketMode::kObserved});
    }
    const int64_t kind_roll = uniform(0, 9);
    const StoreOpKind kind = kind_roll < 5   ? StoreOpKind::kCheck
                             : kind_roll < 7 ? StoreOpKind::kPeek
                             : kind_roll < 9 ? StoreOpKind::kCharge
                                             : StoreOpKind::kSync;
    const int64_t cost =
        kind == StoreOpKind::kCharge ? uniform(-6, 6) : uniform(0, 6);
    StoreOp op = MakeOp(kind, cost, now, buckets);
    // A late admission's op (Decision::delay): applied as of now + at; and
    // buckets that keep a queue of late admissions past tau.
    if (kind != StoreOpKind::kSync) {
      if (uniform(0, 3) == 0) {
        op.at_ns = uniform(1, 30 * kSecond);
        ++late;
      }
      for (size_t i = 0; i < op.count; ++i) {
        if (uniform(0, 2) == 0) {
          op.buckets[i].queue_ns = uniform(1, 60 * kSecond);
          ++queued;
        }
      }
    }
    if (kind == StoreOpKind::kSync) {
      // Approximate sharing's charges: enough to run into debt, and past
      // the debt cap now and then.
      for (size_t i = 0; i < op.count; ++i) {
        op.buckets[i].delta_ns =
            uniform(0, 40 * op.buckets[i].burst * op.buckets[i].interval_ns);
      }
      ++syncs;
    }
    const StoreResult want =
        fake.Execute(op, steady_clock::now() + milliseconds(100));
    const StoreResult got = Run(*store, op);
    ASSERT_EQ(got.status, StoreStatus::kOk)
        << "step " << step << " " << store->last_error();
    ASSERT_EQ(got.allowed, want.allowed) << "step " << step;
    for (size_t i = 0; i < op.count; ++i) {
      ASSERT_EQ(got.lead[i], want.lead[i])
          << "step " << step << " bucket " << i;
    }
    for (const Bucket& b : buckets) {
      const std::optional<int64_t> tat = fake.Tat(Key(b.key));
      ASSERT_EQ(redis_->Command({"GET", std::string(Key(b.key).view())}),
                tat ? FormatTat(*tat) : "(nil)")
          << "step " << step << " key " << b.key;
    }
    if (kind == StoreOpKind::kCheck && n > 0)
      (got.allowed ? allowed : denied)++;
  }
  // The vectors exercised both verdicts and the backwards clock.
  EXPECT_GT(allowed, 300);
  EXPECT_GT(denied, 300);
  EXPECT_GT(pullbacks, 300);
  EXPECT_GT(syncs, 300);
  EXPECT_GT(late, 600);
  EXPECT_GT(queued, 600);
  EXPECT_EQ(store->counters().ops_ok, 4000u);
}

TEST_F(RedisStoreTest, ExactBoundaryIsAllowedAndOneNanosecondLessIsNot) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  // burst 2, T = 1 s: two at once empty the bucket (lead 2 s = tau).
  for (const char* name : {"edge-a", "edge-b"}) {
    const StoreResult r = Run(
        *store, MakeOp(StoreOpKind::kCheck, 2, kEpoch, {{name, kSecond, 2}}));
    ASSERT_EQ(r.status, StoreStatus::kOk) << store->last_error();
    EXPECT_TRUE(r.allowed);
    EXPECT_EQ(r.lead[0], 0);
  }
  // One second later exactly one more fits: lead 1 s + T = tau.
  StoreResult r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch + kSecond,
                                     {{"edge-a", kSecond, 2}}));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.lead[0], kSecond);
  // 1 ns earlier it does not, and nothing is written.
  r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch + kSecond - 1,
                         {{"edge-b", kSecond, 2}}));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.lead[0], kSecond + 1);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:edge-b"}),
            FormatTat(kEpoch + 2 * kSecond));
}

TEST_F(RedisStoreTest, ClockGoingBackPersistsThePullBack) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const std::vector<Bucket> b = {{"back", kSecond, 3}};
  ASSERT_TRUE(Run(*store, MakeOp(StoreOpKind::kCheck, 3, kEpoch, b)).allowed);
  // 10 s earlier the TAT is 13 s ahead, beyond tau = 3 s: the lead reads as
  // tau, the check is denied, and the TAT is pulled back to now + tau so
  // that the backwards step costs at most one burst.
  const int64_t earlier = kEpoch - 10 * kSecond;
  StoreResult r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, earlier, b));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.lead[0], 3 * kSecond);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:back"}),
            FormatTat(earlier + 3 * kSecond));
  // A peek sees the same and writes nothing.
  r = Run(*store, MakeOp(StoreOpKind::kPeek, 1, earlier - kSecond, b));
  EXPECT_EQ(r.lead[0], 3 * kSecond);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:back"}),
            FormatTat(earlier + 3 * kSecond));
}

TEST_F(RedisStoreTest, ValueIsNanosecondsAndExpiresWhenFull) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  // Carry into the seconds: now ends in .999999999, T = 10 s + 2 ns.
  const int64_t now = 1'700'000'000 * kSecond + 999'999'999;
  const StoreResult r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, now,
                                           {{"fmt", 10 * kSecond + 2, 3}}));
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:fmt"}), "1700000011000000001");
  // Stored as a machine integer: the smallest value Redis has.
  EXPECT_EQ(redis_->Command({"OBJECT", "ENCODING", "mxl:1:t:fmt"}), "int");
  // PX = floor(lead / 1 ms) + 1 = 10001 ms, already counting down.
  const int64_t pttl = std::stoll(redis_->Command({"PTTL", "mxl:1:t:fmt"}));
  EXPECT_LE(pttl, 10001);
  EXPECT_GT(pttl, 9000);
}

TEST_F(RedisStoreTest, LateOpReadsAndChargesAtNowPlusAtWithTheRealTtl) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const int64_t now = 1'700'000'000 * kSecond;
  // T = 10 s, burst 1: full after the first check (lead 10 s).
  ASSERT_TRUE(Run(*store, MakeOp(StoreOpKind::kCheck, 1, now,
                                 {{"late", 10 * kSecond, 1}}))
                  .allowed);
  // 4 s later the bucket still leads by 6 s: denied now, but a request
  // admitted 6 s late (at = 6 s) passes and is charged as of then.
  StoreOp op = MakeOp(StoreOpKind::kCheck, 1, now + 4 * kSecond,
                      {{"late", 10 * kSecond, 1}});
  EXPECT_FALSE(Run(*store, op).allowed);
  op.at_ns = 6 * kSecond - 1;
  EXPECT_FALSE(Run(*store, op).allowed);  // One nanosecond too early.
  op.at_ns = 6 * kSecond;
  const StoreResult r = Run(*store, op);
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.lead[0], 0);  // Measured from now + at.
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:late"}), "1700000020000000000");
  // The key lives until its TAT by the real clock: at + lead = 16 s.
  const int64_t pttl = std::stoll(redis_->Command({"PTTL", "mxl:1:t:late"}));
  EXPECT_LE(pttl, 16001);
  EXPECT_GT(pttl, 15000);
  // A malformed at is refused as a bad call, not read as 0.
  EXPECT_THAT(redis_->Command({"EVALSHA", std::string(RedisStore::ScriptSha1()),
                               "1", "mxl:1:t:late", "check", "1", "", "",
                               "10000000000", "1", "1", "-5"}),
              ::testing::HasSubstr("mxl:1 bad arguments"));
}

TEST_F(RedisStoreTest, AQueuedLeadSurvivesChecksThatDoNotDelay) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const int64_t now = 1'700'000'000 * kSecond;
  // T = 100 ms, burst 2 (tau 200 ms), a queue of up to 500 ms: two at once,
  // then two admitted 100 and 200 ms late leave the TAT 400 ms ahead.
  auto op = [&](int64_t at_ns, int64_t queue_ns) {
    StoreOp o =
        MakeOp(StoreOpKind::kCheck, 1, now, {{"queue", 100'000'000, 2}});
    o.at_ns = at_ns;
    o.buckets[0].queue_ns = queue_ns;
    return o;
  };
  const int64_t q = 500'000'000;
  for (const int64_t at : {0, 0, 100'000'000, 200'000'000}) {
    ASSERT_TRUE(Run(*store, op(at, q)).allowed) << at;
  }
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:queue"}), "1700000000400000000");
  // A check that does not delay is denied, reads the whole queue, and
  // leaves it in place (no pull-back to tau).
  const StoreResult plain = Run(*store, op(0, q));
  EXPECT_FALSE(plain.allowed);
  EXPECT_EQ(plain.lead[0], 400'000'000);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:queue"}), "1700000000400000000");
  // Without the queue in the call the lead is clamped to tau, as before.
  EXPECT_EQ(Run(*store, op(0, 0)).lead[0], 200'000'000);
}

TEST_F(RedisStoreTest, ChargeBackToFullDeletesTheKey) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  const std::vector<Bucket> b = {{"refund", kSecond, 3}};
  StoreResult r = Run(*store, MakeOp(StoreOpKind::kCharge, 2, kEpoch, b));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:refund"}), "1");
  // A refund larger than the lead stops at full, which is no key at all.
  r = Run(*store, MakeOp(StoreOpKind::kCharge, -3, kEpoch, b));
  EXPECT_EQ(r.lead[0], 2 * kSecond);
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:refund"}), "0");
  // A cost-0 check of a full bucket writes nothing either.
  r = Run(*store, MakeOp(StoreOpKind::kCheck, 0, kEpoch, b));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:refund"}), "0");
}

TEST_F(RedisStoreTest, PeekWritesNothingAndShadowBucketsNeverDeny) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  StoreResult r = Run(
      *store, MakeOp(StoreOpKind::kPeek, 1, kEpoch, {{"peek", kSecond, 1}}));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:peek"}), "0");
  // The shadow bucket is empty, the enforcing one is not: allowed, and only
  // the bucket with room is charged.
  Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"shadow", kSecond, 1}}));
  r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch,
                         {{"enf", kSecond, 1},
                          {"shadow", kSecond, 1, BucketMode::kShadow}}));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.lead[1], kSecond);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:enf"}),
            FormatTat(kEpoch + kSecond));
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:shadow"}),
            FormatTat(kEpoch + kSecond));
}

TEST_F(RedisStoreTest, ShadowBucketsAreChargedAllOrNothingAndObservedNever) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  // "full" has no room left; "open" and "seen" have.
  Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch, {{"full", kSecond, 1}}));
  StoreResult r =
      Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch,
                         {{"enf", kSecond, 2},
                          {"full", kSecond, 1, BucketMode::kShadow},
                          {"open", kSecond, 2, BucketMode::kShadow},
                          {"seen", kSecond, 2, BucketMode::kObserved}}));
  // The enforcing bucket is charged; a shadow bucket without room keeps the
  // other shadow bucket from being charged, as enforcement would have
  // denied the request; an observed bucket is answered, never charged.
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.lead[1], kSecond);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:enf"}),
            FormatTat(kEpoch + kSecond));
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:open"}), "0");
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:seen"}), "0");
  // With room in every shadow bucket both are charged; observed still not.
  r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch,
                         {{"open", kSecond, 2, BucketMode::kShadow},
                          {"also", kSecond, 2, BucketMode::kShadow},
                          {"seen", kSecond, 2, BucketMode::kObserved}}));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:open"}),
            FormatTat(kEpoch + kSecond));
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:also"}),
            FormatTat(kEpoch + kSecond));
  EXPECT_EQ(redis_->Command({"EXISTS", "mxl:1:t:seen"}), "0");
  // An enforcing denial charges no shadow bucket either.
  r = Run(*store, MakeOp(StoreOpKind::kCheck, 1, kEpoch,
                         {{"full", kSecond, 1},
                          {"open", kSecond, 2, BucketMode::kShadow}}));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(redis_->Command({"GET", "mxl:1:t:open"}),
            FormatTat(kEpoch + kSecond));
}

TEST_F(RedisStoreTest, StoreClockIsRedisTime) {
  std::unique_ptr<RedisStore> store = NewStore();
  ASSERT_NE(store, nullptr);
  StoreOp op = MakeOp(StoreOpKind::kCheck, 1, 0, {{"time", 10 * kSecond, 5}});
  op.caller_clock = false;
  StoreResult r = Run(*store, op);
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.lead[0], 0);
  r = Run(*store, op);
  // 10 s minus the time between the two calls.
  EXPECT_LE(r.lead[0], 10 * kSecond);
  EXPECT_GT(r.lead[0], 9 * kSecond);
  // The stored TAT is on Redis's clock: TIME's seconds + 20 s or so.
  const std::string value = redis_->Command({"GET", "mxl:1:t:time"});
  const std::string time = redis_->Command({"TIME"});
  const int64_t stored_s = std::stoll(value) / kSecond;
  const int64_t redis_s = std::stoll(time.substr(0, time.find(',')));
  EXPECT_NEAR(stored_s - redis_s, 20, 1);
}

}  // namespace
}  // namespace mxlimit::internal
