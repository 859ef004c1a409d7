// RouteNormalizer on hostile targets: encodings, empty and dot segments,
// controls, huge paths; and a differential test against a naive matcher, over
// the built-in table and over every route pack at once.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "mxlimit/route.h"
#include "src/route/route_table_builder.h"
#include "src/route/route_trie.h"
#include "tests/testing/route_pack_testing.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::IdentifierShapes;
using ::mxlimit::testing::Instantiate;
using ::mxlimit::testing::ReadTsv;
using ::mxlimit::testing::ReferenceMatcher;
using ::mxlimit::testing::SharedNormalizer;

constexpr std::string_view kSend =
    "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}";
constexpr std::string_view kState =
    "/_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}";

std::string_view NormalizedKeyOf(std::string_view target) {
  return SharedNormalizer().Normalize("GET", target).key;
}

TEST(RouteHostileTest, EncodedDelimitersStayInsideTheirSegment) {
  for (std::string_view room :
       {"%21a%2Fb%3Ac", "%21a%3Fb", "%21a%23b", "%21a%25b", "%21a%2F..%2F..",
        "%2F", "%3F", "%23", "%2f%2f%2f"}) {
    std::string target = "/_matrix/client/v3/rooms/" + std::string(room) +
                         "/send/m.room.message/t%2F1";
    EXPECT_EQ(NormalizedKeyOf(target), kSend) << target;
  }
}

TEST(RouteHostileTest, RawSlashInAnIdentifierShiftsSegments) {
  // A raw '/' is a segment boundary: the homeserver would not serve this as
  // send, and neither is it a key per identifier.
  EXPECT_EQ(
      NormalizedKeyOf("/_matrix/client/v3/rooms/!a/b:c/send/m.room.message/t1"),
      kFallbackRouteKey);
  // ...unless the shifted path is another endpoint, which it then is.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/profile/@a/displayname"),
            "/_matrix/client/v3/profile/{userId}/{keyName}");
}

TEST(RouteHostileTest, EmptyStateKeyIsAllowedOtherEmptySegmentsAreNot) {
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/!r/state/m.room.name/"),
            kState);
  EXPECT_EQ(
      NormalizedKeyOf("/_matrix/client/v3/rooms/!r/state/m.room.name/?x=1"),
      kState);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/!r/state/m.room.name"),
            kState);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/!r/state//"),
            kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms//state/m.room.name/"),
            kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms//send/m.room.message/t1"),
            kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/!r/send/m.room.message/"),
            kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/profile/"), kFallbackRouteKey);
}

TEST(RouteHostileTest, RepeatedSlashesAreFallback) {
  for (std::string_view target :
       {"//_matrix/client/v3/sync", "/_matrix//client/v3/sync",
        "/_matrix/client//v3/sync", "/_matrix/client/v3//sync",
        "/_matrix/client/v3/sync//", "/_matrix/client/v3/rooms/!r//messages",
        "//", "///"}) {
    EXPECT_EQ(NormalizedKeyOf(target), kFallbackRouteKey) << target;
  }
}

TEST(RouteHostileTest, DotSegmentsAreFallback) {
  for (std::string_view target :
       {"/_matrix/client/v3/./sync", "/_matrix/client/v3/../v3/sync",
        "/_matrix/client/v3/rooms/../sync",
        "/_matrix/client/v3/rooms/./messages",
        "/_matrix/client/v3/rooms/!r/messages/.", "/./_matrix/client/v3/sync",
        "/_matrix/client/v3/rooms/../send/m.room.message/t1",
        "/_matrix/client/v3/rooms/!r/state/m.room.name/.."}) {
    EXPECT_EQ(NormalizedKeyOf(target), kFallbackRouteKey) << target;
  }
  // Dots inside a segment are ordinary bytes.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/.../send/.m/..t"), kSend);
}

TEST(RouteHostileTest, TrailingSlashOnlyWhereTheEndpointHasOne) {
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sync/"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/pushrules"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/pushrules/"),
            "/_matrix/client/v3/pushrules/");
  EXPECT_EQ(NormalizedKeyOf("/_matrix/static/client/login"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/static/client/login/?x"),
            "/_matrix/static/client/login/");
}

