// The RateLimit-Policy and RateLimit field values (ratelimit_headers.h) as
// written from a Decision: the quota, window, remaining count and wait,
// units, names as Structured Field Strings, the cases that write nothing,
// and the documented buffer sizes. What the limiter's decisions carry for
// them: ratelimit_headers_limiter_test.cc.

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/decision.h"
#include "mxlimit/matrix_response.h"
#include "mxlimit/policy.h"
#include "mxlimit/ratelimit_headers.h"
#include "tests/testing/limiter_fixtures.h"
#include "tests/testing/ratelimit_field_parser.h"

namespace mxlimit {
namespace ratelimit_headers_format_test {

using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::ParsedFields;
using ::mxlimit::testing::ParseFields;
using std::chrono::nanoseconds;

// A decision naming `policy` with `burst` per `interval`.
Decision Quota(std::string_view policy, int64_t burst, nanoseconds interval) {
  Decision d;
  d.quota.policy = policy;
  d.quota.burst = burst;
  d.quota.interval = interval;
  return d;
}

TEST(RateLimitHeadersTest, AllowedDecisionGivesQuotaRemainingAndWait) {
  Decision d = Quota("message-send", 10, std::chrono::seconds(5));
  d.remaining = 7;
  RateLimitHeaderValues v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("message-send";q=10;w=50)");
  EXPECT_EQ(v.ratelimit, R"("message-send";r=7;t=0)");
  // Bucket empty: a request fits again in one interval less the slack,
  // rounded up to whole seconds.
  d.remaining = 0;
  d.quota.next = nanoseconds(1);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=1)");
  d.quota.next = nanoseconds(4 * kSecond + 1);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=5)");
  d.quota.next = nanoseconds(5 * kSecond);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=5)");
}

