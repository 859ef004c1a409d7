// The log parsers' helpers that moved onto libraries: character classes
// from absl/strings/ascii.h. Each is compared, over its whole input range,
// with the hand-written code it replaced (spelled out below), so the switch
// changes nothing.

#include "src/replay/text_scan.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace mxlimit::replay::internal {
namespace {

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