TEST(RouteHostileTest, SuffixesAfterAKnownRouteAreFallback) {
  // Synapse's unanchored regexes serve these; mxlimit keys them all on the
  // one fallback, so no suffix mints a key.
  for (std::string_view target :
       {"/_matrix/client/v3/presence/@a:b/status/x",
        "/_matrix/client/v3/presence/@a:b/status/y/z",
        "/_matrix/client/v3/delete_devicesX", "/_matrix/client/v3/sync/extra",
        "/_matrix/client/v3/user/@a:b/filter/1/2",
        "/_matrix/media/v1/create/more"}) {
    EXPECT_EQ(NormalizedKeyOf(target), kFallbackRouteKey) << target;
  }
}

TEST(RouteHostileTest, ControlBytesSpaceAndDelAreFallback) {
  for (char c : {'\0', '\x01', '\t', '\n', '\r', '\x1f', ' ', '\x7f'}) {
    std::string in_literal = "/_matrix/client/v3/sy";
    in_literal.push_back(c);
    in_literal += "nc";
    EXPECT_EQ(NormalizedKeyOf(in_literal), kFallbackRouteKey) << int(c);
    std::string in_identifier = "/_matrix/client/v3/rooms/!a";
    in_identifier.push_back(c);
    in_identifier += "b/messages";
    EXPECT_EQ(NormalizedKeyOf(in_identifier), kFallbackRouteKey) << int(c);
    // In the query, they do not matter: the path is what is matched.
    std::string in_query = "/_matrix/client/v3/sync?q=";
    in_query.push_back(c);
    EXPECT_EQ(NormalizedKeyOf(in_query), "/_matrix/client/v3/sync") << int(c);
  }
}

TEST(RouteHostileTest, NonOriginFormTargetsAreFallback) {
  for (std::string_view target :
       {"", "*", "?", "#", "_matrix/client/v3/sync",
        "https://hs.example/_matrix/client/v3/sync", "hs.example:443", "/",
        "/?x", "\\_matrix\\client\\v3\\sync"}) {
    EXPECT_EQ(NormalizedKeyOf(target), kFallbackRouteKey) << target;
  }
}

TEST(RouteHostileTest, EncodedLiteralsAreTheirRoute) {
  // A literal spelled with escapes is that literal, as policy matching reads
  // it (the canonical form): otherwise `%73end` would find the send policy
  // through the raw path but charge the fallback route's bucket.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/%73ync"),
            "/_matrix/client/v3/sync");
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/logi%6e"),
            "/_matrix/client/v3/login");
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/%6C%6F%67%69%6E"),
            "/_matrix/client/v3/login");
  EXPECT_EQ(NormalizedKeyOf(
                "/_matrix/client/v3/rooms/%21a%3Ab.c/%73end/m.room.message/"
                "t1?x=%73"),
            kSend);
  EXPECT_EQ(NormalizedKeyOf("/%5Fmatrix/client/r%30/sync"),
            "/_matrix/client/v3/sync");
  EXPECT_EQ(NormalizedKeyOf("/_matrix/%63lient/unstable/rooms/!r/%73tate/m.x/"),
            kState);
  // Literal beats placeholder on the decoded segment, as on a plain one.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/federation/v1/query/d%69rectory"),
            "/_matrix/federation/v1/query/directory");
  EXPECT_EQ(NormalizedKeyOf("/_matrix/federation/v1/query/d%69rectorx"),
            "/_matrix/federation/v1/query/{queryType}");
}

