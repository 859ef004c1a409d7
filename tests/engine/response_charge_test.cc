// Policies charged on the response (`charge: response`, `cost:
// response_bytes`) and by request bytes, with the built-in policies on:
// failed logins, media download bytes and an upload quota, through Limiter
// and ShardedLimiter alike.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/options.h"
#include "mxlimit/policy.h"
#include "mxlimit/sharded_limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace response_charge_test {

using ::mxlimit::testing::At;
using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

constexpr char kLogin[] = "/_matrix/client/v3/login";
constexpr char kDownload[] =
    "/_matrix/client/v1/media/download/remote.example/abcdef";
constexpr char kThumbnail[] =
    "/_matrix/media/v3/thumbnail/remote.example/abcdef?width=64&height=64";
constexpr char kUpload[] = "/_matrix/media/v3/upload?filename=a.png";
constexpr int64_t kMiB = int64_t{1024} * 1024;

MonotonicTime AtNs(int64_t ns) { return MonotonicTime::FromNanoseconds(ns); }

// The per-user upload quota of docs/config.md's example: 100 MiB an hour,
// answered with MSC4335's M_USER_LIMIT_EXCEEDED.
Policy UploadQuota() {
  Policy p = MakePolicy("upload-quota", "/_matrix/media/v3/upload*",
                        Scope::kUser, 100 * kMiB, TimeUnit::kHour, 100 * kMiB);
  p.cost = CostKind::kRequestBytes;
  p.errcode = std::string(kUserLimitExceededErrcode);
  p.info_uri = "https://example.org/fair-use";
  p.can_upgrade = true;
  return p;
}

// A Limiter and a ShardedLimiter of the same config answer alike.
class Limiters {
 public:
  explicit Limiters(std::vector<Policy> policies = {}) {
    LimiterConfig config;
    config.policies = std::move(policies);
    limiter_ = *Limiter::Create(config);
    sharded_ = *ShardedLimiter::Create(config, 4);
  }
  Decision Check(const Request& r, MonotonicTime now) {
    const Decision d = limiter_->Check(r, now);
    const Decision s = sharded_->Check(r, now);
    EXPECT_EQ(d.allowed, s.allowed) << r.target;
    EXPECT_EQ(d.retry_after, s.retry_after) << r.target;
    EXPECT_EQ(d.policy, s.policy) << r.target;
    return d;
  }
  void Settle(const Request& r, int status, int64_t bytes, MonotonicTime now) {
    limiter_->Settle(r, Completion{status, bytes}, now);
    sharded_->Settle(r, Completion{status, bytes}, now);
  }
  // A check and, when it passes, its response.
  Decision Serve(const Request& r, int status, int64_t bytes,
                 MonotonicTime now) {
    const Decision d = Check(r, now);
    if (d.allowed) Settle(r, status, bytes, now);
    return d;
  }

 private:
  std::unique_ptr<Limiter> limiter_;
  std::unique_ptr<ShardedLimiter> sharded_;
};

TEST(ResponseChargeTest, ThreeFailedLoginsFromOneAddressDenyTheFourth) {
  Limiters l;
  const Request attacker = MakeRequest("POST", kLogin, "203.0.113.7");
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(l.Serve(attacker, 403, 60, At(0)).allowed) << i;
  }
  const Decision d = l.Check(attacker, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "failed-login-per-ip");
  EXPECT_EQ(d.layer, "response");
  // rc_login.failed_attempts' 0.17/s: one more failure fits in 1/0.17 s.
  EXPECT_EQ(d.retry_after.count(), 3600 * kSecond / 612);
  EXPECT_EQ(d.error, nullptr);  // M_LIMIT_EXCEEDED

  // Another address logs in: nothing of the attacker's is charged to it.
  const Request user = MakeRequest("POST", kLogin, "198.51.100.20");
  EXPECT_TRUE(l.Serve(user, 200, 400, At(0)).allowed);
  // The attacker's address recovers at the rate.
  EXPECT_TRUE(l.Check(attacker, AtNs(3600 * kSecond / 612)).allowed);
}

TEST(ResponseChargeTest, SuccessfulLoginsAndOtherStatusesChargeNothing) {
  Limiters l;
  const Request client = MakeRequest("POST", kLogin, "203.0.113.8");
  // login-per-ip lets five logins through at once; none of the answers is
  // a 401 or 403, so the failed-login bucket stays full.
  for (int status : {200, 400, 429, 500, 404}) {
    EXPECT_TRUE(l.Serve(client, status, 80, At(0)).allowed) << status;
  }
  const Decision d = l.Check(client, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "login-per-ip");
}

