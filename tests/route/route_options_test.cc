// RouteOptions: merging packs and extra templates into one table (the rules
// of src/route/route_packs.h), pack(RouteId), and every validation rule on
// extra templates.

#include "mxlimit/route_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/route.h"
#include "src/route/route_packs.h"
#include "src/route/route_table_builder.h"
#include "tests/testing/extra_routes.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kThings =
    "/_matrix/client/unstable/org.example.msc9999/rooms/{roomId}/things/"
    "{eventId}";
constexpr std::string_view kThingsV2 =
    "/_matrix/client/unstable/org.example.msc9999.v2/rooms/{roomId}/things/"
    "{eventId}";

RouteOptions WithExtra(std::vector<ExtraRoute> extra) {
  RouteOptions routes;
  routes.extra = std::move(extra);
  return routes;
}

// The one error ValidateRouteOptions reports for `routes`.
std::string OnlyError(const RouteOptions& routes) {
  std::vector<internal::RouteOptionsProblem> problems =
      internal::FindRouteOptionsProblems(routes);
  std::erase_if(problems, [](const auto& p) { return p.warning; });
  EXPECT_EQ(problems.size(), 1u);
  if (problems.empty()) return "";
  return problems[0].Path() + ": " + problems[0].message;
}

TEST(RouteOptionsTest, PackNamesAreCanonicalAndDefaultIsSpecMscSynapse) {
  EXPECT_THAT(RoutePackNames(),
              ::testing::ElementsAre("spec", "msc", "synapse", "dendrite",
                                     "conduwuit", "identity", "push"));
  EXPECT_THAT(DefaultRoutePackNames(),
              ::testing::ElementsAre("spec", "msc", "synapse"));
  EXPECT_THAT(ActiveRoutePacks(RouteOptions{}),
              ::testing::ElementsAre("spec", "msc", "synapse"));
  RouteOptions shuffled;
  shuffled.packs = {"dendrite", "spec"};
  EXPECT_THAT(ActiveRoutePacks(shuffled),
              ::testing::ElementsAre("spec", "dendrite"));
}

TEST(RouteOptionsTest, DefaultConstructorEqualsDefaultOptions) {
  const RouteNormalizer by_default;
  const RouteNormalizer from_options{RouteOptions{}};
  RouteOptions explicit_default;
  explicit_default.packs = {"synapse", "spec", "msc"};
  const RouteNormalizer from_names{explicit_default};
  EXPECT_TRUE(std::equal(by_default.keys().begin(), by_default.keys().end(),
                         from_options.keys().begin(),
                         from_options.keys().end()));
  EXPECT_TRUE(std::equal(by_default.keys().begin(), by_default.keys().end(),
                         from_names.keys().begin(), from_names.keys().end()));
  EXPECT_THAT(by_default.options().packs,
              ::testing::ElementsAre("spec", "msc", "synapse"));
  EXPECT_TRUE(SameRouteTable(explicit_default, RouteOptions{}));
}

TEST(RouteOptionsTest, IdsAreDenseKeysOnceAndPackIsTheFirstOwner) {
  RouteOptions all;
  all.packs.assign(RoutePackNames().begin(), RoutePackNames().end());
  all.extra = {{std::string(kThings), ""}};
  const RouteNormalizer normalizer(all);
  std::set<std::string_view> seen;
  for (RouteId id = 1; id < normalizer.size(); ++id) {
    EXPECT_TRUE(seen.insert(normalizer.key(id)).second)
        << "key twice: " << normalizer.key(id);
    EXPECT_FALSE(normalizer.pack(id).empty());
  }
  EXPECT_EQ(normalizer.pack(kFallbackRouteId), "");
  EXPECT_EQ(normalizer.pack(static_cast<RouteId>(normalizer.size())), "");
  // Extras come last, in order.
  const auto last = static_cast<RouteId>(normalizer.size() - 1);
  EXPECT_EQ(normalizer.key(last), kThings);
  EXPECT_EQ(normalizer.pack(last), "extra");
  // Pack ids follow canonical order: once a key of a later pack appears, no
  // key of an earlier pack follows.
  size_t rank = 0;
  for (RouteId id = 1; id < normalizer.size(); ++id) {
    const auto it = std::find(RoutePackNames().begin(), RoutePackNames().end(),
                              normalizer.pack(id));
    const size_t r = it == RoutePackNames().end()
                         ? RoutePackNames().size()
                         : static_cast<size_t>(it - RoutePackNames().begin());
    EXPECT_GE(r, rank) << normalizer.key(id);
    rank = r;
  }
}

