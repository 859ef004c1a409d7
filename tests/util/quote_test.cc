#include "src/util/quote.h"

#include <string>

#include "gtest/gtest.h"

namespace mxlimit::internal {
namespace {

TEST(EscapeForOutputTest, LeavesPrintableAsciiAlone) {
  EXPECT_EQ(EscapeForOutput("/_matrix/client/v3/sync?since=s1"),
            "/_matrix/client/v3/sync?since=s1");
}

TEST(EscapeForOutputTest, EscapesC0DelAndC1ControlsWhole) {
  // "\n" ends a line, ESC starts a terminal sequence, U+0085 (NEL) is a C1
  // control in UTF-8, 0x9B a raw C1 CSI.
  const std::string text =
      std::string("a\nb\x1b[2J\x7f\xc2\x85\x9b") + std::string(100, 'z');
  const std::string escaped = EscapeForOutput(text);
  EXPECT_EQ(escaped,
            "a\\nb\\x1b[2J\\x7f\\xc2\\x85\\x9b" + std::string(100, 'z'));
  for (char c : escaped) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
  }
}

TEST(QuoteForErrorTest, QuotesEscapesAndCuts) {
  EXPECT_EQ(QuoteForError("a\x1b"), "\"a\\x1b\"");
  EXPECT_EQ(QuoteForError(std::string(65, 'a')),
            "\"" + std::string(64, 'a') + "...\" (65 bytes)");
}

}  // namespace
}  // namespace mxlimit::internal