TEST(ResponseChargeTest, A401ChargesAsA403Does) {
  Limiters l;
  const Request client = MakeRequest("POST", kLogin, "2001:db8:1::5");
  EXPECT_TRUE(l.Serve(client, 401, 10, At(0)).allowed);
  EXPECT_TRUE(l.Serve(client, 403, 10, At(0)).allowed);
  EXPECT_TRUE(l.Serve(client, 401, 10, At(0)).allowed);
  EXPECT_EQ(l.Check(client, At(0)).policy, "failed-login-per-ip");
}

TEST(ResponseChargeTest, DownloadsAreLimitedAtTheBurstInBytes) {
  Limiters l;
  const Request client = MakeRequest("GET", kDownload, "203.0.113.9");
  // Five 100 MiB downloads fill the 500 MiB burst.
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(l.Serve(client, 200, 100 * kMiB, At(0)).allowed) << i;
  }
  Decision d = l.Check(client, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "media-download-bytes-per-ip");
  // Thumbnails are media downloads too (one bucket per address).
  const Request thumb = MakeRequest("GET", kThumbnail, "203.0.113.9");
  EXPECT_FALSE(l.Check(thumb, At(0)).allowed);
  // 87 KiB a second: after a second there is room again. The next 100 MiB
  // download leaves the bucket in debt, and the client waits until the
  // rate has paid it back (100 MiB at 87 KiB/s: about 1177 s).
  EXPECT_TRUE(l.Serve(client, 200, 100 * kMiB, At(1)).allowed);
  d = l.Check(client, At(1));
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after, std::chrono::seconds(1170));
  EXPECT_LT(d.retry_after, std::chrono::seconds(1180));
  EXPECT_FALSE(l.Check(client, At(1 + 1170)).allowed);
  EXPECT_TRUE(l.Check(client, At(1 + 1180)).allowed);
  // Another address is untouched.
  EXPECT_TRUE(
      l.Check(MakeRequest("GET", kDownload, "198.51.100.1"), At(1)).allowed);
}

TEST(ResponseChargeTest, AResponseLargerThanTheBurstLeavesOneBurstOfDebt) {
  Limiters l;
  const Request client = MakeRequest("GET", kDownload, "203.0.113.10");
  EXPECT_TRUE(l.Serve(client, 200, int64_t{1} << 62, At(0)).allowed);
  const Decision d = l.Check(client, At(0));
  EXPECT_FALSE(d.allowed);
  // At most one burst past empty: 500 MiB at 87 KiB/s, about 5885 s, then
  // one byte's refill.
  EXPECT_GT(d.retry_after, std::chrono::seconds(5880));
  EXPECT_LT(d.retry_after, std::chrono::seconds(5890));
  EXPECT_TRUE(l.Check(client, At(5890)).allowed);
}

TEST(ResponseChargeTest, ConcurrentFailedLoginsAllCount) {
  // Four logins in flight at once all pass the check (the bucket had room),
  // then all fail: each failure is charged, the fourth into debt.
  Limiters l;
  const Request client = MakeRequest("POST", kLogin, "203.0.113.17");
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(l.Check(client, At(0)).allowed);
  for (int i = 0; i < 4; ++i) l.Settle(client, 403, 10, At(0));
  const Decision d = l.Check(client, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "failed-login-per-ip");
  // One failure past the burst of 3, then one to fit: two intervals.
  EXPECT_EQ(d.retry_after.count(), 2 * (3600 * kSecond / 612));
}

TEST(ResponseChargeTest, HostileCompletionsChargeNothing) {
  Limiters l;
  const Request client = MakeRequest("GET", kDownload, "203.0.113.11");
  for (int i = 0; i < 1000; ++i) {
    // Negative sizes and impossible statuses, then valid traffic.
    l.Settle(client, i % 2 == 0 ? -1 : 999, -(int64_t{1} << 62), At(0));
    l.Settle(client, 200, -5, At(0));
  }
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(l.Serve(client, 200, 100 * kMiB, At(0)).allowed) << i;
  }
  EXPECT_FALSE(l.Check(client, At(0)).allowed);
}

