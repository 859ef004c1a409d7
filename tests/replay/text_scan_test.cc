// The log parsers' helpers that moved onto libraries: civil times on
// std::chrono's calendar and character classes from absl/strings/ascii.h.
// Each is compared, over its whole input range, with the hand-written code
// it replaced (copied below), so the switch changes nothing.

#include "src/replay/text_scan.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace mxlimit::replay::internal {
namespace {

// Howard Hinnant's days_from_civil, as text_scan.h had it.
int64_t ReferenceDaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ReferenceIsValidDate(int y, int m, int d) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  if (y < 1 || m < 1 || m > 12 || d < 1) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  int max_day = kDays[m - 1] + (m == 2 && leap ? 1 : 0);
  return d <= max_day;
}

TEST(TextScanTest, IsValidDateMatchesTheHandWrittenCalendar) {
  // Every four-digit year (what FixedDigits(4) yields) and every month and
  // day of two digits (FixedDigits(2)).
  for (int y = 0; y <= 9999; ++y) {
    for (int m = 0; m <= 99; ++m) {
      for (int d = 0; d <= 99; d += (m >= 1 && m <= 12) ? 1 : 33) {
        ASSERT_EQ(IsValidDate(y, m, d), ReferenceIsValidDate(y, m, d))
            << y << "-" << m << "-" << d;
      }
    }
  }
}

TEST(TextScanTest, CivilToEpochMsMatchesDaysFromCivilOnEveryDate) {
  for (int y = 1; y <= 9999; ++y) {
    for (int m = 1; m <= 12; ++m) {
      for (int d = 1; d <= 31 && ReferenceIsValidDate(y, m, d); ++d) {
        ASSERT_EQ(CivilToEpochMs(y, m, d, 0, 0, 0, 0),
                  ReferenceDaysFromCivil(y, m, d) * 86'400'000)
            << y << "-" << m << "-" << d;
      }
    }
  }
}

TEST(TextScanTest, CivilToEpochMsAddsTheTimeOfDayAndFoldsLeapSeconds) {
  EXPECT_EQ(CivilToEpochMs(1970, 1, 1, 0, 0, 0, 0), 0);
  EXPECT_EQ(CivilToEpochMs(2026, 11, 30, 10, 0, 0, 0), 1'796'032'800'000);
  EXPECT_EQ(CivilToEpochMs(2026, 11, 30, 23, 59, 59, 999),
            CivilToEpochMs(2026, 12, 1, 0, 0, 0, 0) - 1);
  // Second 60 is the next minute's :00.
  EXPECT_EQ(CivilToEpochMs(2016, 12, 31, 23, 59, 60, 0),
            CivilToEpochMs(2017, 1, 1, 0, 0, 0, 0));
  EXPECT_EQ(CivilToEpochMs(1, 1, 1, 0, 0, 0, 0), -62'135'596'800'000);
}

// The sets the parsers were written with, byte by byte, against the abseil
// classes that replaced them (which take the byte as unsigned).
TEST(TextScanTest, AbseilClassesMatchTheHandWrittenSets) {
  for (int i = 0; i < 256; ++i) {
    const char c = static_cast<char>(i);
    const auto u = static_cast<unsigned char>(i);
    const bool digit = c >= '0' && c <= '9';
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool hex = digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    EXPECT_EQ(absl::ascii_isdigit(u), digit) << i;
    EXPECT_EQ(absl::ascii_isalnum(u), digit || alpha) << i;
    EXPECT_EQ(absl::ascii_isxdigit(u), hex) << i;
    EXPECT_EQ(absl::ascii_isgraph(u), u > 0x20 && u < 0x7f) << i;
    EXPECT_EQ(absl::ascii_isblank(u), c == ' ' || c == '\t') << i;
    const char lower =
        c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    EXPECT_EQ(absl::ascii_tolower(u), lower) << i;
  }
}

TEST(TextScanTest, TokenTargetAndServerNameClassesPerByte) {
  const std::string_view tchar_symbols = "!#$%&'*+-.^_`|~";
  for (int i = 0; i < 256; ++i) {
    const char c = static_cast<char>(i);
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z');
    const bool tchar =
        alnum || (c != '\0' && tchar_symbols.find(c) != std::string_view::npos);
    EXPECT_EQ(IsTokenChar(c), tchar) << i;
    const bool visible = i > 0x20 && i < 0x7f;
    EXPECT_EQ(IsRequestTarget(std::string("/") + c), visible) << i;
    const bool server =
        alnum || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
    EXPECT_EQ(IsServerName(std::string(1, c)), server) << i;
    const std::string line = std::string(1, c) + "x";
    Scanner blanks(line);
    EXPECT_EQ(blanks.SkipBlanks(), c == ' ' || c == '\t' ? 1u : 0u) << i;
  }
  EXPECT_TRUE(IsRequestTarget("HtTpS://example.org/"));
  EXPECT_FALSE(IsRequestTarget("ftp://example.org/"));
}

}  // namespace
}  // namespace mxlimit::replay::internal