TEST(RouteOptionsTest, FormsWhoseTargetIsInactiveAreDropped) {
  // Every form of the merged table names an active key.
  RouteOptions spec_only;
  spec_only.packs = {"spec"};
  absl::StatusOr<std::unique_ptr<const internal::MergedRouteTable>> merged =
      internal::MergeRouteTable(spec_only);
  ASSERT_TRUE(merged.ok()) << merged.status();
  std::set<std::string_view> keys((*merged)->spec().templates.begin(),
                                  (*merged)->spec().templates.end());
  for (const internal::RouteFormRow& form : (*merged)->spec().forms) {
    EXPECT_TRUE(keys.contains(form.route_template)) << form.form;
  }
}

TEST(RouteOptionsTest, ExtraTemplateAndItsAliasShareOneKey) {
  const RouteNormalizer normalizer(
      WithExtra({{std::string(kThings), ""},
                 {std::string(kThingsV2), std::string(kThings)}}));
  const Route a = normalizer.Normalize(
      "GET",
      "/_matrix/client/unstable/org.example.msc9999/rooms/!r:x/things/$e");
  const Route b = normalizer.Normalize(
      "GET",
      "/_matrix/client/unstable/org.example.msc9999.v2/rooms/!r:x/things/$e");
  EXPECT_TRUE(a.known);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(b.key, kThings);
  EXPECT_EQ(normalizer.pack(a.id), "extra");
  // The alias does not mint a key.
  EXPECT_EQ(normalizer.size(), RouteNormalizer().size() + 1);
}

TEST(RouteOptionsTest, AliasOfABuiltinTemplateGetsItsKey) {
  const RouteNormalizer normalizer(WithExtra(
      {{"/_matrix/client/v3/org.example.sync", "/_matrix/client/v3/sync"}}));
  EXPECT_EQ(
      normalizer.Normalize("GET", "/_matrix/client/v3/org.example.sync").key,
      "/_matrix/client/v3/sync");
  // ... under every version spelling, as built-in forms are.
  EXPECT_EQ(
      normalizer.Normalize("GET", "/_matrix/client/r0/org.example.sync").key,
      "/_matrix/client/v3/sync");
}

TEST(RouteOptionsTest, ExtraUnderClientV3GetsTheVersionSpellings) {
  const RouteNormalizer normalizer(
      WithExtra({{"/_matrix/client/v3/org.example/rooms/{roomId}/thing", ""}}));
  for (const char* version : {"v3", "r0", "api/v1", "unstable"}) {
    const Route r = normalizer.Normalize(
        "GET", absl::StrCat("/_matrix/client/", version,
                            "/org.example/rooms/!a:b/thing"));
    EXPECT_EQ(r.key, "/_matrix/client/v3/org.example/rooms/{roomId}/thing")
        << version;
  }
}

