// Matching primitives: the '*' glob (against a recursive reference),
// pattern shapes, method classes and the prefix trie.

#include "mxlimit/internal/policy_match.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/internal/prefix_trie.h"

namespace mxlimit::internal {
namespace {

TEST(GlobMatchTest, MatchesMatrixPatterns) {
  EXPECT_TRUE(
      GlobMatch("/_matrix/client/v3/keys/*", "/_matrix/client/v3/keys/claim"));
  EXPECT_TRUE(
      GlobMatch("/_matrix/client/v3/keys/*", "/_matrix/client/v3/keys/"));
  EXPECT_FALSE(
      GlobMatch("/_matrix/client/v3/keys/*", "/_matrix/client/v3/keys"));
  EXPECT_TRUE(GlobMatch("/_matrix/client/v3/rooms/*/send/*",
                        "/_matrix/client/v3/rooms/!a:b/send/m.room.message/t"));
  EXPECT_FALSE(GlobMatch("/_matrix/client/v3/rooms/*/send/*",
                         "/_matrix/client/v3/rooms/!a:b/state/x"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "/"));
  EXPECT_TRUE(GlobMatch("/login", "/login"));
  EXPECT_FALSE(GlobMatch("/login", "/login/"));
  // '*' crosses '/'.
  EXPECT_TRUE(GlobMatch("/a*z", "/a/b/c/z"));
  // Backtracking: the first "ab" candidate is not the right one.
  EXPECT_TRUE(GlobMatch("*ab*abc", "xabyabababc"));
}

// Reference: the recursive definition of a '*' glob, exponential but obviously
// right on short inputs.
bool ReferenceMatch(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '*') {
    return ReferenceMatch(pattern.substr(1), text) ||
           (!text.empty() && ReferenceMatch(pattern, text.substr(1)));
  }
  return !text.empty() && pattern[0] == text[0] &&
         ReferenceMatch(pattern.substr(1), text.substr(1));
}

TEST(GlobMatchTest, AgreesWithRecursiveReferenceOnRandomInputs) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab/";
  auto random_string = [&](size_t max_len, bool stars) {
    std::string s;
    size_t len = std::uniform_int_distribution<size_t>(0, max_len)(rng);
    for (size_t i = 0; i < len; ++i) {
      if (stars && rng() % 4 == 0) {
        s += '*';
      } else {
        s += alphabet[rng() % alphabet.size()];
      }
    }
    return s;
  };
  for (int i = 0; i < 20000; ++i) {
    std::string pattern = random_string(8, true);
    std::string text = random_string(10, false);
    ASSERT_EQ(GlobMatch(pattern, text), ReferenceMatch(pattern, text))
        << "pattern=" << pattern << " text=" << text;
  }
}

TEST(PatternShapeTest, ClassifiesAndCountsLiteralBytes) {
  PatternShape exact = ShapeOf("/_matrix/client/v3/login");
  EXPECT_EQ(exact.kind, PatternKind::kExact);
  EXPECT_EQ(exact.literal_bytes, 24u);
  EXPECT_EQ(exact.prefix, "/_matrix/client/v3/login");

  PatternShape prefix = ShapeOf("/_matrix/client/v3/keys/**");
  EXPECT_EQ(prefix.kind, PatternKind::kPrefix);
  EXPECT_EQ(prefix.literal_bytes, 24u);
  EXPECT_EQ(prefix.prefix, "/_matrix/client/v3/keys/");

  PatternShape all = ShapeOf("*");
  EXPECT_EQ(all.kind, PatternKind::kPrefix);
  EXPECT_EQ(all.literal_bytes, 0u);
  EXPECT_EQ(all.prefix, "");

  PatternShape inner = ShapeOf("/_matrix/client/v3/*/report*");
  EXPECT_EQ(inner.kind, PatternKind::kInnerStar);
  EXPECT_EQ(inner.literal_bytes, 26u);
  EXPECT_EQ(inner.prefix, "/_matrix/client/v3/");
}

TEST(MethodClassTest, IsCaseSensitiveAndHasAnOtherClass) {
  EXPECT_EQ(ClassifyMethod("GET"), kGet);
  EXPECT_EQ(ClassifyMethod("DELETE"), kDelete);
  EXPECT_EQ(ClassifyMethod("get"), kOtherMethod);
  EXPECT_EQ(ClassifyMethod(""), kOtherMethod);
  EXPECT_EQ(ClassifyMethod("PROPFIND"), kOtherMethod);
}

std::vector<uint32_t> PrefixesOf(const PrefixTrie& trie, std::string_view t) {
  std::vector<uint32_t> out;
  trie.ForEachMatch(t, [&](uint32_t v) { out.push_back(v); });
  return out;
}

TEST(PrefixTrieTest, VisitsEveryStoredPrefixShortestFirst) {
  PrefixTrie::Builder b;
  b.Slot("") = 0;
  b.Slot("/_matrix/client/") = 1;
  b.Slot("/_matrix/client/v3/keys/") = 2;
  b.Slot("/_matrix/client/v3/keys/claim") = 3;
  b.Slot("/_matrix/media/") = 4;
  b.Slot("/_matrix/client/v3/kez");  // Created, no value: never visited.
  PrefixTrie trie = std::move(b).Build();
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/keys/claim"),
            (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/keys/clai"),
            (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/media/v3/upload"),
            (std::vector<uint32_t>{0, 4}));
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/kez/x"),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(PrefixesOf(trie, ""), (std::vector<uint32_t>{0}));
  EXPECT_EQ(PrefixesOf(PrefixTrie(), "/x"), std::vector<uint32_t>{});
}

TEST(PrefixTrieTest, ExactEntriesMatchOnlyTheWholeText) {
  PrefixTrie::Builder b;
  b.Slot("/_matrix/client/") = 1;
  b.ExactSlot("/_matrix/client/v3/login") = 10;
  b.Slot("/_matrix/client/v3/login") = 11;     // Same string, prefix value.
  b.ExactSlot("/_matrix/client/v3/log") = 12;  // Inside a folded chain.
  b.ExactSlot("/_synapse/admin") = 13;
  PrefixTrie trie = std::move(b).Build();
  // Prefix values first, then the exact value for the text itself.
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/login"),
            (std::vector<uint32_t>{1, 11, 10}));
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/login/"),
            (std::vector<uint32_t>{1, 11}));
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/log"),
            (std::vector<uint32_t>{1, 12}));
  EXPECT_EQ(PrefixesOf(trie, "/_matrix/client/v3/lo"),
            (std::vector<uint32_t>{1}));
  EXPECT_EQ(PrefixesOf(trie, "/_synapse/admin"), (std::vector<uint32_t>{13}));
  EXPECT_EQ(PrefixesOf(trie, "/_synapse/admin/v1"), std::vector<uint32_t>{});
  EXPECT_EQ(PrefixesOf(trie, "/_synapse/admi"), std::vector<uint32_t>{});
}

TEST(PrefixTrieTest, HandlesEveryByteValue) {
  PrefixTrie::Builder b;
  std::string all;
  for (int c = 0; c < 256; ++c) {
    std::string key(1, static_cast<char>(c));
    b.Slot(key) = static_cast<uint32_t>(c);
  }
  PrefixTrie trie = std::move(b).Build();
  for (int c = 0; c < 256; ++c) {
    std::string key(1, static_cast<char>(c));
    EXPECT_EQ(PrefixesOf(trie, key + "tail"),
              std::vector<uint32_t>{static_cast<uint32_t>(c)});
  }
}

}  // namespace
}  // namespace mxlimit::internal
