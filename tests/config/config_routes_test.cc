// The `routes:` section: packs and extra templates read into
// LimiterConfig::routes, every problem at its exact position, all at once,
// and the warnings about routes and about policies naming templates the
// table lacks.

#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "tests/testing/config_helpers.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing_config::Errors;
using testing_config::Parse;

std::vector<std::string> RouteWarnings(std::string_view yaml) {
  absl::StatusOr<CheckedConfig> checked =
      ParseConfigWithWarnings(yaml, "test.yaml");
  EXPECT_TRUE(checked.ok()) << checked.status().message();
  return checked.ok() ? checked->warnings : std::vector<std::string>{};
}

TEST(ConfigRoutesTest, ReadsPacksAndExtras) {
  const LimiterConfig config = Parse(R"(routes:
  packs: [spec, msc, dendrite]
  extra:
    - template: "/_matrix/client/unstable/org.example.msc9999/rooms/{roomId}/things/{eventId}"
    - template: "/_matrix/client/unstable/org.example.msc9999.v2/rooms/{roomId}/things/{eventId}"
      # this spelling shares the key of an active template
      alias_of: "/_matrix/client/unstable/org.example.msc9999/rooms/{roomId}/things/{eventId}"
)");
  EXPECT_THAT(config.routes.packs, ElementsAre("spec", "msc", "dendrite"));
  ASSERT_EQ(config.routes.extra.size(), 2u);
  EXPECT_EQ(config.routes.extra[1].alias_of,
            config.routes.extra[0].route_template);
}

TEST(ConfigRoutesTest, LeftOutOrEmptyIsTheDefault) {
  EXPECT_EQ(Parse("tables: {}\n").routes, RouteOptions{});
  EXPECT_EQ(Parse("routes:\n").routes, RouteOptions{});
  EXPECT_EQ(Parse("routes: {}\n").routes, RouteOptions{});
}

TEST(ConfigRoutesTest, PackErrorsAtTheirPosition) {
  EXPECT_THAT(
      Errors("routes:\n  packs: [spec, synpase, spec]\n"),
      ElementsAre("test.yaml:2:17: routes.packs[1]: unknown pack \"synpase\", "
                  "expected one of spec, msc, synapse, dendrite, conduwuit, "
                  "identity, push",
                  "test.yaml:2:26: routes.packs[2]: pack \"spec\" is listed "
                  "twice"));
  EXPECT_THAT(Errors("routes:\n  packs: []\n"),
              ElementsAre(HasSubstr("test.yaml:2:10: routes.packs: got an "
                                    "empty list, expected one or more of")));
  EXPECT_THAT(Errors("routes:\n  packs: spec\n"),
              ElementsAre(HasSubstr("test.yaml:2:10: routes.packs: got spec, "
                                    "expected a list of pack names")));
  EXPECT_THAT(Errors("routes:\n  packs: [spec, [msc]]\n"),
              ElementsAre(HasSubstr("test.yaml:2:17: routes.packs[1]: got a "
                                    "list, expected a pack name")));
}

TEST(ConfigRoutesTest, UnknownKeysAreErrors) {
  EXPECT_THAT(Errors("routes:\n  pack: [spec]\n"),
              ElementsAre("test.yaml:2:3: unknown key \"pack\" in routes "
                          "(did you mean \"packs\"?); known keys: packs, "
                          "extra"));
  EXPECT_THAT(Errors("routes:\n  extra:\n    - template: /a/b\n      alias: "
                     "/c\n"),
              ElementsAre("test.yaml:4:7: unknown key \"alias\" in "
                          "routes.extra[0]; known keys: template, alias_of"));
}

TEST(ConfigRoutesTest, ExtraShapeErrors) {
  EXPECT_THAT(Errors("routes:\n  extra: /a/b\n"),
              ElementsAre(HasSubstr("test.yaml:2:10: routes.extra: got /a/b, "
                                    "expected a list of templates")));
  EXPECT_THAT(Errors("routes:\n  extra:\n    - /a/b\n"),
              ElementsAre(HasSubstr("test.yaml:3:7: routes.extra[0]: got "
                                    "/a/b, expected a map")));
  // The alias_of of an entry without a template is still checked.
  EXPECT_THAT(Errors("routes:\n  extra:\n    - alias_of: /a\n"),
              ElementsAre("test.yaml:3:7: routes.extra[0]: `template` is "
                          "missing",
                          HasSubstr("test.yaml:3:17: routes.extra[0].alias_of: "
                                    "\"/a\" is not an active route template")));
  EXPECT_THAT(Errors("routes:\n  extra:\n    - template: [a]\n"),
              ElementsAre(HasSubstr("test.yaml:3:17: "
                                    "routes.extra[0].template: got a list")));
}