TEST(RouteOptionsTest, ExtraUnderR0IsKeyedAsV3UnderEverySpelling) {
  const RouteOptions routes =
      WithExtra({{"/_matrix/client/r0/org.example/rooms/{roomId}/thing", ""},
                 {"/_matrix/client/api/v1/org.example/other", ""},
                 {"/_matrix/media/v1/org.example/{mediaId}", ""},
                 {"/_matrix/client/r0/org.example/rooms/{roomId}/thing2",
                  "/_matrix/client/r0/org.example/rooms/{roomId}/thing"}});
  std::vector<internal::RouteOptionsProblem> problems =
      internal::FindRouteOptionsProblems(routes);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_TRUE(problems[0].warning);
  EXPECT_EQ(problems[0].Path(), "routes.extra[0].template");
  EXPECT_EQ(problems[0].message,
            "\"/_matrix/client/r0/org.example/rooms/{roomId}/thing\" is read "
            "as \"/_matrix/client/v3/org.example/rooms/{roomId}/thing\": a "
            "version spelling is keyed as its stable form and served under "
            "every spelling of it");
  const RouteNormalizer normalizer(routes);
  for (const char* version : {"v3", "r0", "api/v1", "unstable"}) {
    EXPECT_EQ(normalizer
                  .Normalize("GET", absl::StrCat("/_matrix/client/", version,
                                                 "/org.example/rooms/!a:b/"
                                                 "thing"))
                  .key,
              "/_matrix/client/v3/org.example/rooms/{roomId}/thing")
        << version;
    EXPECT_EQ(normalizer
                  .Normalize("GET", absl::StrCat("/_matrix/client/", version,
                                                 "/org.example/other"))
                  .key,
              "/_matrix/client/v3/org.example/other")
        << version;
    // The alias, written under r0, shares the key under every spelling.
    EXPECT_EQ(normalizer
                  .Normalize("GET", absl::StrCat("/_matrix/client/", version,
                                                 "/org.example/rooms/!a:b/"
                                                 "thing2"))
                  .key,
              "/_matrix/client/v3/org.example/rooms/{roomId}/thing")
        << version;
  }
  for (const char* version : {"v3", "r0", "v1"}) {
    EXPECT_EQ(normalizer
                  .Normalize("GET", absl::StrCat("/_matrix/media/", version,
                                                 "/org.example/m1"))
                  .key,
              "/_matrix/media/v3/org.example/{mediaId}")
        << version;
  }
  EXPECT_EQ(normalizer.size(), RouteNormalizer().size() + 3);
}

TEST(RouteOptionsTest, ExtraUnderUnstableKeepsItsKey) {
  // `unstable` spells both v3 and v1, and holds endpoints with keys of their
  // own: an extra under it is keyed as written and gets no v3 spelling.
  const RouteNormalizer normalizer(WithExtra({{std::string(kThings), ""}}));
  EXPECT_EQ(normalizer
                .Normalize("GET",
                           "/_matrix/client/unstable/org.example.msc9999/"
                           "rooms/!r:x/things/$e")
                .key,
            kThings);
  EXPECT_FALSE(normalizer
                   .Normalize("GET",
                              "/_matrix/client/v3/org.example.msc9999/rooms/"
                              "!r:x/things/$e")
                   .known);
  EXPECT_TRUE(internal::FindRouteOptionsProblems(
                  WithExtra({{std::string(kThings), ""}}))
                  .empty());
}

TEST(RouteOptionsTest, ExtraUnderR0IdenticalToABuiltinIsAWarning) {
  const RouteOptions routes = WithExtra({{"/_matrix/client/r0/sync", ""}});
  std::vector<internal::RouteOptionsProblem> problems =
      internal::FindRouteOptionsProblems(routes);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(problems[0].warning);
  EXPECT_EQ(problems[0].message,
            "\"/_matrix/client/r0/sync\" (read as \"/_matrix/client/v3/sync\") "
            "is already a template of pack spec; the built-in key serves it "
            "(remove this entry)");
  EXPECT_EQ(RouteNormalizer(routes).size(), RouteNormalizer().size());
}

TEST(RouteOptionsTest, ExtraIdenticalToABuiltinIsAWarningAndKeepsItsKey) {
  const RouteOptions routes = WithExtra({{"/_matrix/client/v3/sync", ""}});
  EXPECT_TRUE(ValidateRouteOptions(routes).ok());
  std::vector<internal::RouteOptionsProblem> problems =
      internal::FindRouteOptionsProblems(routes);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(problems[0].warning);
  EXPECT_THAT(problems[0].message, HasSubstr("already a template of pack"));
  const RouteNormalizer normalizer(routes);
  EXPECT_EQ(normalizer.size(), RouteNormalizer().size());
}

