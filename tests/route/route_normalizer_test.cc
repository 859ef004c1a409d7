// RouteNormalizer against the spec's route list (tests/data), the version
// aliases, literal-over-placeholder, unknown paths and the docs.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "mxlimit/route.h"
#include "tests/testing/route_pack_testing.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::IdentifierShapes;
using ::mxlimit::testing::Instantiate;
using ::mxlimit::testing::ReadTsv;
using ::mxlimit::testing::SharedNormalizer;

// The key a limiter with the default packs (spec, msc, synapse) gives
// `target`; the method never matters. NOTE: the examples below use the tests'
// own merge of the default packs (tests/testing/route_pack_testing.h) until
// the normalizer's options can name packs.
std::string_view KeyOf(std::string_view target,
                       std::string_view /*method*/ = "GET") {
  static const auto* trie = new internal::RouteTrie(
      testing::BuildPackTrie(testing::PackTable::Default()));
  return trie->keys()[trie->Match(target)];
}

// The key of `target` with only the identity service pack.
std::string_view IdentityKeyOf(std::string_view target) {
  static const auto* table = new testing::PackTable({"identity"});
  static const auto* trie =
      new internal::RouteTrie(testing::BuildPackTrie(*table));
  return trie->keys()[trie->Match(target)];
}

struct SpecRoute {
  std::string method;
  std::string path;
};

// The spec's routes a homeserver serves: the identity service and push
// gateway rows are packs of their own, not default (route_packs_test.cc).
std::vector<SpecRoute> SpecRoutes() {
  std::vector<SpecRoute> routes;
  for (const auto& row : ReadTsv("matrix-spec-routes.tsv")) {
    if (row.at("api") == "identity" || row.at("api") == "push") continue;
    routes.push_back({row.at("method"), row.at("path")});
  }
  return routes;
}

// The documented version aliases of a stable template (docs/routes.md).
std::vector<std::string> AliasSpellings(const std::string& path) {
  struct Rule {
    std::string stable;
    std::vector<std::string> aliases;
  };
  static const auto* rules = new std::vector<Rule>{
      {"/_matrix/client/v3/",
       {"/_matrix/client/r0/", "/_matrix/client/api/v1/",
        "/_matrix/client/unstable/"}},
      {"/_matrix/client/v1/", {"/_matrix/client/unstable/"}},
      {"/_matrix/client/v1/media/",
       {"/_matrix/client/unstable/org.matrix.msc3916/media/"}},
      {"/_matrix/media/v3/", {"/_matrix/media/r0/", "/_matrix/media/v1/"}},
  };
  std::vector<std::string> spellings;
  for (const Rule& rule : *rules) {
    if (path.rfind(rule.stable, 0) != 0) continue;
    for (const std::string& alias : rule.aliases) {
      spellings.push_back(alias + path.substr(rule.stable.size()));
    }
  }
  return spellings;
}

TEST(RouteNormalizerTest, SpecListIsLoaded) {
  // 235 rows at the snapshot in tests/data, 211 of them homeserver APIs;
  // guards against a missing file.
  EXPECT_GE(ReadTsv("matrix-spec-routes.tsv").size(), 235u);
  EXPECT_GE(SpecRoutes().size(), 211u);
}

TEST(RouteNormalizerTest, EverySpecRouteIsAKey) {
  std::set<std::string_view> keys(SharedNormalizer().keys().begin(),
                                  SharedNormalizer().keys().end());
  for (const SpecRoute& route : SpecRoutes()) {
    EXPECT_TRUE(keys.contains(route.path)) << route.path;
  }
}

TEST(RouteNormalizerTest,
     EverySpecRouteMapsToItsTemplateForEveryIdentifierShape) {
  for (const SpecRoute& route : SpecRoutes()) {
    for (const std::string& value : IdentifierShapes()) {
      std::string target = Instantiate(route.path, value);
      Route r = SharedNormalizer().Normalize(route.method, target);
      EXPECT_EQ(r.key, route.path) << route.method << " " << target;
      EXPECT_TRUE(r.known) << target;
      EXPECT_EQ(SharedNormalizer().key(r.id), r.key);
    }
  }
}

