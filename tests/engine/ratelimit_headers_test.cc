// The RateLimit-Policy and RateLimit fields (ratelimit_headers.h): the values
// written from a Decision, what the limiter's decisions carry for them, `t`
// against Retry-After, and that every value parses as a Structured Field.

#include "mxlimit/ratelimit_headers.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/limiter.h"
#include "mxlimit/matrix_response.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace ratelimit_headers_test {

using ::mxlimit::testing::At;
using ::mxlimit::testing::kSecond;
using ::mxlimit::testing::MakePolicy;
using ::mxlimit::testing::MakeRequest;
using std::chrono::nanoseconds;

// --- A strict parser of the Structured Field Lists these fields are ---------
// (RFC 9651 section 4.2), for the bare items they may hold: Integers,
// Strings and Tokens. Anything else, and any deviation from the grammar
// (stray spaces, a trailing comma, 16-digit integers, bad escapes), fails.

struct SfToken {
  std::string text;
};
using SfBareItem = std::variant<int64_t, std::string, SfToken>;
struct SfItem {
  SfBareItem value;
  std::vector<std::pair<std::string, SfBareItem>> params;
};

class SfParser {
 public:
  explicit SfParser(std::string_view text) : s_(text) {}

  std::optional<std::vector<SfItem>> List() {
    std::vector<SfItem> items;
    SkipSpaces();  // Leading SP is discarded before parsing (4.2).
    while (i_ < s_.size()) {
      std::optional<SfItem> item = Item();
      if (!item.has_value()) return std::nullopt;
      items.push_back(*std::move(item));
      SkipOws();
      if (i_ == s_.size()) return items;
      if (s_[i_++] != ',') return std::nullopt;
      SkipOws();
      if (i_ == s_.size()) return std::nullopt;  // trailing comma
    }
    return items;
  }

 private:
  std::optional<SfItem> Item() {
    std::optional<SfBareItem> value = BareItem();
    if (!value.has_value()) return std::nullopt;
    SfItem item{*std::move(value), {}};
    while (i_ < s_.size() && s_[i_] == ';') {
      ++i_;
      SkipSpaces();
      std::optional<std::string> key = Key();
      if (!key.has_value()) return std::nullopt;
      SfBareItem v = int64_t{1};  // `true` stands in for a bare key
      if (i_ < s_.size() && s_[i_] == '=') {
        ++i_;
        std::optional<SfBareItem> parsed = BareItem();
        if (!parsed.has_value()) return std::nullopt;
        v = *std::move(parsed);
      }
      for (const auto& [k, unused] : item.params) {
        if (k == *key) return std::nullopt;  // we never repeat a key
      }
      item.params.emplace_back(*std::move(key), std::move(v));
    }
    return item;
  }