TEST(RouteOptionsTest, EveryValidationRuleNamesTheEntry) {
  struct Case {
    std::vector<ExtraRoute> extra;
    std::string_view error;
  };
  const std::string long_template = "/x/" + std::string(2048, 'a');
  const std::vector<Case> cases = {
      {{{"_matrix/x", ""}},
       "routes.extra[0].template: \"_matrix/x\" must start with '/'"},
      {{{"", ""}}, "must start with '/'"},
      {{{"/a//b", ""}}, "routes.extra[0].template: \"/a//b\": empty segment"},
      {{{"/a/./b", ""}}, "dot segment"},
      {{{"/a/../b", ""}}, "dot segment"},
      {{{"/a/b?x=1", ""}}, "without query or fragment"},
      {{{"/a/b#f", ""}}, "without query or fragment"},
      {{{"/{first}/b", ""}}, "the first segment must be a literal"},
      {{{"/a/{bad-name}", ""}}, "placeholder names are"},
      {{{"/a/x%2Fy", ""}}, "without '%'"},
      {{{long_template, ""}}, "bytes, expected at most 2048"},
      {{{"/a/b", ""}, {"/a/b", ""}},
       "routes.extra[1].template: \"/a/b\" is listed twice (also "
       "routes.extra[0])"},
      {{{"/a/{x}", ""}, {"/a/{y}", ""}},
       "routes.extra[1].template: \"/a/{y}\" matches exactly the same paths "
       "as route \"/a/{x}\" of routes.extra[0]"},
      {{{"/_matrix/client/v3/rooms/{room}/state", ""}},
       "matches exactly the same paths as route "
       "\"/_matrix/client/v3/rooms/{roomId}/state\" of pack spec"},
      // An explicit extra may not take over a built-in version spelling.
      {{{"/_matrix/client/unstable/sync", ""}},
       "matches exactly the same paths as version spelling "
       "\"/_matrix/client/unstable/sync\" (key \"/_matrix/client/v3/sync\")"},
      // One endpoint written under r0 and under v3: two keys for one path.
      {{{"/_matrix/client/r0/org.example/{x}", ""},
        {"/_matrix/client/v3/org.example/{x}", ""}},
       "routes.extra[1].template: \"/_matrix/client/v3/org.example/{x}\" "
       "matches exactly the same paths as route "
       "\"/_matrix/client/r0/org.example/{x}\" (key "
       "\"/_matrix/client/v3/org.example/{x}\") of routes.extra[0]"},
      {{{"/_matrix/media/v3/org.example/{x}", ""},
        {"/_matrix/media/r0/org.example/{x}", ""}},
       "routes.extra[1].template: \"/_matrix/media/r0/org.example/{x}\" "
       "matches exactly the same paths as route "
       "\"/_matrix/media/v3/org.example/{x}\" of routes.extra[0]"},
      // ... and under unstable (kept as written: unstable spells v3 and v1)
      // and v3, whose unstable spelling it is.
      {{{"/_matrix/client/unstable/org.example/{x}", ""},
        {"/_matrix/client/v3/org.example/{x}", ""}},
       "routes.extra[1].template: \"/_matrix/client/v3/org.example/{x}\" is "
       "also served as \"/_matrix/client/unstable/org.example/{x}\" (prefix "
       "alias /_matrix/client/unstable), which matches exactly the same paths "
       "as route \"/_matrix/client/unstable/org.example/{x}\" of "
       "routes.extra[0]"},
      {{{"/b/{x}", "/nowhere"}},
       "routes.extra[0].alias_of: \"/nowhere\" is not an active route "
       "template"},
      {{{"/a/{x}", ""}, {"/b/{y}", "/a/{x}"}},
       "routes.extra[1].alias_of: \"/a/{x}\" has other placeholders"},
      {{{"/a/{x}", ""}, {"/b/{x}", "/a/{x}"}, {"/c/{x}", "/b/{x}"}},
       "routes.extra[2].alias_of: \"/b/{x}\" is not an active route template"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(OnlyError(WithExtra(c.extra)), HasSubstr(c.error))
        << c.extra[0].route_template;
    EXPECT_FALSE(RouteNormalizer::Create(WithExtra(c.extra)).ok());
  }
}

// Messages quote templates C-escaped: no byte of an option can break a line
// of the loader's output or forge another.
TEST(RouteOptionsTest, MessagesEscapeTheTemplate) {
  absl::Status status = ValidateRouteOptions(
      WithExtra({{"x\nconfig.yaml:1:1: forged", ""}, {"/a\x01z", ""}}));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("\"x\\nconfig.yaml:1:1: forged\""));
  EXPECT_THAT(status.message(), HasSubstr("\"/a\\x01z\""));
  size_t lines = 1;
  for (char c : status.message()) lines += c == '\n';
  EXPECT_EQ(lines, 2u);
  RouteOptions packs;
  packs.packs = {"a\nb"};
  EXPECT_THAT(ValidateRouteOptions(packs).message(),
              HasSubstr("unknown pack \"a\\nb\""));
}

