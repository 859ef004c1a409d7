// The early loads of large tables (Engine::StartEarlyLoads): which policies'
// buckets a request's loads start with, and that those are the very buckets
// the request's checks then look up. A prefetch of any other key would cost
// the hashing and gain nothing, and no decision would show it.

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/options.h"
#include "src/engine/engine.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using internal::Engine;
using ::mxlimit::testing::At;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;

std::unique_ptr<Engine> MakeEngine(const LimiterConfig& config) {
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(config);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *std::move(engine) : nullptr;
}

std::string NameOf(const Engine& engine, PolicyId id) {
  return id == kNoPolicy ? "none" : engine.policies().policy(id).name;
}

// The check of policy `id` among `e`'s, or null.
const Engine::BucketCheck* CheckOf(const Engine::Evaluation& e, PolicyId id) {
  for (const Engine::BucketCheck& c : e.all()) {
    if (c.policy == id) return &c;
  }
  return nullptr;
}

TEST(EarlyLoadsTest, DefaultSetStartsWithTheAggregateBuckets) {
  std::unique_ptr<Engine> engine = MakeEngine(LimiterConfig{});
  ASSERT_NE(engine, nullptr);
  const Engine::EarlyLoads early = Engine::FindEarlyLoads(engine->policies());
  EXPECT_EQ(NameOf(*engine, early.ip), "aggregate-per-ip");
  EXPECT_EQ(NameOf(*engine, early.user), "aggregate-per-user");
}

TEST(EarlyLoadsTest, EarlyKeysAreTheKeysTheChecksLookUp) {
  LimiterConfig config;  // built-in policies on
  // A tier changes rates, never keys.
  config.tiers.tiers = {{.name = "bridge", .scale = 10}};
  config.tiers.users = {{"@bridge:example.org", "bridge"}};
  std::unique_ptr<Engine> engine = MakeEngine(config);
  ASSERT_NE(engine, nullptr);
  const Engine::EarlyLoads early = Engine::FindEarlyLoads(engine->policies());
  const std::string long_user =
      "@" + std::string(60, 'a') + ":example.org";  // a digest key
  const std::vector<Request> requests = {
      MakeRequest("GET", "/_matrix/client/v3/sync?since=s1&timeout=30000",
                  "2001:db8:1::7", "@alice:example.org"),
      MakeRequest("PUT",
                  "/_matrix/client/v3/rooms/!r%3Aexample.org/send/"
                  "m.room.message/t1",
                  "192.0.2.7", "@bridge:example.org"),
      MakeRequest("GET", "/_matrix/client/v1/media/download/example.org/abc",
                  "192.0.2.8", long_user),
      MakeRequest("GET", "/no/such/endpoint", "198.51.100.1",
                  "@bob:example.org"),
      // Anonymous: no user bucket, early or late.
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.9"),
  };
  for (const Request& r : requests) {
    SCOPED_TRACE(std::string(r.method) + " " + std::string(r.target));
    const Engine::EarlyKeys k = engine->EarlyLoadKeys(r);
    Engine::Evaluation e;
    engine->Evaluate(r, At(1), Engine::kBothScopes, e, nullptr);
    ASSERT_FALSE(e.exempt);
    const Engine::BucketCheck* ip = CheckOf(e, early.ip);
    ASSERT_NE(ip, nullptr);
    ASSERT_TRUE(k.has_ip);
    EXPECT_EQ(k.ip, ip->key.ip);
    EXPECT_EQ(k.ip_hash, ip->hash);
    const Engine::BucketCheck* user = CheckOf(e, early.user);
    EXPECT_EQ(k.has_user, !r.user_id.empty());
    ASSERT_EQ(user != nullptr, k.has_user);
    if (user != nullptr) {
      EXPECT_EQ(k.user, user->key.user);
      EXPECT_EQ(k.user_hash, user->hash);
    }
  }
}

TEST(EarlyLoadsTest, OnlyPoliciesEveryRequestChecksInOneBucket) {
  // Each of these skips some requests of its scope, or keeps a bucket per
  // route: none is an aggregate every request checks.
  Policy per_route =
      MakePolicy("per-route", "*", Scope::kIp, 10, TimeUnit::kSecond);
  Policy gets = MakePolicy("gets", "*", Scope::kIp, 10, TimeUnit::kSecond);
  gets.share_threshold = true;
  gets.methods = {"GET"};
  Policy initial =
      MakePolicy("initial", "*", Scope::kUser, 10, TimeUnit::kSecond);
  initial.share_threshold = true;
  initial.query_absent = {"since"};
  Policy keys = MakePolicy("keys", "/_matrix/client/v3/keys/*", Scope::kUser,
                           10, TimeUnit::kSecond);
  keys.share_threshold = true;
  LimiterConfig config;
  config.builtin_policies = false;
  config.policies = {per_route, gets, initial, keys};
  std::unique_ptr<Engine> engine = MakeEngine(config);
  ASSERT_NE(engine, nullptr);
  Engine::EarlyLoads early = Engine::FindEarlyLoads(engine->policies());
  EXPECT_EQ(early.ip, kNoPolicy);
  EXPECT_EQ(early.user, kNoPolicy);

  // One that does, in a layer of its own, after them.
  Policy all = MakePolicy("all", "*", Scope::kUser, 10, TimeUnit::kSecond);
  all.share_threshold = true;
  all.layer = "total";
  config.policies.push_back(all);
  engine = MakeEngine(config);
  ASSERT_NE(engine, nullptr);
  early = Engine::FindEarlyLoads(engine->policies());
  EXPECT_EQ(early.ip, kNoPolicy);
  EXPECT_EQ(NameOf(*engine, early.user), "all");
}

}  // namespace
}  // namespace mxlimit
