// Query parameter names as the homeserver reads them: `QueryHasParameter`
// (query conditions) agrees with a decoding of every pair, on both its
// paths (nothing to decode, and escapes or '+').

#include "src/util/query.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace mxlimit::internal {
namespace {

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

}  // namespace
}  // namespace mxlimit::internal
