#include "src/daemon/whoami_cache.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace mxlimit::daemon {
namespace {

using std::chrono::milliseconds;

// A stand-in homeserver: /account/whoami answers per token; a delay and a
// status can be set to play a slow or broken server.
class FakeHomeserver {
 public:
  FakeHomeserver() {
    server_.Get("/_matrix/client/v3/account/whoami",
                [this](const httplib::Request& req, httplib::Response& res) {
                  calls_.fetch_add(1);
                  std::this_thread::sleep_for(milliseconds(delay_ms_.load()));
                  if (const int s = status_.load(); s != 0) {
                    res.status = s;
                    return;
                  }
                  const std::string auth =
                      req.get_header_value("Authorization");
                  if (auth == "Bearer alice_token") {
                    res.set_content(R"({"user_id": "@alice:example.org",)"
                                    R"( "device_id": "D"})",
                                    "application/json");
                  } else if (auth.rfind("Bearer user", 0) == 0) {
                    res.set_content(R"({"user_id":"@)" + auth.substr(7) +
                                        R"(:example.org"})",
                                    "application/json");
                  } else {
                    res.status = 401;
                    res.set_content(R"({"errcode":"M_UNKNOWN_TOKEN"})",
                                    "application/json");
                  }
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  ~FakeHomeserver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }

  std::atomic<int> delay_ms_{0};
  std::atomic<int> status_{0};
  std::atomic<int> calls_{0};

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// Looks `token` up until it resolves (or `within` passes); the length.
size_t LookupUntilKnown(WhoamiCache& cache, const std::string& token,
                        char (&out)[kMaxUserIdBytes],
                        milliseconds within = milliseconds(3000)) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (size_t n = cache.Lookup(token, MonotonicTime::FromSteadyClock(), out)) {
      return n;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return 0;
}

WhoamiCache::Options OptionsFor(const FakeHomeserver& hs) {
  WhoamiCache::Options o;
  o.homeserver = hs.url();
  o.capacity = 8;
  o.deadline = milliseconds(300);
  return o;
}

TEST(WhoamiCacheTest, ResolvesOnceThenAnswersFromTheCache) {
  FakeHomeserver hs;
  WhoamiCache cache(OptionsFor(hs), internal::SipKey{1, 2});
  cache.Start();
  char user[kMaxUserIdBytes];
  // The first lookup never waits: unknown, queued.
  EXPECT_EQ(cache.Lookup("alice_token", MonotonicTime::FromSteadyClock(), user),
            0u);
  const size_t n = LookupUntilKnown(cache, "alice_token", user);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(std::string(user, n), "@alice:example.org");
  const int calls = hs.calls_.load();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(
        cache.Lookup("alice_token", MonotonicTime::FromSteadyClock(), user), n);
  }
  EXPECT_EQ(hs.calls_.load(), calls);
  const WhoamiCache::Counters c = cache.counters();
  EXPECT_GE(c.hits, 100u);
  EXPECT_EQ(c.resolved, 1u);
}

TEST(WhoamiCacheTest, EntriesExpireAfterTheTtl) {
  FakeHomeserver hs;
  WhoamiCache::Options o = OptionsFor(hs);
  o.ttl = std::chrono::seconds(60);
  WhoamiCache cache(o, internal::SipKey{1, 2});
  cache.Start();
  char user[kMaxUserIdBytes];
  ASSERT_GT(LookupUntilKnown(cache, "alice_token", user), 0u);
  const MonotonicTime later =
      MonotonicTime::FromSteadyClock() + std::chrono::seconds(61);
  EXPECT_EQ(cache.Lookup("alice_token", later, user), 0u);  // expired
}

TEST(WhoamiCacheTest, HoldsAtMostItsCapacity) {
  FakeHomeserver hs;
  WhoamiCache cache(OptionsFor(hs), internal::SipKey{1, 2});
  cache.Start();
  char user[kMaxUserIdBytes];
  for (int i = 0; i < 20; ++i) {
    ASSERT_GT(LookupUntilKnown(cache, "user" + std::to_string(i), user), 0u);
  }
  EXPECT_EQ(cache.counters().entries, 8u);
  // The most recent are kept; the oldest were evicted.
  EXPECT_GT(cache.Lookup("user19", MonotonicTime::FromSteadyClock(), user), 0u);
  EXPECT_EQ(cache.Lookup("user0", MonotonicTime::FromSteadyClock(), user), 0u);
}

TEST(WhoamiCacheTest, SlowHomeserverNeverBlocksALookup) {
  FakeHomeserver hs;
  hs.delay_ms_ = 1000;  // beyond the 300 ms deadline
  WhoamiCache cache(OptionsFor(hs), internal::SipKey{1, 2});
  cache.Start();
  char user[kMaxUserIdBytes];
  for (int i = 0; i < 50; ++i) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(
        cache.Lookup("alice_token", MonotonicTime::FromSteadyClock(), user),
        0u);
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(50));
    std::this_thread::sleep_for(milliseconds(20));
  }
  // One request went out for the token (it is queued once), and failed.
  EXPECT_EQ(hs.calls_.load(), 1);
  EXPECT_EQ(cache.counters().failures, 1u);
}

TEST(WhoamiCacheTest, RefusedAndFailedTokensResolveToNothing) {
  FakeHomeserver hs;
  WhoamiCache cache(OptionsFor(hs), internal::SipKey{1, 2});
  cache.Start();
  char user[kMaxUserIdBytes];
  EXPECT_EQ(LookupUntilKnown(cache, "stolen", user, milliseconds(300)), 0u);
  EXPECT_EQ(cache.counters().rejected, 1u);
  hs.status_ = 500;
  EXPECT_EQ(LookupUntilKnown(cache, "user_x", user, milliseconds(300)), 0u);
  EXPECT_EQ(cache.counters().failures, 1u);
}

TEST(WhoamiCacheTest, DeadHomeserverIsAFailureNotAHang) {
  WhoamiCache::Options o;
  o.homeserver = "http://127.0.0.1:1";  // nothing listens there
  o.deadline = milliseconds(200);
  WhoamiCache cache(o, internal::SipKey{1, 2});
  cache.Start();
  char user[kMaxUserIdBytes];
  EXPECT_EQ(LookupUntilKnown(cache, "alice_token", user, milliseconds(500)),
            0u);
  EXPECT_EQ(cache.counters().failures, 1u);
}

TEST(WhoamiResponseTest, OnlyAWellFormedUserId) {
  EXPECT_EQ(UserIdFromWhoami(R"({"user_id":"@a:b.c"})"), "@a:b.c");
  EXPECT_EQ(UserIdFromWhoami(R"({ "user_id" :  "@a:b.c" , "x": 1})"), "@a:b.c");
  EXPECT_EQ(UserIdFromWhoami(R"({"user_id":"nope"})"), "");
  EXPECT_EQ(UserIdFromWhoami(R"({"user_id":"@a\"b:c"})"), "");
  EXPECT_EQ(UserIdFromWhoami(R"({"user_id":5})"), "");
  EXPECT_EQ(UserIdFromWhoami("{}"), "");
  EXPECT_EQ(UserIdFromWhoami(std::string(100000, '{')), "");
}

}  // namespace
}  // namespace mxlimit::daemon