TEST(RateLimitHeadersTest, WindowIsBurstTimesIntervalRoundedUp) {
  // 40 per minute, burst 3: T = 1.5 s, b * T = 4.5 s.
  EXPECT_EQ(
      RateLimitHeaders(Quota("p", 3, std::chrono::milliseconds(1500))).policy,
      R"("p";q=3;w=5)");
  // 7 per minute: T = 8571428571 ns (rounded down), b * T just under 60 s.
  EXPECT_EQ(RateLimitHeaders(Quota("p", 7, nanoseconds(8'571'428'571))).policy,
            R"("p";q=7;w=60)");
  // Far below a second still says 1 (`w` must not be 0).
  EXPECT_EQ(RateLimitHeaders(Quota("p", 1, nanoseconds(1))).policy,
            R"("p";q=1;w=1)");
  EXPECT_EQ(RateLimitHeaders(Quota("p", 2, std::chrono::hours(12))).policy,
            R"("p";q=2;w=86400)");
}

TEST(RateLimitHeadersTest, DenialReportsNothingLeftAndTheRetryAfterSeconds) {
  Decision d = Quota("login-per-ip", 3, std::chrono::seconds(20));
  d.allowed = false;
  d.remaining = 5;  // ignored: a denial has nothing left
  for (const int64_t wait :
       {int64_t{1}, kSecond - 1, kSecond, kSecond + 1, 2 * kSecond + 1,
        19 * kSecond + 999'999'999, 20 * kSecond}) {
    d.retry_after = nanoseconds(wait);
    d.quota.next = nanoseconds(wait);
    const std::string retry_after = RetryAfterValue(d.retry_after, false);
    EXPECT_EQ(RateLimitHeaders(d).ratelimit,
              "\"login-per-ip\";r=0;t=" + retry_after)
        << wait;
  }
}

TEST(RateLimitHeadersTest, UnitsOtherThanRequestsAreNamed) {
  Decision bytes =
      Quota("media-download-bytes-per-ip", 524'288'000, nanoseconds(11'224));
  bytes.quota.unit = QuotaUnit::kContentBytes;
  EXPECT_EQ(RateLimitHeaders(bytes).policy,
            R"("media-download-bytes-per-ip";q=524288000;qu="content-bytes";)"
            R"(w=5885)");
  // An in-flight limit has no window.
  Decision in_flight = Quota("initial-sync", 2, nanoseconds(0));
  in_flight.quota.unit = QuotaUnit::kConcurrentRequests;
  EXPECT_EQ(RateLimitHeaders(in_flight).policy,
            R"("initial-sync";q=2;qu="concurrent-requests")");
}

TEST(RateLimitHeadersTest, NamesAreStructuredFieldStrings) {
  // Compiled policy names never hold '"' or '\'; any name still gives a
  // valid field.
  Decision d = Quota(R"(a"b\c)", 1, std::chrono::seconds(1));
  RateLimitHeaderValues v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("a\"b\\c";q=1;w=1)");
  std::optional<ParsedFields> f = ParseFields(v);
  ASSERT_TRUE(f.has_value()) << v.policy << " / " << v.ratelimit;
  EXPECT_EQ(f->policy, R"(a"b\c)");
  // Bytes a String cannot hold: nothing is written.
  const std::string too_long(kMaxPolicyNameBytes + 1, 'a');
  for (const std::string_view bad :
       {std::string_view("tab\there"), std::string_view("caf\xC3\xA9"),
        std::string_view("del\x7F"), std::string_view("nul\0x", 5)}) {
    EXPECT_EQ(RateLimitHeaders(Quota(bad, 1, std::chrono::seconds(1))).policy,
              "");
  }
  EXPECT_EQ(
      RateLimitHeaders(Quota(too_long, 1, std::chrono::seconds(1))).policy, "");
}

TEST(RateLimitHeadersTest, NothingWithoutAQuotaToReport) {
  // No limited policy applied.
  Decision unlimited;
  unlimited.remaining = kUnlimitedRemaining;
  EXPECT_EQ(RateLimitHeaders(unlimited).policy, "");
  Decision d = Quota("p", 3, std::chrono::seconds(1));
  d.exempt = true;
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d.exempt = false;
  d.allowed = false;
  d.never = true;  // no Retry-After either
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d.never = false;
  d.quota.burst = 0;
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, "");
}

TEST(RateLimitHeadersTest, LargestValuesFitTheDocumentedBuffers) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::string quotes(kMaxPolicyNameBytes, '"');
  Decision d = Quota(quotes, kMax, nanoseconds(kMax));
  d.quota.unit = QuotaUnit::kConcurrentRequests;
  d.remaining = kMax;
  d.quota.next = nanoseconds(kMax);
  char policy[kRateLimitPolicyValueMaxBytes];
  char limit[kRateLimitValueMaxBytes];
  RateLimitHeaderLengths n = FormatRateLimitHeaders(d, policy, limit);
  EXPECT_EQ(n.policy, kRateLimitPolicyValueMaxBytes);
  ASSERT_GT(n.ratelimit, 0u);
  // RFC 9651 Integers stop at 15 digits.
  EXPECT_NE(std::string_view(policy, n.policy).find(";q=999999999999999;"),
            std::string_view::npos);
  std::optional<ParsedFields> f = ParseFields(
      {std::string(policy, n.policy), std::string(limit, n.ratelimit)});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->r, 999'999'999'999'999);
  // One byte short of either: nothing written at all.
  std::string a(kRateLimitPolicyValueMaxBytes, 'x');
  std::string b(kRateLimitValueMaxBytes, 'x');
  n = FormatRateLimitHeaders(d, std::span<char>(a.data(), a.size() - 1),
                             std::span<char>(b.data(), b.size()));
  EXPECT_EQ(n.policy, 0u);
  EXPECT_EQ(n.ratelimit, 0u);
  EXPECT_EQ(a, std::string(kRateLimitPolicyValueMaxBytes, 'x'));
  EXPECT_EQ(b, std::string(kRateLimitValueMaxBytes, 'x'));
}

}  // namespace ratelimit_headers_format_test
}  // namespace mxlimit
