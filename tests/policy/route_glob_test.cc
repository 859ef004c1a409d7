// The compile-time reasoning behind PolicySet's route-only resolution: form
// globs and glob overlap, the latter held to a brute-force search.

#include "src/policy/route_glob.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/route.h"

namespace mxlimit::internal {
namespace {

// A form glob written with '#' for each segment star.
std::string G(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '#') c = kSegmentStar;
  }
  return out;
}

// Whether `form` (a form glob) matches all of `text`, by plain recursion.
bool FormMatches(std::string_view form, std::string_view text) {
  if (form.empty()) return text.empty();
  if (form[0] == '*' || form[0] == kSegmentStar) {
    for (size_t n = 0; n <= text.size(); ++n) {
      if (FormMatches(form.substr(1), text.substr(n))) return true;
      if (n < text.size() && form[0] == kSegmentStar && text[n] == '/') break;
    }
    return false;
  }
  return !text.empty() && text[0] == form[0] &&
         FormMatches(form.substr(1), text.substr(1));
}

TEST(RouteFormGlobTest, PlaceholdersBecomeSegmentStarsAndVersionsFold) {
  EXPECT_EQ(RouteFormGlob("/_matrix/client/r0/rooms/{roomId}/state"),
            G("/_matrix/client/v3/rooms/#/state"));
  EXPECT_EQ(RouteFormGlob("/_matrix/client/api/v1/rooms/{roomId}/send/{a}/{b}"),
            G("/_matrix/client/v3/rooms/#/send/#/#"));
  EXPECT_EQ(RouteFormGlob("/_matrix/media/v1/download/{s}/{m}"),
            G("/_matrix/media/v3/download/#/#"));
  EXPECT_EQ(RouteFormGlob("/_matrix/client/versions"),
            "/_matrix/client/versions");
  EXPECT_EQ(RouteFormGlob("/_matrix/static/client/login/"),
            "/_matrix/static/client/login/");
  // No fold reaches the third segment outside /_matrix/client and media.
  EXPECT_EQ(RouteFormGlob("/_synapse/client/rendezvous/{sessionId}"),
            G("/_synapse/client/rendezvous/#"));
  EXPECT_EQ(FormGlobHead(G("/_matrix/client/v3/rooms/#/state")),
            "/_matrix/client/v3/rooms/");
}

TEST(RouteFormGlobTest, RefusesWhatCouldMissAServedPath) {
  // A placeholder where a version fold could reach.
  EXPECT_EQ(RouteFormGlob("/_matrix/client/{v}/sync"), std::nullopt);
  EXPECT_EQ(RouteFormGlob("/_matrix/client/api/{v}/sync"), std::nullopt);
  EXPECT_EQ(RouteFormGlob("/{api}/x/y/z"), std::nullopt);
  // A literal with an escape (the canonical path would decode it).
  EXPECT_EQ(RouteFormGlob("/_matrix/client/v3/a%21b"), std::nullopt);
  EXPECT_EQ(RouteFormGlob("relative/path"), std::nullopt);
  EXPECT_EQ(RouteFormGlob(""), std::nullopt);
}

// Every served form of the built-in table yields a glob, and the glob matches
// the canonical path of an instance of it.
TEST(RouteFormGlobTest, BuiltinFormsAllHaveGlobs) {
  RouteNormalizer normalizer;
  size_t with_glob = 0;
  for (const RouteForm& form : normalizer.forms()) {
    if (RouteFormGlob(form.pattern).has_value()) ++with_glob;
  }
  EXPECT_EQ(with_glob, normalizer.forms().size());
  EXPECT_GT(normalizer.forms().size(), normalizer.size());
}

TEST(GlobsOverlapTest, Cases) {
  EXPECT_TRUE(GlobsOverlap("/a/*", "/a/b"));
  EXPECT_TRUE(GlobsOverlap("*", ""));
  EXPECT_TRUE(GlobsOverlap("", ""));
  EXPECT_FALSE(GlobsOverlap("", "a"));
  EXPECT_FALSE(GlobsOverlap("/a/*", G("/b/#")));
  EXPECT_TRUE(GlobsOverlap("/v3/*/requestToken", G("/v3/rooms/#/send/#/#")));
  EXPECT_FALSE(GlobsOverlap("/v3/keys/*", G("/v3/room_keys/keys/#")));
  // A segment star never spans a '/'; a pattern's '*' does.
  EXPECT_FALSE(GlobsOverlap("/v3/rooms/x/state/*", G("/v3/rooms/#/send/#")));
  EXPECT_TRUE(GlobsOverlap("/v3/rooms/x/state/*", "/v3/rooms/*/send/*"));
  EXPECT_TRUE(GlobsOverlap("/v3/*/send/*", G("/v3/rooms/#/send/#")));
  EXPECT_TRUE(GlobsOverlap("a*b", "a*"));
  EXPECT_TRUE(GlobsOverlap("*ab*", "*ba*"));
  EXPECT_FALSE(GlobsOverlap("a*", "b*"));
  EXPECT_FALSE(GlobsOverlap("*a", "*b"));
  EXPECT_FALSE(GlobsOverlap("a*b*c", "a*d"));
  EXPECT_TRUE(GlobsOverlap("x*y*z", "*y*"));
  // Forms of 64 bytes and more take the cell search.
  const std::string long_form = G("/" + std::string(70, 'a') + "/#/b");
  EXPECT_TRUE(GlobsOverlap("/a*/x/b", long_form));
  EXPECT_FALSE(GlobsOverlap("/a*/x/y/b", long_form));
  EXPECT_FALSE(GlobsOverlap("/a*/x/c*", long_form));
}

// Random patterns over {a, /, *} and form globs over {a, /, *, segment star}
// against a search over every text up to the longest witness such a pair can
// need (each byte of a shortest common text matches a literal of one of them,
// so |pattern| + |form| bytes over {a, /}).
TEST(GlobsOverlapTest, AgreesWithBruteForce) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> len(0, 5);
  auto random_glob = [&](std::string_view alphabet) {
    std::uniform_int_distribution<size_t> sym(0, alphabet.size() - 1);
    std::string g;
    for (int i = len(rng); i > 0; --i) g.push_back(alphabet[sym(rng)]);
    return g;
  };
  std::vector<std::string> texts = {""};
  for (size_t start = 0, n = 1; n <= 10; ++n) {
    const size_t end = texts.size();
    for (size_t i = start; i < end; ++i) {
      texts.push_back(texts[i] + "a");
      texts.push_back(texts[i] + "/");
    }
    start = end;
  }
  const std::string form_alphabet = G("a/*#");
  for (int round = 0; round < 3000; ++round) {
    const std::string pattern = random_glob("a/*");
    const std::string form = random_glob(form_alphabet);
    bool expected = false;
    for (const std::string& t : texts) {
      if (GlobMatch(pattern, t) && FormMatches(form, t)) {
        expected = true;
        break;
      }
    }
    std::string shown = form;
    for (char& c : shown) {
      if (c == kSegmentStar) c = '#';
    }
    for (OverlapSearch search :
         {OverlapSearch::kAuto, OverlapSearch::kRows, OverlapSearch::kCells}) {
      ASSERT_EQ(GlobsOverlap(pattern, form, search), expected)
          << "'" << pattern << "' vs '" << shown << "', search "
          << static_cast<int>(search);
    }
  }
}

}  // namespace
}  // namespace mxlimit::internal
