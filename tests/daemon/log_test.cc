// mxlimitd's log lines: logfmt, one line per event, every value readable by
// a logfmt parser (double quotes only; issue #30, item 15: a single quote
// was escaped as \' by C escaping).

#include "src/daemon/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mxlimit::daemon {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(LogfmtValueTest, PlainValuesAreBare) {
  EXPECT_EQ(LogfmtValue("127.0.0.1:8089"), "127.0.0.1:8089");
  EXPECT_EQ(LogfmtValue("/etc/mx.yaml"), "/etc/mx.yaml");
  EXPECT_EQ(LogfmtValue("redis://mx:***@h:1/0"), "\"redis://mx:***@h:1/0\"");
  EXPECT_EQ(LogfmtValue(""), "\"\"");
}

TEST(LogfmtValueTest, SingleQuotesAreNotEscaped) {
  EXPECT_EQ(LogfmtValue("it's"), "\"it's\"");
  EXPECT_EQ(LogfmtValue("can't reach the store's 'host'"),
            "\"can't reach the store's 'host'\"");
}

TEST(LogfmtValueTest, DoubleQuotesBackslashesAndControlsAreEscaped) {
  EXPECT_EQ(LogfmtValue("a \"b\" c"), "\"a \\\"b\\\" c\"");
  EXPECT_EQ(LogfmtValue("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(LogfmtValue("a\nb\r\tc"), "\"a\\nb\\r\\tc\"");
  EXPECT_EQ(LogfmtValue(std::string("a\0b", 3)), "\"a\\x00b\"");
  EXPECT_EQ(LogfmtValue("\x1b[31m\x7f\xc3\xa9"),
            "\"\\x1b[31m\\x7f\\xc3\\xa9\"");
}

// The whole line, as written to standard error.
TEST(LogTest, WritesOneLogfmtLine) {
  char path[] = "/tmp/mxlimit_log_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup2(fd, STDERR_FILENO), STDERR_FILENO);
  Log("error", "reload refused; the old policies stay",
      {{"config", "/etc/mx.yaml"}, {"error", "policy 'x': \"y\"\n"}});
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string line(4096, '\0');
  const ssize_t got = pread(fd, line.data(), line.size(), 0);
  close(fd);
  unlink(path);
  ASSERT_GT(got, 0);
  line.resize(static_cast<size_t>(got));
  EXPECT_THAT(line, StartsWith("ts="));
  EXPECT_THAT(line, HasSubstr(" level=error msg=\"reload refused; the old "
                              "policies stay\" config=/etc/mx.yaml "
                              "error=\"policy 'x': \\\"y\\\"\\n\"\n"));
  EXPECT_THAT(line, EndsWith("\n"));
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

}  // namespace
}  // namespace mxlimit::daemon
