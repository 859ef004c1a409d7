// The top-level `response_headers` key: off unless the file says
// `ratelimit`, and any other value an error at its own line and column.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/options.h"
#include "tests/testing/config_helpers.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using testing_config::Errors;
using testing_config::Parse;

TEST(ConfigResponseHeadersTest, OffUnlessTheFileAsks) {
  EXPECT_EQ(LimiterConfig{}.response_headers, ResponseHeaders::kNone);
  EXPECT_EQ(Parse("").response_headers, ResponseHeaders::kNone);
  EXPECT_EQ(Parse("builtin_policies: true\n").response_headers,
            ResponseHeaders::kNone);
  EXPECT_EQ(Parse("response_headers: none\n").response_headers,
            ResponseHeaders::kNone);
  EXPECT_EQ(Parse("response_headers: \"none\"\n").response_headers,
            ResponseHeaders::kNone);
}

TEST(ConfigResponseHeadersTest, RateLimitTurnsTheFieldsOn) {
  const LimiterConfig config = Parse(
      "builtin_policies: true\n"
      "response_headers: ratelimit\n"
      "policies:\n"
      "  - name: login\n"
      "    match: /_matrix/client/v3/login\n"
      "    rate_limit: { unit: minute, requests_per_unit: 3, burst: 2 }\n");
  EXPECT_EQ(config.response_headers, ResponseHeaders::kRateLimit);
  EXPECT_TRUE(config.builtin_policies);
  ASSERT_EQ(config.policies.size(), 1u);
  // The key's place in the file does not matter.
  EXPECT_EQ(
      Parse("policies: []\nresponse_headers: ratelimit\n").response_headers,
      ResponseHeaders::kRateLimit);
}

TEST(ConfigResponseHeadersTest, OtherValuesAreErrorsAtTheValue) {
  EXPECT_THAT(Errors("shadow_mode: false\nresponse_headers: ratelimits\n"),
              ElementsAre("test.yaml:2:19: response_headers: got ratelimits, "
                          "expected none or ratelimit (did you mean "
                          "\"ratelimit\"?)"));
  // Case matters, as for every other word of the file.
  EXPECT_THAT(Errors("response_headers: RateLimit\n"),
              ElementsAre("test.yaml:1:19: response_headers: got RateLimit, "
                          "expected none or ratelimit (did you mean "
                          "\"ratelimit\"?)"));
  EXPECT_THAT(Errors("response_headers: true\n"),
              ElementsAre("test.yaml:1:19: response_headers: got true, "
                          "expected none or ratelimit"));
  EXPECT_THAT(Errors("response_headers: [ratelimit]\n"),
              ElementsAre("test.yaml:1:19: response_headers: got a list, "
                          "expected none or ratelimit"));
  // An empty value is reported at its key.
  EXPECT_THAT(Errors("response_headers:\n"),
              ElementsAre("test.yaml:1:1: response_headers: got nothing, "
                          "expected none or ratelimit"));
}

TEST(ConfigResponseHeadersTest, ReportedWithTheFilesOtherErrors) {
  EXPECT_THAT(Errors("builtin_policies: yes\nresponse_headers: all\n"),
              ElementsAre("test.yaml:1:19: builtin_policies: got yes, "
                          "expected true or false",
                          "test.yaml:2:19: response_headers: got all, "
                          "expected none or ratelimit"));
}

}  // namespace
}  // namespace mxlimit