// Issue #30, item 13: an entry whose template is refused (invalid, listed
// twice, not a string) still has its alias_of checked, in the same pass.
TEST(ConfigRoutesTest, AliasOfIsCheckedWhenTheTemplateIsRefused) {
  EXPECT_THAT(
      Errors(R"(routes:
  extra:
    - template: "/ok/{x}"
    - template: "/a//b"
      alias_of: "/nowhere"
    - template: "/ok/{x}"
      alias_of: "/nowhere/either"
    - template: "/ok2/{y}"
    - template: "/ok2/{y}"
      alias_of: "/ok/{x}"
    - template: [not, a, string]
      alias_of: "/nor/here"
    - template: "/b//c"
      alias_of: "/ok/{x}"
)"),
      ElementsAre(
          "test.yaml:4:17: routes.extra[1].template: \"/a//b\": empty segment "
          "('//')",
          HasSubstr("test.yaml:5:17: routes.extra[1].alias_of: \"/nowhere\" "
                    "is not an active route template"),
          "test.yaml:6:17: routes.extra[2].template: \"/ok/{x}\" is listed "
          "twice (also routes.extra[0])",
          HasSubstr("test.yaml:7:17: routes.extra[2].alias_of: "
                    "\"/nowhere/either\" is not an active route template"),
          HasSubstr("test.yaml:9:17: routes.extra[4].template: \"/ok2/{y}\" "
                    "is listed twice"),
          HasSubstr("test.yaml:10:17: routes.extra[4].alias_of: \"/ok/{x}\" "
                    "has other placeholders"),
          HasSubstr("test.yaml:11:17: routes.extra[5].template: got a list"),
          HasSubstr("test.yaml:12:17: routes.extra[5].alias_of: \"/nor/here\" "
                    "is not an active route template"),
          "test.yaml:13:17: routes.extra[6].template: \"/b//c\": empty segment "
          "('//')"));
}

// Issue #30, item 15: a placeholder name used twice is an error at load,
// in a template and in an alias_of.
TEST(ConfigRoutesTest, RepeatedPlaceholderNamesAreErrors) {
  EXPECT_THAT(
      Errors("routes:\n  extra:\n"
             "    - template: \"/_example/rooms/{roomId}/x/{roomId}\"\n"
             "    - template: \"/_example/a/{x}\"\n"
             "      alias_of: \"/_example/b/{x}/{x}\"\n"),
      ElementsAre("test.yaml:3:17: routes.extra[0].template: "
                  "\"/_example/rooms/{roomId}/x/{roomId}\": the placeholder "
                  "{roomId} appears twice; give each its own name",
                  HasSubstr("test.yaml:5:17: routes.extra[1].alias_of: "
                            "\"/_example/b/{x}/{x}\" is not an active route "
                            "template")));
}