TEST(RouteHostileTest, EscapesThatStayEscapesMatchNoLiteral) {
  // Case still matters, and an escape the canonical form keeps ('/', '?',
  // '#', '%') never decodes: nothing is decoded twice, no segment boundary
  // moves.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/SYNC"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/%53YNC"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3%2Fsync"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/%2573ync"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sync%3F"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sy%6"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sy%zznc"), kFallbackRouteKey);
  // Bytes no target may hold, encoded: no literal holds them either.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sy%00nc"), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sy%20nc"), kFallbackRouteKey);
  // An encoded dot segment is no literal, and a placeholder still takes the
  // segment as received.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/%2E%2E/sync"),
            kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/%2E%2E/messages"),
            "/_matrix/client/v3/rooms/{roomId}/messages");
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/%2521r/messages"),
            "/_matrix/client/v3/rooms/{roomId}/messages");
  // Long escaped segments where literals are looked up: bounded, no match.
  std::string long_escaped;
  while (long_escaped.size() < 64 * 1024) long_escaped += "%73";
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/" + long_escaped),
            kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/" + long_escaped + "/x"),
            kFallbackRouteKey);
  EXPECT_EQ(
      NormalizedKeyOf("/_matrix/client/v3/%73ync" + std::string(5000, 'c')),
      kFallbackRouteKey);
}

TEST(RouteHostileTest, EverySpellingOfEveryFormIsItsRoute) {
  // Each literal byte of every form of the default table, percent-encoded
  // in turn (hex in either case): still the form's route.
  static constexpr char kHex[] = "0123456789abcdef0123456789ABCDEF";
  const RouteNormalizer& normalizer = SharedNormalizer();
  size_t spellings = 0;
  for (const RouteForm& form : normalizer.forms()) {
    const std::string target = Instantiate(form.pattern, "id1");
    if (normalizer.Normalize("GET", target).id != form.id) {
      ADD_FAILURE() << target;
      continue;
    }
    // Positions of literal bytes: outside `{...}`, not '/'.
    bool in_placeholder = false;
    for (size_t i = 0; i < form.pattern.size(); ++i) {
      const char c = form.pattern[i];
      if (c == '{') in_placeholder = true;
      if (in_placeholder || c == '/') {
        if (c == '}') in_placeholder = false;
        continue;
      }
      // The same byte in the instantiated target: literal bytes before it
      // keep their offsets until the first placeholder, so encode by
      // rebuilding the form with this byte escaped.
      const auto byte = static_cast<unsigned char>(c);
      const size_t upper = spellings % 2 == 0 ? 0 : 16;
      std::string spelled =
          form.pattern.substr(0, i) + '%' + kHex[upper + (byte >> 4)] +
          kHex[upper + (byte & 15)] + form.pattern.substr(i + 1);
      const std::string encoded = Instantiate(spelled, "id1");
      EXPECT_EQ(normalizer.Normalize("GET", encoded).id, form.id) << encoded;
      ++spellings;
    }
  }
  EXPECT_GT(spellings, 10000u);
}

TEST(RouteHostileTest, HugeTargetsAreBoundedAndSafe) {
  // 64 KiB in one identifier: still the endpoint.
  std::string huge_id(64 * 1024, 'a');
  EXPECT_EQ(
      NormalizedKeyOf("/_matrix/client/v3/rooms/" + huge_id + "/send/m/t"),
      kSend);
  // 64 KiB of segments: more than any template has.
  std::string many;
  while (many.size() < 64 * 1024) many += "/_matrix";
  EXPECT_EQ(NormalizedKeyOf(many), kFallbackRouteKey);
  // 64 KiB of slashes, of percent signs, of UTF-8, of NULs.
  EXPECT_EQ(NormalizedKeyOf(std::string(64 * 1024, '/')), kFallbackRouteKey);
  EXPECT_EQ(NormalizedKeyOf("/" + std::string(64 * 1024, '%')),
            kFallbackRouteKey);
  std::string utf8;
  while (utf8.size() < 64 * 1024) utf8 += "\xE2\x82\xAC";
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/rooms/" + utf8 + "/messages"),
            "/_matrix/client/v3/rooms/{roomId}/messages");
  EXPECT_EQ(NormalizedKeyOf(std::string(64 * 1024, '\0')), kFallbackRouteKey);
  // A long query after a short path.
  EXPECT_EQ(NormalizedKeyOf("/_matrix/client/v3/sync?filter=" +
                            std::string(65536, 'f')),
            "/_matrix/client/v3/sync");
}