TEST(ResponseChargeTest, UploadQuotaAnswersUserLimitExceeded) {
  Limiters l({UploadQuota()});
  Request upload =
      MakeRequest("POST", kUpload, "203.0.113.12", "@alice:example.org");
  upload.request_bytes = 40 * kMiB;
  EXPECT_TRUE(l.Check(upload, At(0)).allowed);
  EXPECT_TRUE(l.Check(upload, At(0)).allowed);
  const Decision d = l.Check(upload, At(0));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.policy, "upload-quota");
  ASSERT_NE(d.error, nullptr);
  char body[kLimitBodyMaxBytes];
  const std::string_view json(
      body, WriteLimitBody(*d.error, d.retry_after, d.never, body));
  EXPECT_THAT(json, HasSubstr(R"({"errcode":"M_USER_LIMIT_EXCEEDED",)"));
  EXPECT_THAT(json, HasSubstr(R"("info_uri":"https://example.org/fair-use")"));
  EXPECT_THAT(json, HasSubstr(R"("can_upgrade":true})"));

  // A smaller upload still fits; one of unknown length (chunked) needs the
  // whole quota.
  upload.request_bytes = 20 * kMiB;
  EXPECT_TRUE(l.Check(upload, At(0)).allowed);
  upload.request_bytes = -1;
  EXPECT_FALSE(l.Check(upload, At(0)).allowed);
  Request carol = upload;
  carol.user_id = "@carol:example.org";
  EXPECT_TRUE(l.Check(carol, At(0)).allowed);  // a full quota, spent whole
  carol.request_bytes = 1;
  EXPECT_FALSE(l.Check(carol, At(0)).allowed);
  // Another user's quota is their own.
  Request bob = upload;
  bob.user_id = "@bob:example.org";
  bob.request_bytes = 90 * kMiB;
  EXPECT_TRUE(l.Check(bob, At(0)).allowed);
}

TEST(ResponseChargeTest, AnUploadLargerThanTheQuotaIsNeverAllowed) {
  Limiters l({UploadQuota()});
  Request upload =
      MakeRequest("POST", kUpload, "203.0.113.13", "@alice:example.org");
  upload.request_bytes = 100 * kMiB + 1;
  const Decision d = l.Check(upload, At(0));
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.never);
  char body[kLimitBodyMaxBytes];
  const std::string_view json(
      body, WriteLimitBody(*d.error, d.retry_after, d.never, body));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("retry_after_ms")));
}

TEST(ResponseChargeTest, ChargedOnResponseNotCountedInRemaining) {
  // remaining counts requests of one: the failed-login bucket (charged only
  // by a 401 or 403) and byte buckets do not say how many requests are left.
  LimiterConfig config;
  auto limiter = *Limiter::Create(config);
  const Decision d =
      limiter->Check(MakeRequest("POST", kLogin, "203.0.113.14"), At(0));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 4);  // login-per-ip: burst 5, one taken
  const Decision m =
      limiter->Check(MakeRequest("GET", kDownload, "203.0.113.14"), At(0));
  ASSERT_TRUE(m.allowed);
  EXPECT_LT(m.remaining, 1000);  // a request count, not 500 MiB
}

TEST(ResponseChargeTest, ShadowResponsePolicyCountsButNeverDenies) {
  Policy p = MakePolicy("failed-login-per-ip", kLogin, Scope::kIp, 612,
                        TimeUnit::kHour, 3);
  p.layer = "response";
  p.charge = ChargeOn::kResponse;
  p.status = {{401, 401}, {403, 403}};
  p.shadow_mode = true;
  Limiters l({p});
  const Request client = MakeRequest("POST", kLogin, "203.0.113.15");
  for (int i = 0; i < 3; ++i) l.Serve(client, 403, 10, At(0));
  const Decision d = l.Check(client, At(0));
  EXPECT_TRUE(d.allowed);
  EXPECT_TRUE(d.shadow_denied);
  EXPECT_EQ(d.shadow_policy, "failed-login-per-ip");
}

TEST(ResponseChargeTest, ChargeLeavesResponsePoliciesToSettle) {
  LimiterConfig config;
  config.policies = {UploadQuota()};
  auto limiter = *Limiter::Create(config);
  const Request login = MakeRequest("POST", kLogin, "203.0.113.18");
  // Charge (after the fact, with no status) never charges what only a
  // response charges: four would have emptied failed-login-per-ip (burst
  // 3); login-per-ip (burst 5) still has one.
  for (int i = 0; i < 4; ++i) limiter->Charge(login, At(0));
  EXPECT_TRUE(limiter->Check(login, At(0)).allowed);
  // A byte policy is charged the request's bytes, and refunded them.
  Request upload =
      MakeRequest("POST", kUpload, "203.0.113.18", "@dan:example.org");
  upload.request_bytes = 90 * kMiB;
  limiter->Charge(upload, At(0));
  EXPECT_FALSE(limiter->Check(upload, At(0)).allowed);
  upload.cost = -1;
  limiter->Charge(upload, At(0));
  upload.cost = 1;
  EXPECT_TRUE(limiter->Check(upload, At(0)).allowed);
}

TEST(ResponseChargeTest, ReloadKeepsFailedLoginBuckets) {
  LimiterConfig config;
  auto limiter = *Limiter::Create(config);
  const Request client = MakeRequest("POST", kLogin, "203.0.113.16");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limiter->Check(client, At(0)).allowed);
    limiter->Settle(client, Completion{403, 10}, At(0));
  }
  ASSERT_TRUE(limiter->Reload(config).ok());
  EXPECT_EQ(limiter->Check(client, At(0)).policy, "failed-login-per-ip");
}

}  // namespace response_charge_test
}  // namespace mxlimit
