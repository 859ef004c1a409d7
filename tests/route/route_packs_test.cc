// The built-in route packs (src/route/packs/*.inc): every pack against its
// own route list in tests/data (two identifier shapes per placeholder and
// hostile variants of each path), every combination of packs builds, and
// every line of every pack file belongs to the group its pack documents.

#include "src/route/route_packs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/route.h"
#include "src/route/route_table_builder.h"
#include "src/route/route_trie.h"
#include "tests/testing/route_pack_testing.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit::internal {
namespace {

using ::mxlimit::testing::AllPackNames;
using ::mxlimit::testing::BuildPackTrie;
using ::mxlimit::testing::BuiltinPack;
using ::mxlimit::testing::InstantiateTwoShapes;
using ::mxlimit::testing::PackTable;
using ::mxlimit::testing::ReadTsv;
using ::mxlimit::testing::ReferenceMatcher;
using ::testing::ElementsAre;

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// `text` with the byte at `at` written as %XX (%xx with `lower`).
std::string PercentEncodeByte(std::string_view text, size_t at,
                              bool lower = false) {
  const char* const kHex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
  const auto byte = static_cast<unsigned char>(text[at]);
  return std::string(text.substr(0, at)) + '%' + kHex[byte >> 4] +
         kHex[byte & 15] + std::string(text.substr(at + 1));
}

TEST(RoutePacksTest, PacksAreInCanonicalOrderAndTheDefaultIsSpecMscSynapse) {
  EXPECT_THAT(AllPackNames(), ElementsAre("spec", "msc", "synapse", "dendrite",
                                          "conduwuit", "identity", "push"));
  EXPECT_THAT(DefaultRoutePacks(), ElementsAre("spec", "msc", "synapse"));
  for (const RoutePack& pack : BuiltinRoutePacks()) {
    EXPECT_FALSE(pack.summary.empty()) << pack.name;
    EXPECT_FALSE(pack.table.templates.empty()) << pack.name;
  }
}

// Any set of packs is a valid table: 2^7 combinations, each built, and the
// library's merge (MergeRouteTable) gives the same rows and packs as this
// test's own reading of the rules in route_packs.h (PackTable).
TEST(RoutePacksTest, EveryCombinationOfPacksBuilds) {
  const std::vector<std::string_view> all = AllPackNames();
  for (unsigned mask = 1; mask < (1u << all.size()); ++mask) {
    std::vector<std::string_view> names;
    for (size_t i = 0; i < all.size(); ++i) {
      if (mask & (1u << i)) names.push_back(all[i]);
    }
    PackTable table(names);
    absl::StatusOr<RouteTrie> trie = RouteTrie::Build(table.spec());
    ASSERT_TRUE(trie.ok()) << ::testing::PrintToString(names) << ": "
                           << trie.status();
    EXPECT_LE(trie->max_segments(), RouteTrie::kMaxSegments);

    RouteOptions options;
    options.packs.assign(names.begin(), names.end());
    absl::StatusOr<std::unique_ptr<const MergedRouteTable>> merged =
        MergeRouteTable(options);
    ASSERT_TRUE(merged.ok()) << merged.status();
    const RouteTableSpec& got = (*merged)->spec();
    ASSERT_THAT(got.templates,
                ::testing::ElementsAreArray(table.spec().templates))
        << ::testing::PrintToString(names);
    ASSERT_EQ(got.forms.size(), table.spec().forms.size());
    for (size_t i = 0; i < got.forms.size(); ++i) {
      EXPECT_EQ(got.forms[i].form, table.spec().forms[i].form);
      EXPECT_EQ(got.forms[i].route_template,
                table.spec().forms[i].route_template);
    }
    ASSERT_EQ(got.prefix_aliases.size(), table.spec().prefix_aliases.size());
    for (size_t id = 1; id < (*merged)->packs_by_id().size(); ++id) {
      EXPECT_EQ((*merged)->packs_by_id()[id],
                table.PackOf(got.templates[id - 1]));
    }
  }
}

// A template may be repeated by a server pack (dendrite, conduwuit) so that
// the pack alone covers its server; the other packs partition the keys. A
// form or alias line is never repeated: it stays in the one pack that owns
// it, so that no merge of packs has to deduplicate explicit shapes.
TEST(RoutePacksTest, OnlyServerPacksRepeatTemplatesAndNoFormIsListedTwice) {
  std::map<std::string_view, std::string_view> owner;
  std::set<std::string_view> forms;
  std::set<std::pair<std::string_view, std::string_view>> aliases;
  for (const RoutePack& pack : BuiltinRoutePacks()) {
    std::set<std::string_view> own;
    for (std::string_view route_template : pack.table.templates) {
      EXPECT_TRUE(own.insert(route_template).second)
          << pack.name << " lists " << route_template << " twice";
      auto [it, inserted] = owner.emplace(route_template, pack.name);
      if (!inserted) {
        EXPECT_THAT(pack.name, ::testing::AnyOf("dendrite", "conduwuit"))
            << route_template << " is in " << it->second << " and "
            << pack.name;
      }
    }
    for (const RouteFormRow& form : pack.table.forms) {
      EXPECT_TRUE(forms.insert(form.form).second)
          << form.form << " is a form in two packs";
    }
    for (const PrefixAliasRow& alias : pack.table.prefix_aliases) {
      EXPECT_TRUE(
          aliases.emplace(alias.alias_prefix, alias.stable_prefix).second)
          << alias.alias_prefix;
    }
  }
}

// --- Every line belongs to its pack's documented group ----------------------

std::set<std::string> SpecListPaths() {
  std::set<std::string> paths;
  for (const auto& row : ReadTsv("matrix-spec-routes.tsv")) {
    paths.insert(row.at("path"));
  }
  return paths;
}

std::set<std::string_view> TemplatesOf(std::string_view pack) {
  const RouteTableSpec& table = BuiltinPack(pack).table;
  return {table.templates.begin(), table.templates.end()};
}

// Endpoints that, among the homeservers, only the named server serves under
// /_matrix (everything else of theirs is under their own prefix).
const std::set<std::string_view>& SynapseOnlyMatrixEndpoints() {
  static const auto* endpoints = new std::set<std::string_view>{
      "/_matrix/client/v3/account_validity/renew",
      "/_matrix/client/v3/account_validity/send_mail",
      "/_matrix/client/v3/login/cas/ticket",
      "/_matrix/client/v3/password_policy",
      "/_matrix/client/v3/tokenrefresh",
      "/_matrix/client/unstable/add_threepid/email/submit_token",
      "/_matrix/client/unstable/add_threepid/msisdn/submit_token",
      "/_matrix/client/unstable/pushers/remove",
      "/_matrix/client/unstable/registration/{medium}/submit_token",
      "/_matrix/consent",
      "/_matrix/federation/unstable/rooms/{roomId}/complexity",
  };
  return *endpoints;
}

const std::set<std::string_view>& DendriteOnlyMatrixEndpoints() {
  static const auto* endpoints = new std::set<std::string_view>{
      "/_matrix/client/v3/peek/{roomIdOrAlias}",
      "/_matrix/client/v3/rooms/{roomId}/unpeek",
      "/_matrix/federation/v1/peek/{roomId}/{peekId}",
      "/_matrix/client/unstable/event_relationships",
      "/_matrix/federation/unstable/event_relationships",
  };
  return *endpoints;
}

// spec: the spec's route list (tests/data/matrix-spec-routes.tsv, homeserver
// APIs only) and the endpoints a later spec version removed.
TEST(RoutePacksTest, SpecPackIsTheSpecsHomeserverRouteList) {
  std::set<std::string> listed = SpecListPaths();
  const std::set<std::string_view> removed_from_spec = {
      "/_matrix/federation/v1/send_join/{roomId}/{eventId}",
      "/_matrix/federation/v1/send_leave/{roomId}/{eventId}"};
  for (std::string_view route_template : TemplatesOf("spec")) {
    EXPECT_TRUE(listed.contains(std::string(route_template)) ||
                removed_from_spec.contains(route_template))
        << route_template << " is not in the spec's route list";
    EXPECT_FALSE(StartsWith(route_template, "/_matrix/identity/") ||
                 StartsWith(route_template, "/_matrix/push/"))
        << route_template;
  }
  for (const auto& row : ReadTsv("matrix-spec-routes.tsv")) {
    const std::string& api = row.at("api");
    std::string_view pack = api == "identity" ? "identity"
                            : api == "push"   ? "push"
                                              : "spec";
    EXPECT_TRUE(TemplatesOf(pack).contains(row.at("path")))
        << row.at("path") << " is not in pack " << pack;
  }
  for (const RouteFormRow& form : BuiltinPack("spec").table.forms) {
    EXPECT_FALSE(Contains(form.form, "/unstable")) << form.form;
    EXPECT_TRUE(TemplatesOf("spec").contains(form.route_template));
  }
}

// msc: every line is an unstable spelling; a form names a spec template.
TEST(RoutePacksTest, MscPackHoldsOnlyUnstableSpellings) {
  const RouteTableSpec& table = BuiltinPack("msc").table;
  // An unstable path, or an MSC's namespaced name (a .well-known file).
  auto is_msc_spelling = [](std::string_view path) {
    return Contains(path, "/unstable/") || Contains(path, ".msc");
  };
  for (std::string_view route_template : table.templates) {
    EXPECT_TRUE(is_msc_spelling(route_template)) << route_template;
    EXPECT_FALSE(SynapseOnlyMatrixEndpoints().contains(route_template));
  }
  for (const RouteFormRow& form : table.forms) {
    EXPECT_TRUE(is_msc_spelling(form.form)) << form.form;
    EXPECT_TRUE(TemplatesOf("spec").contains(form.route_template))
        << form.form << " names " << form.route_template;
  }
  for (const PrefixAliasRow& alias : table.prefix_aliases) {
    EXPECT_TRUE(Contains(alias.alias_prefix, "/unstable/"))
        << alias.alias_prefix;
  }
}

// synapse: /_synapse/*, /health, the few Synapse-only /_matrix endpoints,
// and Synapse's forms of spec templates or of its own.
TEST(RoutePacksTest, SynapsePackHoldsOnlySynapsesOwnRoutesAndForms) {
  const RouteTableSpec& table = BuiltinPack("synapse").table;
  for (std::string_view route_template : table.templates) {
    EXPECT_TRUE(StartsWith(route_template, "/_synapse/") ||
                route_template == "/health" ||
                SynapseOnlyMatrixEndpoints().contains(route_template))
        << route_template;
  }
  for (const RouteFormRow& form : table.forms) {
    EXPECT_TRUE(TemplatesOf("spec").contains(form.route_template) ||
                TemplatesOf("synapse").contains(form.route_template))
        << form.form;
    EXPECT_FALSE(Contains(form.form, "msc")) << form.form;
  }
  for (const PrefixAliasRow& alias : table.prefix_aliases) {
    EXPECT_TRUE(StartsWith(alias.stable_prefix, "/_synapse/"))
        << alias.stable_prefix;
  }
}

// dendrite and conduwuit: their own prefixes, their own /_matrix endpoints,
// the Synapse-compatible endpoints they serve (which `synapse` lists) and
// conduwuit's MSC endpoints without a stable form (which `msc` lists).
TEST(RoutePacksTest, ServerPacksHoldTheirOwnRoutesAndSynapseCompatibleOnes) {
  for (std::string_view route_template : TemplatesOf("dendrite")) {
    EXPECT_TRUE(StartsWith(route_template, "/_dendrite/") ||
                DendriteOnlyMatrixEndpoints().contains(route_template) ||
                TemplatesOf("synapse").contains(route_template))
        << route_template;
  }
  for (std::string_view route_template : TemplatesOf("conduwuit")) {
    EXPECT_TRUE(StartsWith(route_template, "/_conduwuit/") ||
                StartsWith(route_template, "/_continuwuity/") ||
                StartsWith(route_template, "/_tuwunel/") ||
                TemplatesOf("synapse").contains(route_template) ||
                TemplatesOf("msc").contains(route_template))
        << route_template;
  }
  for (std::string_view pack : {"dendrite", "conduwuit", "identity", "push"}) {
    EXPECT_TRUE(BuiltinPack(pack).table.forms.empty()) << pack;
    EXPECT_TRUE(BuiltinPack(pack).table.prefix_aliases.empty()) << pack;
  }
  for (std::string_view route_template : TemplatesOf("identity")) {
    EXPECT_TRUE(StartsWith(route_template, "/_matrix/identity/"));
  }
  for (std::string_view route_template : TemplatesOf("push")) {
    EXPECT_TRUE(StartsWith(route_template, "/_matrix/push/"));
  }
}

// The placeholder shapes the per-pack lists rely on: one of each.
TEST(RoutePacksTest, TwoShapesPerPlaceholderDiffer) {
  for (std::string_view name :
       {"roomId", "userId", "eventId", "mediaId", "serverName", "txnId",
        "token", "destination", "unknownName"}) {
    std::vector<std::string> shapes = testing::TwoShapesFor(name);
    ASSERT_EQ(shapes.size(), 2u);
    EXPECT_NE(shapes[0], shapes[1]) << name;
  }
  EXPECT_THAT(InstantiateTwoShapes("/a/{userId}/b"),
              ElementsAre("/a/@alice:example.org/b", "/a/%40user%3Aserver/b"));
}

// --- Each pack against its own list -----------------------------------------

struct PackListCase {
  const char* file;
  // The packs whose union the list is checked against (the list's own pack
  // and the packs its forms and aliases lean on).
  std::vector<std::string_view> packs;
  // The pack every expected key must come from ("" for any of `packs`).
  std::string_view key_pack;
  size_t min_rows;
};

void PrintTo(const PackListCase& c, std::ostream* os) { *os << c.file; }

class PackListTest : public ::testing::TestWithParam<PackListCase> {};

// Every row, with two identifier shapes per placeholder, is its key; hostile
// variants of it are the fallback, or at least never a key the naive
// reference matcher disagrees with.
TEST_P(PackListTest, EveryRowIsItsKeyAndHostileVariantsAreNot) {
  const PackListCase& c = GetParam();
  PackTable table(c.packs);
  RouteTrie trie = BuildPackTrie(table);
  ReferenceMatcher reference(table.spec());
  std::vector<testing::TsvRow> rows = ReadTsv(c.file);
  ASSERT_GE(rows.size(), c.min_rows) << c.file;
  size_t hostile_fallbacks = 0;
  for (const testing::TsvRow& row : rows) {
    const std::string& path = row.at("path");
    const std::string& key = row.at("key");
    EXPECT_FALSE(row.at("source").empty()) << path;
    if (!c.key_pack.empty()) {
      EXPECT_EQ(table.PackOf(key), c.key_pack) << key;
    }
    for (const std::string& target : InstantiateTwoShapes(path)) {
      EXPECT_EQ(trie.keys()[trie.Match(target)], key) << target;
      EXPECT_EQ(trie.keys()[trie.Match(target + "?access_token=x")], key)
          << target;
      // The first (always literal) segment with a byte percent-encoded, in
      // either case of hex digit: the same route, as policies read it.
      const std::string encoded = PercentEncodeByte(target, 1);
      EXPECT_EQ(trie.keys()[trie.Match(encoded)], key) << encoded;
      const std::string lower = PercentEncodeByte(target, 1, /*lower=*/true);
      EXPECT_EQ(trie.keys()[trie.Match(lower)], key) << lower;
      // Hostile variants that no table line can serve: a double slash, a
      // dot segment, the first segment with an escape that stays one
      // (`%2F`), a NUL byte.
      size_t second = std::min(target.find('/', 1), target.size());
      for (const std::string& hostile : {
               target.substr(0, second) + "/" + target.substr(second),
               target.substr(0, second) + "/." + target.substr(second),
               target.substr(0, second) + "/.." + target.substr(second),
               std::string(target).insert(second, "%2F"),
               std::string(target).insert(second, 1, '\0'),
           }) {
        EXPECT_EQ(trie.Match(hostile), kFallbackRouteId) << hostile;
      }
      // A trailing slash and a suffix: the fallback unless the table has
      // that shape too; either way what the reference matcher says.
      for (const std::string& hostile : {target + "/", target + "/x"}) {
        RouteId id = trie.Match(hostile);
        EXPECT_EQ(id, reference.Match(hostile)) << hostile;
        hostile_fallbacks += id == kFallbackRouteId;
      }
    }
  }
  // Nearly every trailing-slash and suffix variant is the fallback.
  EXPECT_GT(hostile_fallbacks, rows.size() * 4 * 9 / 10) << c.file;
}

INSTANTIATE_TEST_SUITE_P(
    Packs, PackListTest,
    ::testing::Values(
        PackListCase{"msc-routes.tsv", {"spec", "msc"}, "", 50},
        PackListCase{"synapse-pack-routes.tsv", {"spec", "synapse"}, "", 45},
        PackListCase{"synapse-admin-routes.tsv", {"synapse"}, "synapse", 95},
        PackListCase{"dendrite-routes.tsv", {"spec", "dendrite"}, "", 20},
        PackListCase{"conduwuit-routes.tsv", {"conduwuit"}, "conduwuit", 90},
        PackListCase{"identity-routes.tsv", {"identity"}, "identity", 20},
        PackListCase{"push-routes.tsv", {"push"}, "push", 1}),
    [](const auto& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find('.'));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

// Every list's rows are keys of the default packs or of their own pack, and
// the key each gets with every pack active is the same key.
TEST(RoutePacksTest, ListsAgreeWhenEveryPackIsActive) {
  RouteTrie all = BuildPackTrie(PackTable::All());
  for (const char* file :
       {"msc-routes.tsv", "synapse-pack-routes.tsv", "synapse-admin-routes.tsv",
        "dendrite-routes.tsv", "conduwuit-routes.tsv", "identity-routes.tsv",
        "push-routes.tsv"}) {
    for (const testing::TsvRow& row : ReadTsv(file)) {
      for (const std::string& target : InstantiateTwoShapes(row.at("path"))) {
        EXPECT_EQ(all.keys()[all.Match(target)], row.at("key")) << target;
      }
    }
  }
}

}  // namespace
}  // namespace mxlimit::internal