TEST(RouteNormalizerTest, QueryAndFragmentAreIgnored) {
  for (const SpecRoute& route : SpecRoutes()) {
    std::string path = Instantiate(route.path, "%21r%3Ahs");
    for (std::string suffix :
         {"?", "?access_token=x&since=s%2F1", "#frag", "?a=/b/c#d/e", "#?x"}) {
      EXPECT_EQ(KeyOf(path + suffix, route.method), route.path)
          << path << suffix;
    }
  }
}

// Match is Normalize's id plus the query-free path length, from one pass.
TEST(RouteNormalizerTest, MatchAgreesWithNormalizeAndFindsThePathEnd) {
  for (const SpecRoute& route : SpecRoutes()) {
    const std::string path = Instantiate(route.path, "%21r%3Ahs");
    for (std::string suffix : {"", "?", "?a=/b#c", "#frag?x"}) {
      const std::string target = path + suffix;
      size_t path_size = 0;
      const RouteId id = SharedNormalizer().Match(target, &path_size);
      EXPECT_EQ(id, SharedNormalizer().Normalize(route.method, target).id)
          << target;
      EXPECT_EQ(path_size, path.size()) << target;
    }
  }
  size_t path_size = 99;
  EXPECT_EQ(SharedNormalizer().Match("/nope/x?y", &path_size),
            kFallbackRouteId);
  EXPECT_EQ(path_size, 7u);
  EXPECT_EQ(SharedNormalizer().Match("", &path_size), kFallbackRouteId);
  EXPECT_EQ(path_size, 0u);
}

TEST(RouteNormalizerTest, DifferentIdentifiersGiveOneKey) {
  Route a = SharedNormalizer().Normalize(
      "PUT", "/_matrix/client/v3/rooms/%21a%3Ahs/send/m.room.message/txn1");
  Route b = SharedNormalizer().Normalize(
      "PUT", "/_matrix/client/v3/rooms/!zzz:other/send/m.reaction/987654321");
  EXPECT_TRUE(a.known);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.key,
            "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}");
  EXPECT_EQ(a.key, b.key);
}

TEST(RouteNormalizerTest, DifferentEndpointsGiveDifferentKeys) {
  std::map<RouteId, std::string> seen;
  for (const SpecRoute& route : SpecRoutes()) {
    Route r = SharedNormalizer().Normalize(route.method,
                                           Instantiate(route.path, "x1"));
    auto [it, inserted] = seen.emplace(r.id, route.path);
    if (!inserted) {
      // Rows differing only by method are one path, hence one key.
      EXPECT_EQ(it->second, route.path) << "two endpoints share id " << r.id;
    }
  }
  std::set<std::string_view> distinct(SharedNormalizer().keys().begin(),
                                      SharedNormalizer().keys().end());
  EXPECT_EQ(distinct.size(), SharedNormalizer().size());
}