  std::optional<SfBareItem> BareItem() {
    if (i_ == s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (c == '-' || IsDigit(c)) return Integer();
    if (c == '"') return String();
    if (IsAlpha(c) || c == '*') return Token();
    return std::nullopt;
  }

  std::optional<SfBareItem> Integer() {
    int64_t sign = 1;
    if (s_[i_] == '-') {
      sign = -1;
      ++i_;
    }
    int64_t v = 0;
    size_t digits = 0;
    while (i_ < s_.size() && IsDigit(s_[i_])) {
      if (++digits > 15) return std::nullopt;
      v = v * 10 + (s_[i_++] - '0');
    }
    if (digits == 0) return std::nullopt;
    if (i_ < s_.size() && s_[i_] == '.') return std::nullopt;  // a Decimal
    return SfBareItem(sign * v);
  }

  std::optional<SfBareItem> String() {
    ++i_;  // '"'
    std::string out;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '\\') {
        if (i_ == s_.size()) return std::nullopt;
        const char e = s_[i_++];
        if (e != '"' && e != '\\') return std::nullopt;
        out.push_back(e);
      } else if (c == '"') {
        return SfBareItem(std::move(out));
      } else if (c < 0x20 || c > 0x7E) {
        return std::nullopt;
      } else {
        out.push_back(c);
      }
    }
    return std::nullopt;  // unterminated
  }

  std::optional<SfBareItem> Token() {
    const size_t start = i_++;
    while (i_ < s_.size() && IsTokenChar(s_[i_])) ++i_;
    return SfBareItem(SfToken{std::string(s_.substr(start, i_ - start))});
  }

  std::optional<std::string> Key() {
    if (i_ == s_.size() || !(IsLcAlpha(s_[i_]) || s_[i_] == '*')) {
      return std::nullopt;
    }
    const size_t start = i_++;
    while (i_ < s_.size() &&
           (IsLcAlpha(s_[i_]) || IsDigit(s_[i_]) || s_[i_] == '_' ||
            s_[i_] == '-' || s_[i_] == '.' || s_[i_] == '*')) {
      ++i_;
    }
    return std::string(s_.substr(start, i_ - start));
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
  static bool IsLcAlpha(char c) { return c >= 'a' && c <= 'z'; }
  static bool IsAlpha(char c) { return IsLcAlpha(c) || (c >= 'A' && c <= 'Z'); }
  static bool IsTokenChar(char c) {
    return IsAlpha(c) || IsDigit(c) ||
           std::string_view("!#$%&'*+-.^_`|~:/").find(c) !=
               std::string_view::npos;
  }
  void SkipSpaces() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  void SkipOws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// The one Item of a field value, or nothing when the value does not parse or
// holds another number of Items.
std::optional<SfItem> OneItem(std::string_view value) {
  std::optional<std::vector<SfItem>> list = SfParser(value).List();
  if (!list.has_value() || list->size() != 1) return std::nullopt;
  return (*list)[0];
}

std::optional<int64_t> IntParam(const SfItem& item, std::string_view key) {
  for (const auto& [k, v] : item.params) {
    if (k == key && std::holds_alternative<int64_t>(v)) {
      return std::get<int64_t>(v);
    }
  }
  return std::nullopt;
}

std::optional<std::string> StringParam(const SfItem& item,
                                       std::string_view key) {
  for (const auto& [k, v] : item.params) {
    if (k == key && std::holds_alternative<std::string>(v)) {
      return std::get<std::string>(v);
    }
  }
  return std::nullopt;
}

// What the draft (-10) requires of the pair: one String-valued Item each,
// naming the same policy; `q` and `r` present; every parameter of the
// right type and range.
struct ParsedFields {
  std::string policy;
  int64_t q = 0;
  std::optional<int64_t> w;
  std::optional<std::string> qu;
  int64_t r = 0;
  int64_t t = 0;
};

std::optional<ParsedFields> ParseFields(const RateLimitHeaderValues& v) {
  std::optional<SfItem> policy = OneItem(v.policy);
  std::optional<SfItem> limit = OneItem(v.ratelimit);
  if (!policy.has_value() || !limit.has_value()) return std::nullopt;
  if (!std::holds_alternative<std::string>(policy->value) ||
      !std::holds_alternative<std::string>(limit->value) ||
      std::get<std::string>(policy->value) !=
          std::get<std::string>(limit->value)) {
    return std::nullopt;
  }
  ParsedFields f;
  f.policy = std::get<std::string>(policy->value);
  std::optional<int64_t> q = IntParam(*policy, "q");
  std::optional<int64_t> r = IntParam(*limit, "r");
  std::optional<int64_t> t = IntParam(*limit, "t");
  if (!q.has_value() || *q < 0 || !r.has_value() || *r < 0 || !t.has_value() ||
      *t < 0) {
    return std::nullopt;
  }
  f.q = *q;
  f.r = *r;
  f.t = *t;
  for (const auto& [k, unused] : policy->params) {
    if (k != "q" && k != "w" && k != "qu") return std::nullopt;
  }
  for (const auto& [k, unused] : limit->params) {
    if (k != "r" && k != "t") return std::nullopt;
  }
  f.w = IntParam(*policy, "w");
  if (f.w.has_value() && *f.w <= 0) return std::nullopt;  // non-zero
  f.qu = StringParam(*policy, "qu");
  if (f.qu.has_value() && *f.qu != "content-bytes" &&
      *f.qu != "concurrent-requests") {
    return std::nullopt;
  }
  return f;
}

// A decision naming `policy` with `burst` per `interval`.
Decision Quota(std::string_view policy, int64_t burst, nanoseconds interval) {
  Decision d;
  d.quota.policy = policy;
  d.quota.burst = burst;
  d.quota.interval = interval;
  return d;
}

constexpr char kSend[] =
    "/_matrix/client/v3/rooms/!abc:example.org/send/m.room.message/t1";

// --- Formatting -------------------------------------------------------------

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

// --- What the limiter's decisions carry -------------------------------------

std::unique_ptr<Limiter> MakeLimiter(const LimiterConfig& config) {
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

TEST(RateLimitHeadersLimiterTest, DefaultConfigDescribesMessageSends) {
  LimiterConfig config;  // the built-in policies on
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request send =
      MakeRequest("PUT", kSend, "192.0.2.7", "@alice:example.org");
  // message-send: 12 a minute (T = 5 s), burst 10, so w = 50. It is the
  // tightest of the policies a send meets (the per-address ones have far
  // larger bursts).
  Decision d = limiter->Check(send, At(100));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(d.quota.policy, "message-send");
  EXPECT_EQ(d.quota.burst, 10);
  EXPECT_EQ(d.quota.interval, std::chrono::seconds(5));
  RateLimitHeaderValues v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("message-send";q=10;w=50)");
  EXPECT_EQ(v.ratelimit, R"("message-send";r=9;t=0)");
  for (int i = 0; i < 9; ++i) d = limiter->Check(send, At(100));
  ASSERT_TRUE(d.allowed);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=5)");
  // The eleventh is denied: t is the Retry-After value.
  d = limiter->Check(send, At(100));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(RetryAfterValue(d.retry_after, d.never), "5");
  v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("message-send";q=10;w=50)");
  EXPECT_EQ(v.ratelimit, R"("message-send";r=0;t=5)");
  // 2.5 s later half an interval has come back: still nothing left, and a
  // request fits in 2.5 s, said as 3.
  d = limiter->Check(
      send, MonotonicTime::FromNanoseconds(102 * kSecond + kSecond / 2));
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("message-send";r=0;t=3)");
  EXPECT_EQ(RetryAfterValue(d.retry_after, d.never), "3");
}

TEST(RateLimitHeadersLimiterTest, TheTightestEnforcingPolicyIsNamed) {
  LimiterConfig config;
  config.builtin_policies = false;
  // Two layers on one route: "wide" has the larger burst but the smaller
  // share left after a few requests.
  Policy narrow = MakePolicy("narrow", "/_matrix/client/v3/publicRooms",
                             Scope::kIp, 10, TimeUnit::kMinute, 5);
  Policy wide = MakePolicy("wide", "/_matrix/client/v3/publicRooms", Scope::kIp,
                           60, TimeUnit::kMinute, 3);
  wide.layer = "other";
  Policy trial = MakePolicy("trial", "/_matrix/client/v3/publicRooms",
                            Scope::kIp, 1, TimeUnit::kHour, 1);
  trial.shadow_mode = true;  // shadow policies are never named
  trial.layer = "trial";
  config.policies = {narrow, wide, trial};
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request r =
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.9");
  Decision d = limiter->Check(r, At(10));
  // narrow: 4 of 5 left; wide: 2 of 3 left, the smaller count.
  EXPECT_EQ(d.remaining, 2);
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("wide";r=2;t=0)");
  EXPECT_EQ(RateLimitHeaders(d).policy, R"("wide";q=3;w=3)");
  d = limiter->Check(r, At(10));
  d = limiter->Check(r, At(10));
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("wide";r=0;t=1)");
  // Three seconds on, wide is full again and narrow (T = 6 s) is tightest.
  d = limiter->Check(r, At(13));
  EXPECT_EQ(d.remaining, 1);
  EXPECT_EQ(RateLimitHeaders(d).policy, R"("narrow";q=5;w=30)");
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("narrow";r=1;t=0)");
}

TEST(RateLimitHeadersLimiterTest, ExemptUnlimitedAndBlockedWriteNothing) {
  LimiterConfig config;
  config.builtin_policies = false;
  Policy open = MakePolicy("open", "/_matrix/client/v3/publicRooms", Scope::kIp,
                           1, TimeUnit::kMinute);
  open.rate = Rate::Unlimited();
  Policy blocked = MakePolicy("blocked", "/_matrix/client/v3/login", Scope::kIp,
                              1, TimeUnit::kMinute);
  blocked.rate = Rate::Blocked();
  config.policies = {open, blocked};
  absl::StatusOr<Cidr> exempt = ParseCidr("198.51.100.0/24");
  ASSERT_TRUE(exempt.ok());
  config.exempt.ips = {*exempt};
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  Decision d = limiter->Check(
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.1"), At(1));
  EXPECT_EQ(d.remaining, kUnlimitedRemaining);
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d = limiter->Check(
      MakeRequest("POST", "/_matrix/client/v3/login", "192.0.2.1"), At(1));
  ASSERT_TRUE(d.never);
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d = limiter->Check(
      MakeRequest("POST", "/_matrix/client/v3/login", "198.51.100.4"), At(1));
  ASSERT_TRUE(d.exempt);
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
}

TEST(RateLimitHeadersLimiterTest, InFlightDenialNamesConcurrentRequests) {
  LimiterConfig config;
  config.builtin_policies = false;
  Policy one;
  one.name = "one-at-a-time";
  one.match = {"/_matrix/client/v3/publicRooms"};
  one.concurrency = Concurrency{1, std::chrono::seconds(30)};
  config.policies = {one};
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request r =
      MakeRequest("GET", "/_matrix/client/v3/publicRooms", "192.0.2.1");
  Decision d = limiter->Check(r, At(1));
  ASSERT_TRUE(d.allowed);
  // Only an in-flight limit applied: no rate, nothing to say.
  EXPECT_EQ(RateLimitHeaders(d).policy, "");
  d = limiter->Check(r, At(1));
  ASSERT_FALSE(d.allowed);
  RateLimitHeaderValues v = RateLimitHeaders(d);
  EXPECT_EQ(v.policy, R"("one-at-a-time";q=1;qu="concurrent-requests")");
  EXPECT_EQ(v.ratelimit, "\"one-at-a-time\";r=0;t=" +
                             RetryAfterValue(d.retry_after, d.never));
}

TEST(RateLimitHeadersLimiterTest, DelayedAdmissionIsDescribedWhenServed) {
  LimiterConfig config;
  config.builtin_policies = false;
  config.policies = {::mxlimit::testing::DelayedPolicy()};  // 10/s, burst 2
  std::unique_ptr<Limiter> limiter = MakeLimiter(config);
  ASSERT_NE(limiter, nullptr);
  const Request r = ::mxlimit::testing::Holdable(
      MakeRequest("GET", ::mxlimit::testing::kPublicRooms, "192.0.2.1"));
  limiter->Check(r, At(1));
  limiter->Check(r, At(1));
  const Decision d = limiter->Check(r, At(1));
  ASSERT_TRUE(d.allowed);
  ASSERT_EQ(d.delay, std::chrono::milliseconds(100));
  // As of the moment it is served: the bucket just emptied.
  EXPECT_EQ(RateLimitHeaders(d).ratelimit, R"("rooms-delayed";r=0;t=1)");
}

// Random arrivals against the default config and an awkward rate: on every
// denial `t` is exactly the Retry-After value, the same request passes
// `t` seconds later and not a second earlier, every value parses, and an
// allowed `t` is 0 exactly when something is left.
TEST(RateLimitHeadersLimiterTest, WaitNeverUndercutsRetryAfter) {
  LimiterConfig builtin;
  LimiterConfig awkward;
  // Operator policy for sends: 7 a minute (T = 8.571428571 s), burst 3.
  Policy odd = MakePolicy("odd-sends", "/_matrix/client/v3/rooms/*/send/*",
                          Scope::kUser, 7, TimeUnit::kMinute, 3);
  awkward.policies = {odd};
  std::mt19937_64 rng(33);
  for (const LimiterConfig* config : {&builtin, &awkward}) {
    std::unique_ptr<Limiter> limiter = MakeLimiter(*config);
    ASSERT_NE(limiter, nullptr);
    const Request send =
        MakeRequest("PUT", kSend, "192.0.2.7", "@bob:example.org");
    int64_t now = 1000 * kSecond;
    int denials = 0;
    for (int i = 0; i < 3000; ++i) {
      // Mostly bursts, sometimes a pause of up to ten seconds.
      now += (rng() % 4 == 0) ? static_cast<int64_t>(rng() % (10 * kSecond))
                              : static_cast<int64_t>(rng() % (kSecond / 4));
      const MonotonicTime at = MonotonicTime::FromNanoseconds(now);
      const Decision d = limiter->Check(send, at);
      const RateLimitHeaderValues v = RateLimitHeaders(d);
      const std::optional<ParsedFields> f = ParseFields(v);
      ASSERT_TRUE(f.has_value()) << v.policy << " / " << v.ratelimit;
      EXPECT_EQ(f->w,
                (f->q * d.quota.interval.count() + kSecond - 1) / kSecond);
      if (d.allowed) {
        EXPECT_EQ(f->r, d.remaining);
        EXPECT_EQ(f->t == 0, f->r > 0) << v.ratelimit;
        continue;
      }
      ++denials;
      ASSERT_FALSE(d.never);
      const int64_t retry_after = RetryAfterSeconds(d.retry_after);
      EXPECT_EQ(f->r, 0);
      EXPECT_GE(f->t, retry_after);
      EXPECT_EQ(RetryAfterValue(d.retry_after, d.never), std::to_string(f->t));
      EXPECT_TRUE(
          limiter
              ->Peek(send, MonotonicTime::FromNanoseconds(now + f->t * kSecond))
              .allowed);
      if (f->t > 0) {
        EXPECT_FALSE(limiter
                         ->Peek(send, MonotonicTime::FromNanoseconds(
                                          now + (f->t - 1) * kSecond))
                         .allowed);
      }
    }
    EXPECT_GT(denials, 100);
  }
}

}  // namespace ratelimit_headers_test
}  // namespace mxlimit