TEST(RouteHostileTest, KeysNeverContainIdentifierBytes) {
  // Whatever the identifier, the key is one of the table's keys: it is the
  // table's own string, not a copy of request bytes.
  const std::string marker = "ZZmarkerZZ";
  for (const auto& row : ReadTsv("matrix-spec-routes.tsv")) {
    for (const std::string& value : IdentifierShapes()) {
      std::string target = Instantiate(row.at("path"), marker + value);
      Route r = SharedNormalizer().Normalize(row.at("method"), target);
      EXPECT_EQ(r.key.find(marker), std::string_view::npos) << target;
      EXPECT_EQ(r.key.data(), SharedNormalizer().key(r.id).data());
    }
  }
}

// Targets built from every expanded pattern of `table` and then broken in
// every way the issue lists; `trie` (built from `table`) and the naive
// reference must agree on each.
void ExpectAgreesWithReferenceOnMutatedTargets(
    const internal::RouteTableSpec& table, const internal::RouteTrie& trie) {
  ReferenceMatcher reference(table);
  ASSERT_GT(reference.pattern_count(), 500u);
  absl::StatusOr<std::vector<internal::ExpandedPattern>> expanded =
      internal::ExpandRouteTable(table);
  ASSERT_TRUE(expanded.ok()) << expanded.status();

  std::mt19937_64 rng(42);
  const std::vector<std::string> inserts = {
      "/",   "//",       "/./",      "/../",
      "%2F", "?",        "#",        std::string(1, '\0'),
      " ",   "\x7f",     "\xC3\xA9", "+",
      "%",   "x",        "/x",       "/",
      "{}",  "/{roomId}"};
  size_t compared = 0;
  size_t known = 0;
  for (const internal::ExpandedPattern& pattern : *expanded) {
    for (const std::string& value :
         {std::string("v"), std::string("%21r%3Ahs"), std::string("")}) {
      const std::string base = Instantiate(pattern.pattern, value);
      std::vector<std::string> targets = {base, base + "/", base + "/x",
                                          base + "?q",
                                          base.substr(0, base.size() / 2)};
      for (int m = 0; m < 8; ++m) {
        std::string t = base;
        size_t at = rng() % (t.size() + 1);
        switch (rng() % 3) {
          case 0:
            t.insert(at, inserts[rng() % inserts.size()]);
            break;
          case 1:
            if (at < t.size()) t.erase(at, 1 + rng() % 4);
            break;
          default:
            if (at < t.size()) t[at] = static_cast<char>(rng() % 256);
            break;
        }
        targets.push_back(std::move(t));
      }
      for (const std::string& t : targets) {
        RouteId expected = reference.Match(t);
        RouteId got = trie.Match(t);
        ASSERT_EQ(got, expected)
            << "target: " << t << "\ntrie: " << trie.keys()[got]
            << "\nreference: " << trie.keys()[expected];
        ++compared;
        known += got != kFallbackRouteId;
      }
    }
  }
  EXPECT_GT(compared, 10'000u);
  // Both outcomes are well represented, so the comparison means something.
  EXPECT_GT(known, compared / 10);
  EXPECT_LT(known, compared * 4 / 5);
}

TEST(RouteHostileTest, AgreesWithReferenceMatcherOnMutatedTargets) {
  const internal::RouteTableSpec& table = internal::DefaultRouteTable().spec();
  absl::StatusOr<internal::RouteTrie> trie = internal::RouteTrie::Build(table);
  ASSERT_TRUE(trie.ok()) << trie.status();
  ExpectAgreesWithReferenceOnMutatedTargets(table, *trie);
}

// The same over every built-in pack at once: the admin APIs' placeholders
// (user, room, media IDs, tokens) under hostile bytes.
TEST(RouteHostileTest, AllPacksAgreeWithReferenceMatcherOnMutatedTargets) {
  const testing::PackTable& all = testing::PackTable::All();
  ExpectAgreesWithReferenceOnMutatedTargets(all.spec(),
                                            testing::BuildPackTrie(all));
}

}  // namespace
}  // namespace mxlimit
