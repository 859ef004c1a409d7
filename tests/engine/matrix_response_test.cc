#include "mxlimit/matrix_response.h"

#include <chrono>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace mxlimit {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr char kHead[] =
    R"({"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests")";

TEST(MatrixResponseTest, BodyCarriesWaitInMillisecondsRoundedUp) {
  EXPECT_EQ(LimitExceededBody(milliseconds(1500), false),
            std::string(kHead) + R"(,"retry_after_ms":1500})");
  EXPECT_EQ(LimitExceededBody(nanoseconds(1), false),
            std::string(kHead) + R"(,"retry_after_ms":1})");
  EXPECT_EQ(LimitExceededBody(nanoseconds(1'000'001), false),
            std::string(kHead) + R"(,"retry_after_ms":2})");
  EXPECT_EQ(LimitExceededBody(nanoseconds(999'999), false),
            std::string(kHead) + R"(,"retry_after_ms":1})");
}

TEST(MatrixResponseTest, ZeroAndNegativeWaitsReportZero) {
  EXPECT_EQ(LimitExceededBody(nanoseconds(0), false),
            std::string(kHead) + R"(,"retry_after_ms":0})");
  EXPECT_EQ(LimitExceededBody(nanoseconds(-5'000'000), false),
            std::string(kHead) + R"(,"retry_after_ms":0})");
  EXPECT_EQ(RetryAfterValue(nanoseconds(0), false), "0");
  EXPECT_EQ(RetryAfterValue(seconds(-3), false), "0");
}

TEST(MatrixResponseTest, NeverOmitsTheWait) {
  EXPECT_EQ(LimitExceededBody(seconds(5), true), std::string(kHead) + "}");
  EXPECT_EQ(RetryAfterValue(seconds(5), true), "");
  char buf[kRetryAfterValueMaxBytes];
  EXPECT_EQ(WriteRetryAfterValue(seconds(5), true, buf), 0u);
}

TEST(MatrixResponseTest, RetryAfterIsWholeSecondsRoundedUp) {
  EXPECT_EQ(RetryAfterValue(nanoseconds(1), false), "1");
  EXPECT_EQ(RetryAfterValue(milliseconds(999), false), "1");
  EXPECT_EQ(RetryAfterValue(milliseconds(1000), false), "1");
  EXPECT_EQ(RetryAfterValue(milliseconds(1001), false), "2");
  EXPECT_EQ(RetryAfterValue(std::chrono::hours(1), false), "3600");
  EXPECT_EQ(RetryAfterSeconds(nanoseconds(2'000'000'001)), 3);
  EXPECT_EQ(RetryAfterMilliseconds(nanoseconds(2'000'000'001)), 2001);
}

TEST(MatrixResponseTest, LargestWaitFitsTheDocumentedBuffers) {
  const nanoseconds max(std::numeric_limits<int64_t>::max());
  char body[kLimitExceededBodyMaxBytes];
  const size_t n = WriteLimitExceededBody(max, false, body);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(std::string(body, n),
            std::string(kHead) + R"(,"retry_after_ms":9223372036855})");
  char value[kRetryAfterValueMaxBytes];
  const size_t m = WriteRetryAfterValue(max, false, value);
  EXPECT_EQ(std::string(value, m), "9223372037");
}

TEST(MatrixResponseTest, ShortBufferGetsNothingWritten) {
  std::string expected = std::string(kHead) + R"(,"retry_after_ms":250})";
  std::string buf(expected.size() - 1, 'x');
  EXPECT_EQ(WriteLimitExceededBody(milliseconds(250), false, buf), 0u);
  EXPECT_EQ(buf, std::string(expected.size() - 1, 'x'));
  buf.assign(expected.size(), 'x');
  EXPECT_EQ(WriteLimitExceededBody(milliseconds(250), false, buf),
            expected.size());
  EXPECT_EQ(buf, expected);
  char two[2] = {'x', 'x'};
  EXPECT_EQ(WriteRetryAfterValue(seconds(100), false, two), 0u);
  EXPECT_EQ(two[0], 'x');
  EXPECT_EQ(WriteRetryAfterValue(seconds(99), false, two), 2u);
  EXPECT_EQ(std::string(two, 2), "99");
}

TEST(MatrixResponseTest, APolicysErrcodeAndMsc4335Fields) {
  LimitError e{"M_USER_LIMIT_EXCEEDED", "https://example.org/plans",
               LimitError::Upgrade::kYes};
  char body[kLimitBodyMaxBytes];
  size_t n = WriteLimitBody(e, milliseconds(1500), false, body);
  EXPECT_EQ(std::string(body, n),
            R"({"errcode":"M_USER_LIMIT_EXCEEDED","error":"Too many requests",)"
            R"("retry_after_ms":1500,"info_uri":"https://example.org/plans",)"
            R"("can_upgrade":true})");
  e.can_upgrade = LimitError::Upgrade::kNo;
  n = WriteLimitBody(e, milliseconds(1500), true, body);
  EXPECT_EQ(std::string(body, n),
            R"({"errcode":"M_USER_LIMIT_EXCEEDED","error":"Too many requests",)"
            R"("info_uri":"https://example.org/plans","can_upgrade":false})");
  // No errcode: the M_LIMIT_EXCEEDED body, exactly.
  n = WriteLimitBody(LimitError{}, milliseconds(250), false, body);
  EXPECT_EQ(std::string(body, n),
            std::string(kHead) + R"(,"retry_after_ms":250})");
  LimitError resource;
  resource.errcode = "M_RESOURCE_LIMIT_EXCEEDED";
  n = WriteLimitBody(resource, milliseconds(1), false, body);
  EXPECT_EQ(std::string(body, n),
            R"({"errcode":"M_RESOURCE_LIMIT_EXCEEDED","error":)"
            R"("Too many requests","retry_after_ms":1})");
}

TEST(MatrixResponseTest, LimitBodyOfTheLongestFieldsFitsItsBuffer) {
  const std::string code(64, 'M');
  const std::string uri = "https://" + std::string(1024 - 8, 'a');
  const LimitError e{code, uri, LimitError::Upgrade::kYes};
  const nanoseconds max(std::numeric_limits<int64_t>::max());
  char body[kLimitBodyMaxBytes];
  const size_t n = WriteLimitBody(e, max, false, body);
  ASSERT_GT(n, 0u);
  EXPECT_LE(n, sizeof(body));
  // One byte short: nothing written.
  std::string small(n - 1, 'x');
  EXPECT_EQ(WriteLimitBody(e, max, false, small), 0u);
  EXPECT_EQ(small, std::string(n - 1, 'x'));
}

}  // namespace
}  // namespace mxlimit
