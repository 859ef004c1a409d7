// The admin API's body reader: what it takes, what it refuses, and that a
// hostile body is one pass with no recursion.

#include "src/util/flat_json.h"

#include <string>

#include "gtest/gtest.h"

namespace mxlimit::internal {
namespace {

TEST(FlatJsonTest, ReadsStringsIntegersBooleansAndNull) {
  absl::StatusOr<FlatJson> j = ParseFlatJson(
      R"( { "tier" : "bridge", "expires_in_ms": 60000, "x": true,
            "y": false, "z": null, "n": -5 } )");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->Find("tier")->text, "bridge");
  EXPECT_EQ(j->Find("expires_in_ms")->integer, 60000);
  EXPECT_TRUE(j->Find("x")->boolean);
  EXPECT_FALSE(j->Find("y")->boolean);
  EXPECT_EQ(j->Find("z")->kind, JsonValue::kNull);
  EXPECT_EQ(j->Find("n")->integer, -5);
  EXPECT_EQ(j->Find("missing"), nullptr);
  EXPECT_TRUE(ParseFlatJson("{}").ok());
}

TEST(FlatJsonTest, DecodesEscapesIntoUtf8) {
  absl::StatusOr<FlatJson> j =
      ParseFlatJson(R"({"s": "a\"b\\c\/d\n\u00e9\ud83d\ude00"})");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->Find("s")->text, "a\"b\\c/d\n\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(FlatJsonTest, RefusesWhatTheApiNeverTakes) {
  for (const std::string bad : {
           "",
           "[]",
           "{",
           "{\"a\"}",
           "{\"a\":}",
           "{\"a\":1,}",
           "{\"a\":1} x",
           "{\"a\":{\"b\":1}}",
           "{\"a\":[1]}",
           "{\"a\":1.5}",
           "{\"a\":1e3}",
           "{\"a\":01}",
           "{\"a\":99999999999999999999}",
           "{\"a\":\"\\x\"}",
           "{\"a\":\"\\ud800\"}",
           "{\"a\":\"\\udc00\"}",
           "{\"a\":\"x\ny\"}",
           "{\"a\":\"open",
           "{\"a\":tru}",
           "{\"a\":1,\"a\":2}",
           "{a:1}",
       }) {
    EXPECT_EQ(ParseFlatJson(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(FlatJsonTest, DeepNestingIsRefusedWithoutRecursion) {
  const std::string deep = "{\"a\":" + std::string(100'000, '[') + "}";
  EXPECT_FALSE(ParseFlatJson(deep).ok());
  EXPECT_TRUE(ParseFlatJson(R"({"tier":"bridge"})").ok());
}

TEST(FlatJsonTest, JsonStringEscapesQuotesAndControls) {
  EXPECT_EQ(JsonString("a\"b\\c\x01\x7f"), "\"a\\\"b\\\\c\\u0001\\u007f\"");
}

}  // namespace
}  // namespace mxlimit::internal