// Every rule of ValidateRouteOptions, each at the template or alias_of it
// is about, all in one file: indices are the file's even when an earlier
// entry could not be read.
TEST(ConfigRoutesTest, EveryTemplateErrorAtOnceWithItsPosition) {
  EXPECT_THAT(
      Errors(R"(routes:
  extra:
    - template: [not, a, string]
    - template: "_matrix/x"
    - template: "/a//b"
    - template: "/a/./b"
    - template: "/a/b?x=1"
    - template: "/{x}/b"
    - template: "/ok/{x}"
    - template: "/ok/{x}"
    - template: "/ok/{y}/z"
    - template: "/ok/{z}/z"
    - template: "/_matrix/client/v3/rooms/{room}/state"
    - template: "/alias/{y}"
      alias_of: "/nowhere"
    - template: "/alias2/{other}"
      alias_of: "/ok/{x}"
)"),
      ElementsAre(
          HasSubstr("test.yaml:3:17: routes.extra[0].template: got a list"),
          "test.yaml:4:17: routes.extra[1].template: \"_matrix/x\" must start "
          "with '/'",
          "test.yaml:5:17: routes.extra[2].template: \"/a//b\": empty segment "
          "('//')",
          "test.yaml:6:17: routes.extra[3].template: \"/a/./b\": dot segment",
          HasSubstr("test.yaml:7:17: routes.extra[4].template: \"/a/b?x=1\" "
                    "holds '?' or '#'"),
          HasSubstr("test.yaml:8:17: routes.extra[5].template: \"/{x}/b\": the "
                    "first segment must be a literal"),
          "test.yaml:10:17: routes.extra[7].template: \"/ok/{x}\" is listed "
          "twice (also routes.extra[6])",
          "test.yaml:12:17: routes.extra[9].template: \"/ok/{z}/z\" matches "
          "exactly the same paths as route \"/ok/{y}/z\" of routes.extra[8]",
          "test.yaml:13:17: routes.extra[10].template: "
          "\"/_matrix/client/v3/rooms/{room}/state\" matches exactly the same "
          "paths as route \"/_matrix/client/v3/rooms/{roomId}/state\" of pack "
          "spec",
          HasSubstr("test.yaml:15:17: routes.extra[11].alias_of: \"/nowhere\" "
                    "is not an active route template"),
          HasSubstr("test.yaml:17:17: routes.extra[12].alias_of: \"/ok/{x}\" "
                    "has other placeholders")));
}

TEST(ConfigRoutesTest, ExtraIdenticalToABuiltinIsAWarning) {
  EXPECT_THAT(RouteWarnings("routes:\n  extra:\n    - template: "
                            "/_matrix/client/v3/sync\n"),
              ElementsAre("test.yaml:3:17: warning: routes.extra[0].template: "
                          "\"/_matrix/client/v3/sync\" is already a template "
                          "of pack spec; the built-in key serves it (remove "
                          "this entry)"));
}

TEST(ConfigRoutesTest, ExtraUnderR0IsReadAsV3AndAPairIsRefused) {
  EXPECT_THAT(RouteWarnings("routes:\n  extra:\n    - template: "
                            "/_matrix/client/r0/org.example/x\n"),
              ElementsAre("test.yaml:3:17: warning: routes.extra[0].template: "
                          "\"/_matrix/client/r0/org.example/x\" is read as "
                          "\"/_matrix/client/v3/org.example/x\": a version "
                          "spelling is keyed as its stable form and served "
                          "under every spelling of it"));
  // The same endpoint under r0 and under v3 would be two keys, so two
  // budgets, for one path: refused, both named.
  EXPECT_THAT(Errors("routes:\n  extra:\n"
                     "    - template: /_matrix/client/r0/org.example/x\n"
                     "    - template: /_matrix/client/v3/org.example/x\n"),
              ElementsAre("test.yaml:4:17: routes.extra[1].template: "
                          "\"/_matrix/client/v3/org.example/x\" matches "
                          "exactly the same paths as route "
                          "\"/_matrix/client/r0/org.example/x\" (key "
                          "\"/_matrix/client/v3/org.example/x\") of "
                          "routes.extra[0]"));
}

TEST(ConfigRoutesTest, PolicyNamingATemplateTheTableLacksIsAWarning) {
  const std::string policy =
      "policies:\n  - name: things\n    match: "
      "/_example/rooms/{roomId}/things\n    unlimited: true\n";
  EXPECT_THAT(RouteWarnings(policy),
              ElementsAre("test.yaml:3:12: warning: policies[0].match: "
                          "\"/_example/rooms/{roomId}/things\" is not a route "
                          "template of the active table (routes.packs: spec, "
                          "msc, synapse), so no request is keyed by it; add "
                          "its pack or an extra template"));
  // With the template as an extra it is a key: no warning.
  EXPECT_THAT(RouteWarnings("routes:\n  extra:\n    - template: "
                            "/_example/rooms/{roomId}/things\n" +
                            policy),
              IsEmpty());
  // Keys are compared in canonical form, as policies match them.
  EXPECT_THAT(RouteWarnings("policies:\n  - name: s\n    match: "
                            "/_matrix/client/v3/rooms/{roomId}/state\n"
                            "    unlimited: true\n"),
              IsEmpty());
}

}  // namespace
}  // namespace mxlimit