TEST(RouteOptionsTest, EveryErrorAtOnce) {
  absl::Status status = ValidateRouteOptions(
      WithExtra({{"no-slash", ""}, {"/a//b", ""}, {"/c", "/missing"}}));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("routes.extra[0].template"));
  EXPECT_THAT(status.message(), HasSubstr("routes.extra[1].template"));
  EXPECT_THAT(status.message(), HasSubstr("routes.extra[2].alias_of"));
}

TEST(RouteOptionsTest, PackErrors) {
  RouteOptions routes;
  routes.packs = {"spec", "synpase", "spec"};
  absl::Status status = ValidateRouteOptions(routes);
  EXPECT_THAT(status.message(),
              HasSubstr("routes.packs[1]: unknown pack \"synpase\", expected "
                        "one of spec, msc, synapse, dendrite, conduwuit, "
                        "identity, push"));
  EXPECT_THAT(status.message(),
              HasSubstr("routes.packs[2]: pack \"spec\" is listed twice"));
}

TEST(RouteOptionsTest, AtMost4096ExtraTemplates) {
  EXPECT_TRUE(
      ValidateRouteOptions(WithExtra(testing::GenerateExtraRoutes(4096))).ok());
  EXPECT_THAT(OnlyError(WithExtra(testing::GenerateExtraRoutes(4097))),
              HasSubstr("routes.extra: got 4097 templates, expected at most "
                        "4096"));
}

TEST(RouteOptionsTest, GeneratedExtrasAllMatchTheirOwnKey) {
  const std::vector<ExtraRoute> extra = testing::GenerateExtraRoutes(1000);
  const RouteNormalizer normalizer(WithExtra(extra));
  for (const ExtraRoute& e : extra) {
    const Route r =
        normalizer.Normalize("GET", testing::TargetFor(e.route_template));
    EXPECT_EQ(r.key, e.alias_of.empty() ? e.route_template : e.alias_of)
        << e.route_template;
    // Built-in routes are untouched.
  }
  EXPECT_EQ(normalizer.Normalize("GET", "/_matrix/client/v3/sync").key,
            "/_matrix/client/v3/sync");
}

// A merge assembles the expansion from the packs' (expanded once per set)
// and the extras': it must be the very list expanding the whole table gives,
// in the same order.
TEST(RouteOptionsTest, MergedExpansionEqualsTheWholeTablesExpansion) {
  std::vector<ExtraRoute> generated = testing::GenerateExtraRoutes(200);
  const std::vector<std::vector<ExtraRoute>> extras = {
      {},
      {{std::string(kThings), ""},
       {std::string(kThingsV2), std::string(kThings)}},
      {{"/_matrix/client/v3/org.example.sync", "/_matrix/client/v3/sync"},
       {"/_matrix/client/v3/org.example/rooms/{roomId}/thing", ""},
       {"/_matrix/client/r0/org.example/other", ""},
       {"/_matrix/media/v3/org.example/{mediaId}", ""},
       {"/_example/rooms/{roomId}/state/{stateKey}", ""}},
      generated,
  };
  const std::vector<std::vector<std::string>> pack_sets = {
      {},
      {"spec"},
      {"spec", "msc", "dendrite"},
      {"push"},
      std::vector<std::string>(RoutePackNames().begin(),
                               RoutePackNames().end())};
  size_t compared = 0;
  for (const std::vector<std::string>& packs : pack_sets) {
    for (const std::vector<ExtraRoute>& extra : extras) {
      RouteOptions routes = WithExtra(extra);
      routes.packs = packs;
      absl::StatusOr<std::unique_ptr<const internal::MergedRouteTable>> table =
          internal::MergeRouteTable(routes);
      // Without `spec`, an alias of a spec template names no key.
      if (!table.ok()) continue;
      ++compared;
      absl::StatusOr<internal::RouteTrie> whole =
          internal::RouteTrie::Build((*table)->spec());
      ASSERT_TRUE(whole.ok()) << whole.status();
      const std::span<const RouteForm> merged = (*table)->trie().forms();
      ASSERT_EQ(merged.size(), whole->forms().size());
      for (size_t i = 0; i < merged.size(); ++i) {
        EXPECT_EQ(merged[i].pattern, whole->forms()[i].pattern) << i;
        EXPECT_EQ(merged[i].id, whole->forms()[i].id) << i;
      }
      EXPECT_EQ((*table)->trie().node_count(), whole->node_count());
    }
  }
  EXPECT_GE(compared, 17u);
}

