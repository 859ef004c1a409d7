// Query parameter names as the homeserver reads them: `QueryHasParameter`
// (query conditions) and `QueryParameter` (timeouts, tokens, appservice
// users) match names once decoded, whether or not a name has escapes.

#include "src/util/query.h"

#include <random>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/internal/hex.h"

namespace mxlimit::internal {
namespace {

// The reference: every pair of the query split out and its name decoded.
bool ReferenceHasParameter(std::string_view target, std::string_view name) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return false;
  if (target.substr(0, q).find('#') != std::string_view::npos) return false;
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  while (true) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::string_view raw = pair.substr(0, pair.find('='));
    std::string decoded;
    for (size_t i = 0; i < raw.size(); ++i) {
      const int hi = i + 2 < raw.size() ? HexDigitValue(raw[i + 1]) : -1;
      const int lo = i + 2 < raw.size() ? HexDigitValue(raw[i + 2]) : -1;
      if (raw[i] == '%' && hi >= 0 && lo >= 0) {
        decoded += static_cast<char>(hi << 4 | lo);
        i += 2;
      } else {
        decoded += raw[i] == '+' ? ' ' : raw[i];
      }
    }
    if (decoded == name) return true;
    if (amp == std::string_view::npos) return false;
    query.remove_prefix(amp + 1);
  }
}

TEST(QueryHasParameterTest, FindsWholeNamesOnly) {
  constexpr std::string_view kSync = "/_matrix/client/v3/sync";
  const std::string with = std::string(kSync) + "?timeout=30000&since=s1";
  EXPECT_TRUE(QueryHasParameter(with, "since"));
  EXPECT_TRUE(QueryHasParameter(with, "timeout"));
  EXPECT_FALSE(QueryHasParameter(with, "time"));
  EXPECT_FALSE(QueryHasParameter(with, "s1"));  // a value, not a name
  EXPECT_TRUE(QueryHasParameter(std::string(kSync) + "?since", "since"));
  EXPECT_TRUE(QueryHasParameter(std::string(kSync) + "?a=1&since&b", "since"));
  EXPECT_FALSE(QueryHasParameter(std::string(kSync) + "?nosince=1", "since"));
  EXPECT_FALSE(QueryHasParameter(std::string(kSync) + "?sinceX=1", "since"));
  EXPECT_FALSE(QueryHasParameter(kSync, "since"));
  // The path is not the query, nor is a fragment.
  EXPECT_FALSE(QueryHasParameter("/since?x=1", "since"));
  EXPECT_FALSE(QueryHasParameter("/sync?x=1#since=1", "since"));
  EXPECT_FALSE(QueryHasParameter("/sync#x?since=1", "since"));
  EXPECT_TRUE(QueryHasParameter("?since=1", "since"));  // a query alone
  EXPECT_FALSE(QueryHasParameter("/sync?&&=1&", "since"));
}

TEST(QueryHasParameterTest, DecodesNamesAsTheServerDoes) {
  EXPECT_TRUE(QueryHasParameter("/sync?%73ince=s1", "since"));
  EXPECT_TRUE(QueryHasParameter("/sync?a=%20&%73%69nce", "since"));
  EXPECT_TRUE(QueryHasParameter("/x?full+state=1", "full state"));
  EXPECT_FALSE(QueryHasParameter("/sync?%73inc=s1", "since"));
  // A malformed escape is compared as written.
  EXPECT_TRUE(QueryHasParameter("/x?a%zz=1", "a%zz"));
  EXPECT_FALSE(QueryHasParameter("/x?a%zz=1", "a"));
}

// Random queries of every length up to several 16-byte blocks, from the
// bytes that matter: names found or not across block edges, fragments,
// escapes before and after them.
TEST(QueryHasParameterTest, AgreesWithDecodingEveryPair) {
  std::mt19937 rng(7);
  constexpr std::string_view kBytes = "sinc=&#%+7e3a";
  const std::string_view names[] = {"since", "s", "a", "sin ce", "e", "a+"};
  for (int round = 0; round < 20'000; ++round) {
    std::string target = round % 3 == 0 ? "/sync?" : "?";
    const size_t n = rng() % 70;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 5 == 0) {
        target += "since";
      } else {
        target += kBytes[rng() % kBytes.size()];
      }
    }
    for (const std::string_view name : names) {
      ASSERT_EQ(QueryHasParameter(target, name),
                ReferenceHasParameter(target, name))
          << target << " name " << name;
    }
  }
}

TEST(QueryParameterTest, FirstOccurrenceAndFragments) {
  char buffer[64];
  std::string_view value;
  bool found = false;
  ASSERT_TRUE(QueryParameter("/p?a=1&b=2&a=3#a=4", "a", buffer, value, found));
  EXPECT_TRUE(found);
  EXPECT_EQ(value, "1");
  ASSERT_TRUE(QueryParameter("/p#?a=1", "a", buffer, value, found));
  EXPECT_FALSE(found);
  ASSERT_TRUE(QueryParameter("/p?ab=1", "a", buffer, value, found));
  EXPECT_FALSE(found);
  ASSERT_TRUE(QueryParameter("/p?b=2#a=1", "a", buffer, value, found));
  EXPECT_FALSE(found);
  ASSERT_TRUE(QueryParameter("/p?a&b=2", "a", buffer, value, found));
  EXPECT_TRUE(found);
  EXPECT_EQ(value, "");
}

TEST(QueryParameterTest, MatchesDecodedNamesAndDecodesTheValue) {
  char buffer[16];
  std::string_view value;
  bool found = false;
  ASSERT_TRUE(QueryParameter("/p?a=1&%74imeout=5%300&timeout=9", "timeout",
                             buffer, value, found));
  EXPECT_TRUE(found);
  EXPECT_EQ(value, "500");  // the first occurrence, decoded
  ASSERT_TRUE(
      QueryParameter("/p?user_id=%40a%3Ab", "user_id", buffer, value, found));
  EXPECT_EQ(value, "@a:b");
  // A malformed escape: false, with the raw text.
  EXPECT_FALSE(QueryParameter("/p?t=1%2", "t", buffer, value, found));
  EXPECT_TRUE(found);
  EXPECT_EQ(value, "1%2");
  // Longer than the buffer.
  EXPECT_FALSE(
      QueryParameter("/p?t=0123456789abcdefg", "t", buffer, value, found));
}

}  // namespace
}  // namespace mxlimit::internal