TEST(RouteNormalizerTest, VersionAliasesGiveTheStableKey) {
  size_t checked = 0;
  for (const SpecRoute& route : SpecRoutes()) {
    for (const std::string& alias : AliasSpellings(route.path)) {
      for (std::string_view value : {"abc", "%21r%3Ahs"}) {
        EXPECT_EQ(KeyOf(Instantiate(alias, value), route.method), route.path)
            << alias;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 400u);
}

TEST(RouteNormalizerTest, VersionAliasExamples) {
  const std::string_view send =
      "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}";
  for (std::string_view version : {"r0", "v3", "api/v1", "unstable"}) {
    std::string target = "/_matrix/client/" + std::string(version) +
                         "/rooms/%21a%3Ab/send/m.room.message/t1";
    EXPECT_EQ(KeyOf(target, "PUT"), send) << target;
  }
  EXPECT_EQ(KeyOf("/_matrix/client/unstable/rooms/!r/relations/$e"),
            "/_matrix/client/v1/rooms/{roomId}/relations/{eventId}");
  EXPECT_EQ(KeyOf("/_matrix/media/r0/download/hs/abc"),
            "/_matrix/media/v3/download/{serverName}/{mediaId}");
  EXPECT_EQ(KeyOf("/_matrix/media/v1/thumbnail/hs/abc?width=32"),
            "/_matrix/media/v3/thumbnail/{serverName}/{mediaId}");
  // No alias crosses API families or goes backwards.
  EXPECT_EQ(KeyOf("/_matrix/client/v1/sync"), kFallbackRouteKey);
  EXPECT_EQ(KeyOf("/_matrix/client/r0/mutual_rooms"), kFallbackRouteKey);
  EXPECT_EQ(KeyOf("/_matrix/client/v4/sync"), kFallbackRouteKey);
  EXPECT_EQ(KeyOf("/_matrix/client/R0/sync"), kFallbackRouteKey);
  EXPECT_EQ(KeyOf("/_matrix/media/v3/create"), kFallbackRouteKey);
  EXPECT_EQ(KeyOf("/_matrix/federation/v2/send/t1"), kFallbackRouteKey);
}

TEST(RouteNormalizerTest, UnstableMscSpellingsGiveTheStableKey) {
  struct Case {
    std::string_view target;
    std::string_view key;
  };
  for (const Case& c : std::vector<Case>{
           {"/_matrix/client/unstable/org.matrix.msc2432/rooms/!r/aliases",
            "/_matrix/client/v3/rooms/{roomId}/aliases"},
           {"/_matrix/client/unstable/im.nheko.summary/summary/%23a%3Ab",
            "/_matrix/client/v1/room_summary/{roomIdOrAlias}"},
           {"/_matrix/client/unstable/im.nheko.summary/rooms/!r/summary",
            "/_matrix/client/v1/room_summary/{roomIdOrAlias}"},
           {"/_matrix/client/unstable/org.matrix.msc2965/auth_metadata",
            "/_matrix/client/v1/auth_metadata"},
           {"/_matrix/client/unstable/org.matrix.msc3882/login/token",
            "/_matrix/client/v1/login/get_token"},
           {"/_matrix/client/unstable/org.matrix.msc3983/keys/claim",
            "/_matrix/client/v3/keys/claim"},
           {"/_matrix/client/unstable/uk.tcpip.msc4133/profile/@a:b/m.tz",
            "/_matrix/client/v3/profile/{userId}/{keyName}"},
           {"/_matrix/client/unstable/org.matrix.msc3391/user/@a:b/"
            "account_data/m.x",
            "/_matrix/client/v3/user/{userId}/account_data/{type}"},
           {"/_matrix/client/unstable/org.matrix.msc3916/media/download/hs/m",
            "/_matrix/client/v1/media/download/{serverName}/{mediaId}"},
           {"/_matrix/federation/unstable/user/keys/claim",
            "/_matrix/federation/v1/user/keys/claim"},
           {"/_matrix/client/unstable/xyz.amorgan.knock/knock/%23a%3Ab",
            "/_matrix/client/v3/knock/{roomIdOrAlias}"},
           {"/_matrix/client/unstable/org.matrix.msc2946/rooms/!r/hierarchy",
            "/_matrix/client/v1/rooms/{roomId}/hierarchy"},
           {"/_matrix/client/unstable/org.matrix.msc3030/rooms/!r/"
            "timestamp_to_event?ts=1&dir=f",
            "/_matrix/client/v1/rooms/{roomId}/timestamp_to_event"},
           {"/_matrix/client/unstable/org.matrix.msc2918/refresh",
            "/_matrix/client/v3/refresh"},
           {"/_matrix/client/unstable/org.matrix.msc3856/rooms/!r/threads",
            "/_matrix/client/v1/rooms/{roomId}/threads"},
           {"/_matrix/client/unstable/org.matrix.msc3882/login/get_token",
            "/_matrix/client/v1/login/get_token"},
           {"/_matrix/client/unstable/uk.half-shot.msc2666/user/"
            "mutual_rooms?user_id=%40a%3Ab",
            "/_matrix/client/v1/mutual_rooms"},
           {"/_matrix/client/unstable/uk.half-shot.msc2666/user/shared_rooms/"
            "@a:b",
            "/_matrix/client/v1/mutual_rooms"},
           {"/_matrix/client/unstable/uk.tcpip.msc4133/profile/@a:b",
            "/_matrix/client/v3/profile/{userId}"},
           {"/_matrix/media/unstable/fi.mau.msc2246/create",
            "/_matrix/media/v1/create"},
           {"/_matrix/media/unstable/fi.mau.msc2246/upload/hs/m",
            "/_matrix/media/v3/upload/{serverName}/{mediaId}"},
           {"/_matrix/federation/unstable/org.matrix.msc3916/media/download/m",
            "/_matrix/federation/v1/media/download/{mediaId}"},
       }) {
    EXPECT_EQ(KeyOf(c.target), c.key) << c.target;
  }
  // Unstable endpoints without a stable form keep their own key.
  EXPECT_EQ(KeyOf("/_matrix/client/unstable/org.matrix.msc3575/sync?pos=1"),
            "/_matrix/client/unstable/org.matrix.msc3575/sync");
  EXPECT_EQ(
      KeyOf("/_matrix/client/unstable/org.matrix.simplified_msc3575/sync"),
      "/_matrix/client/unstable/org.matrix.simplified_msc3575/sync");
  EXPECT_EQ(KeyOf("/_matrix/client/unstable/org.matrix.msc4140/delayed_events/"
                  "d1/cancel"),
            "/_matrix/client/unstable/org.matrix.msc4140/delayed_events/"
            "{delayId}/cancel");
}

TEST(RouteNormalizerTest, ExtraRequestFormsShareTheEndpointKey) {
  struct Case {
    std::string_view method;
    std::string_view target;
    std::string_view key;
  };
  for (const Case& c : std::vector<Case>{
           {"POST", "/_matrix/client/v3/rooms/!r/send/m.room.message",
            "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}"},
           {"GET", "/_matrix/client/r0/rooms/!r/state/m.room.name",
            "/_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}"},
           {"PUT", "/_matrix/client/v3/rooms/!r/state/m.room.name/",
            "/_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}"},
           {"POST", "/_matrix/client/v3/rooms/!r/redact/$e",
            "/_matrix/client/v3/rooms/{roomId}/redact/{eventId}/{txnId}"},
           {"PUT", "/_matrix/client/v3/createRoom/t1",
            "/_matrix/client/v3/createRoom"},
           {"PUT", "/_matrix/client/v3/join/%23a%3Ab/t1",
            "/_matrix/client/v3/join/{roomIdOrAlias}"},
           {"PUT", "/_matrix/client/v3/rooms/!r/kick/t1",
            "/_matrix/client/v3/rooms/{roomId}/kick"},
           {"PUT", "/_matrix/client/v3/rooms/!r/forget/t1",
            "/_matrix/client/v3/rooms/{roomId}/forget"},
           {"PUT", "/_matrix/federation/v1/send/1234/",
            "/_matrix/federation/v1/send/{txnId}"},
           {"GET", "/_matrix/federation/v1/state_ids/!r/",
            "/_matrix/federation/v1/state_ids/{roomId}"},
           {"GET", "/_matrix/key/v2/server/ed25519:a",
            "/_matrix/key/v2/server"},
           {"GET", "/_matrix/key/v2/query/hs/ed25519:a",
            "/_matrix/key/v2/query/{serverName}"},
           {"GET", "/_matrix/client/v3/login/cas/redirect?redirectUrl=x",
            "/_matrix/client/v3/login/sso/redirect"},
           {"GET", "/_matrix/saml2/metadata.xml",
            "/_synapse/client/saml2/metadata.xml"},
       }) {
    EXPECT_EQ(KeyOf(c.target, c.method), c.key) << c.target;
  }
  // Only the spec'd trailing slashes: not on sync, not on federation invite.
  EXPECT_EQ(KeyOf("/_matrix/client/v3/sync/"), kFallbackRouteKey);
  EXPECT_EQ(KeyOf("/_matrix/federation/v2/invite/!r/$e/"), kFallbackRouteKey);
}

TEST(RouteNormalizerTest, LiteralSegmentsBeatPlaceholders) {
  EXPECT_EQ(KeyOf("/_matrix/federation/v1/query/directory?room_alias=%23a"),
            "/_matrix/federation/v1/query/directory");
  EXPECT_EQ(KeyOf("/_matrix/federation/v1/query/profile"),
            "/_matrix/federation/v1/query/profile");
  EXPECT_EQ(KeyOf("/_matrix/federation/v1/query/other"),
            "/_matrix/federation/v1/query/{queryType}");
  EXPECT_EQ(IdentityKeyOf("/_matrix/identity/v2/pubkey/isvalid"),
            "/_matrix/identity/v2/pubkey/isvalid");
  EXPECT_EQ(IdentityKeyOf("/_matrix/identity/v2/pubkey/ed25519:0"),
            "/_matrix/identity/v2/pubkey/{keyId}");
  EXPECT_EQ(IdentityKeyOf("/_matrix/identity/v2/pubkey/ephemeral/isvalid"),
            "/_matrix/identity/v2/pubkey/ephemeral/isvalid");
  // The literal branch `ephemeral` has no route of its own; the placeholder
  // still gets it.
  EXPECT_EQ(IdentityKeyOf("/_matrix/identity/v2/pubkey/ephemeral"),
            "/_matrix/identity/v2/pubkey/{keyId}");
  // `/pushrules/global/` is literal; a kind named like a literal is still a
  // kind.
  EXPECT_EQ(KeyOf("/_matrix/client/v3/pushrules/global/"),
            "/_matrix/client/v3/pushrules/global/");
  EXPECT_EQ(KeyOf("/_matrix/client/v3/pushrules/global/override/actions"),
            "/_matrix/client/v3/pushrules/global/{kind}/{ruleId}");
  EXPECT_EQ(KeyOf("/_matrix/client/v3/pushrules/global/room/!r/actions"),
            "/_matrix/client/v3/pushrules/global/{kind}/{ruleId}/actions");
}

TEST(RouteNormalizerTest, RandomUnknownPathsAllGetTheFallback) {
  // Roots after which the table has only literal segments, followed by a
  // first segment no Matrix literal starts with ("zq"), then anything.
  const std::vector<std::string> roots = {
      "",
      "/_matrix",
      "/_matrix/client",
      "/_matrix/client/v3",
      "/_matrix/client/r0",
      "/_matrix/client/unstable",
      "/_matrix/federation/v1",
      "/_matrix/media/v3",
      "/_matrix/key/v2",
      "/.well-known/matrix",
      "/_synapse/client",
  };
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
      "%._~-!$&'()*+,;=:@/";
  std::mt19937_64 rng(20261130);
  auto random_segment = [&](size_t max_len) {
    std::string s;
    size_t len = 1 + rng() % max_len;
    for (size_t i = 0; i < len; ++i)
      s.push_back(alphabet[rng() % alphabet.size()]);
    return s;
  };
  for (int i = 0; i < 10'000; ++i) {
    std::string target =
        roots[rng() % roots.size()] + "/zq" + random_segment(12);
    size_t extra = rng() % 6;
    for (size_t j = 0; j < extra; ++j) target += "/" + random_segment(20);
    if (rng() % 4 == 0) target += "?" + random_segment(10);
    Route r = SharedNormalizer().Normalize("GET", target);
    ASSERT_FALSE(r.known) << target << " -> " << r.key;
    ASSERT_EQ(r.id, kFallbackRouteId);
    ASSERT_EQ(r.key, kFallbackRouteKey);
  }
}

TEST(RouteNormalizerTest, MethodDoesNotChangeTheKey) {
  const std::string target = "/_matrix/client/v3/sync?since=s1";
  std::string_view key = KeyOf(target, "GET");
  EXPECT_EQ(key, "/_matrix/client/v3/sync");
  for (std::string_view method :
       {"HEAD", "PUT", "DELETE", "OPTIONS", "", "BREW"}) {
    EXPECT_EQ(KeyOf(target, method), key) << method;
  }
}

TEST(RouteNormalizerTest, FallbackIsIdZero) {
  EXPECT_EQ(SharedNormalizer().key(kFallbackRouteId), kFallbackRouteKey);
  EXPECT_EQ(SharedNormalizer().keys()[0], kFallbackRouteKey);
  EXPECT_EQ(SharedNormalizer().keys().size(), SharedNormalizer().size());
  EXPECT_EQ(
      SharedNormalizer().key(static_cast<RouteId>(SharedNormalizer().size())),
      kFallbackRouteKey);
  Route unknown = SharedNormalizer().Normalize("GET", "/nope");
  EXPECT_EQ(unknown.id, kFallbackRouteId);
  EXPECT_FALSE(unknown.known);
  // A known static route does not share the fallback.
  Route versions =
      SharedNormalizer().Normalize("GET", "/_matrix/client/versions");
  EXPECT_TRUE(versions.known);
  EXPECT_NE(versions.id, kFallbackRouteId);
  EXPECT_TRUE(SharedNormalizer()
                  .Normalize("GET", "/_matrix/static/client/login/")
                  .known);
}

TEST(RouteNormalizerTest, IdsIndexKeys) {
  for (size_t id = 1; id < SharedNormalizer().size(); ++id) {
    std::string target =
        Instantiate(SharedNormalizer().key(static_cast<RouteId>(id)), "v");
    Route r = SharedNormalizer().Normalize("GET", target);
    EXPECT_EQ(r.id, id) << target;
    EXPECT_EQ(r.key, SharedNormalizer().keys()[id]);
  }
}

TEST(RouteNormalizerTest, IsNeitherCopyableNorMovable) {
  static_assert(!std::is_copy_constructible_v<RouteNormalizer>);
  static_assert(!std::is_move_constructible_v<RouteNormalizer>);
  // Two normalizers agree on every id: keys are stable for a build.
  RouteNormalizer other;
  ASSERT_EQ(other.size(), SharedNormalizer().size());
  for (size_t id = 0; id < other.size(); ++id) {
    EXPECT_EQ(other.keys()[id], SharedNormalizer().keys()[id]);
  }
}

TEST(RouteNormalizerTest, SharedAcrossThreadsGivesTheSameAnswers) {
  std::vector<std::string> targets;
  for (const SpecRoute& route : SpecRoutes()) {
    for (const std::string& value : IdentifierShapes()) {
      targets.push_back(Instantiate(route.path, value));
    }
  }
  std::vector<RouteId> expected;
  for (const std::string& t : targets) {
    expected.push_back(SharedNormalizer().Normalize("GET", t).id);
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < targets.size(); ++i) {
          if (SharedNormalizer().Normalize("GET", targets[i]).id !=
              expected[i]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ::testing::Each(0));
}

// docs/routes.md must list every key of every pack, with its pack, in
// RouteId order with every pack active (the default packs come first in
// canonical order, so their keys' ids are also their default RouteIds). A
// key several packs list belongs to the first of them. So the docs cannot
// fall behind the packs, and cannot list keys that no longer exist.
TEST(RouteNormalizerTest, DocsListEveryKeyWithItsPack) {
  std::ifstream in(std::string(MXLIMIT_SOURCE_DIR) + "/docs/routes.md");
  ASSERT_TRUE(in) << "docs/routes.md is missing";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string docs = buffer.str();
  const std::string heading = "\n## Route keys\n";
  size_t section = docs.find(heading);
  ASSERT_NE(section, std::string::npos) << "no '## Route keys' section";
  size_t section_end = docs.find("\n## ", section + heading.size());
  std::string listed_text = docs.substr(section, section_end - section);
  std::vector<std::string> listed;
  std::stringstream lines(listed_text);
  std::string line;
  while (std::getline(lines, line)) {
    // Rows look like "| 12 | `/_matrix/client/v3/sync` | spec |".
    size_t open = line.find("| `");
    if (line.rfind("| ", 0) != 0 || open == std::string::npos) continue;
    size_t close = line.find('`', open + 3);
    std::string id = line.substr(2, line.find(' ', 2) - 2);
    size_t pack_start = line.find("| ", close) + 2;
    std::string pack =
        line.substr(pack_start, line.find(' ', pack_start) - pack_start);
    listed.push_back(id + " " + line.substr(open + 3, close - open - 3) + " " +
                     pack);
  }
  const testing::PackTable& all = testing::PackTable::All();
  std::vector<std::string> expected;
  for (size_t i = 0; i < all.spec().templates.size(); ++i) {
    std::string_view key = all.spec().templates[i];
    expected.push_back(std::to_string(i + 1) + " " + std::string(key) + " " +
                       std::string(all.PackOf(key)));
  }
  EXPECT_EQ(listed, expected)
      << "regenerate the table: every pack's keys in canonical pack order";
}

}  // namespace
}  // namespace mxlimit