TEST(RouteOptionsTest, StateKeyMayBeEmptyInExtraTemplatesToo) {
  const RouteNormalizer normalizer(
      WithExtra({{"/_example/rooms/{roomId}/state/{stateKey}", ""},
                 {"/_example/rooms/{roomId}/thing/{thingId}", ""}}));
  EXPECT_TRUE(normalizer.Normalize("GET", "/_example/rooms/!a:b/state/").known);
  EXPECT_FALSE(
      normalizer.Normalize("GET", "/_example/rooms/!a:b/thing/").known);
}

// Hostile variants against extra templates: the same rules as built-ins.
TEST(RouteOptionsTest, HostileTargetsAgainstExtrasAreFallback) {
  const RouteNormalizer normalizer(WithExtra({{std::string(kThings), ""}}));
  const std::string good =
      "/_matrix/client/unstable/org.example.msc9999/rooms/!r:x/things/$e";
  ASSERT_TRUE(normalizer.Normalize("GET", good).known);
  EXPECT_TRUE(normalizer.Normalize("GET", good + "?a=b#c").known);
  for (const std::string& bad : {
           good + "/",      // trailing slash
           good + "/more",  // suffix
           std::string("/_matrix/client/unstable/org.example.msc9999/rooms//"
                       "things/$e"),  // empty placeholder
           std::string("/_matrix/client/unstable/org.example.msc9999/rooms/./"
                       "things/$e"),  // dot segment
           std::string("/_matrix/client/unstable/org.example.msc9999/rooms/"
                       "!r:x/%2574hings/$e"),  // double-encoded literal
           std::string("/_matrix/client/unstable/org.example.msc9999/rooms/"
                       "!r x/things/$e"),  // space
           std::string("/_matrix/client/unstable/org.example.msc9999/rooms/"
                       "!r\x01x/things/$e"),  // control byte
           std::string("//_matrix/client/unstable/org.example.msc9999/rooms/"
                       "!r:x/things/$e"),
       }) {
    EXPECT_FALSE(normalizer.Normalize("GET", bad).known) << bad;
  }
  // An escaped spelling of a literal is that literal, as for built-ins.
  EXPECT_EQ(normalizer
                .Normalize("GET",
                           "/_matrix/client/unstable/org.example.msc9999/"
                           "rooms/!r:x/%74hings/$e")
                .key,
            kThings);
  // Identifier shapes the hostile tests use for built-ins.
  for (const std::string& value : testing::IdentifierShapes()) {
    EXPECT_TRUE(
        normalizer
            .Normalize("GET", testing::Instantiate(std::string(kThings), value))
            .known)
        << value;
  }
}

// The example: a Dendrite-packs limiter does not know Synapse's
// admin API; a Synapse-packs one keys it.
TEST(RouteOptionsTest, SynapseAdminApiIsKeyedOnlyWithTheSynapsePack) {
  constexpr std::string_view kTarget = "/_synapse/admin/v1/server_version";
  const RouteNormalizer synapse;
  ASSERT_TRUE(synapse.Normalize("GET", kTarget).known);
  EXPECT_EQ(synapse.pack(synapse.Normalize("GET", kTarget).id), "synapse");
  RouteOptions dendrite;
  dendrite.packs = {"spec", "msc", "dendrite"};
  const RouteNormalizer other(dendrite);
  EXPECT_FALSE(other.Normalize("GET", kTarget).known);
}

}  // namespace
}  // namespace mxlimit
