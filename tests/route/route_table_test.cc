// The route table builder: validation of table lines, alias expansion and
// its conflict rules, trie behaviour on small tables, and the built-in table
// against what Synapse serves (tests/data/synapse-routes.tsv).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxlimit/route.h"
#include "src/route/route_table_builder.h"
#include "src/route/route_trie.h"
#include "tests/testing/route_pack_testing.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit::internal {
namespace {

using ::testing::HasSubstr;

// A small table owned by the test; the spec views its vectors.
struct Table {
  std::vector<std::string_view> templates;
  std::vector<RouteFormRow> forms;
  std::vector<PrefixAliasRow> aliases;
  std::vector<std::string_view> may_be_empty;
  RouteTableSpec Spec() const {
    return {templates, forms, aliases, may_be_empty};
  }
};

absl::Status BuildStatus(const Table& table) {
  return RouteTrie::Build(table.Spec()).status();
}

TEST(RouteTableTest, BuiltinTableBuilds) {
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(DefaultRouteTable().spec());
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->keys().size(),
            DefaultRouteTable().spec().templates.size() + 1);
  EXPECT_LE(trie->max_segments(), RouteTrie::kMaxSegments);
  EXPECT_GT(trie->literal_edge_count(), 100u);
}

TEST(RouteTableTest, RejectsMalformedTemplates) {
  struct Case {
    std::string_view route_template;
    std::string_view why;
  };
  for (const Case& c : std::vector<Case>{
           {"", "must start with '/'"},
           {"a/b", "must start with '/'"},
           {"/a//b", "empty segment"},
           {"/a/./b", "dot segment"},
           {"/a/../b", "dot segment"},
           {"/a/{}", "placeholder"},
           {"/a/{x}y", "placeholder"},
           {"/a/{x-y}", "placeholder names"},
           // Issue #30, item 15: a name used twice.
           {"/rooms/{roomId}/x/{roomId}",
            "the placeholder {roomId} appears twice; give each its own name"},
           {"/a/b%2Fc", "literal segments"},
           {"/a/b c", "literal segments"},
           {"/a/b?c", "literal segments"},
           {"/a/x}", "literal segments"},
           {"/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21/22/23/24/"
            "25",
            "segments"},
       }) {
    Table table{{c.route_template}, {}, {}, {}};
    absl::Status status = BuildStatus(table);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << c.route_template;
    EXPECT_THAT(status.message(), HasSubstr(c.why)) << c.route_template;
  }
}

// Only an empty segment before another '/' is "//": a template's trailing
// '/' (an empty last segment) is not, wherever the split puts it.
TEST(RouteTableTest, EmptySegmentMeansDoubleSlashNotATrailingSlash) {
  for (std::string_view ok : {"/", "/a/", "/a/{x}/"}) {
    Table table{{ok}, {}, {}, {}};
    EXPECT_THAT(BuildStatus(table).message(),
                ::testing::Not(HasSubstr("empty segment")))
        << ok;
  }
  for (std::string_view bad : {"//", "/a//", "//a", "/a/{x}//"}) {
    Table table{{bad}, {}, {}, {}};
    EXPECT_THAT(BuildStatus(table).message(), HasSubstr("empty segment"))
        << bad;
  }
}

TEST(RouteTableTest, RejectsDuplicateShapesWhateverThePlaceholderNames) {
  Table table{{"/a/{x}/b", "/a/{y}/b"}, {}, {}, {}};
  absl::Status status = BuildStatus(table);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("/a/{y}/b"));
  EXPECT_THAT(status.message(), HasSubstr("/a/{x}/b"));
}

TEST(RouteTableTest, RejectsFormsOfUnknownTemplatesAndFormsThatShadowRoutes) {
  Table unknown{{"/a"}, {{"/a/{txn}", "/b"}}, {}, {}};
  EXPECT_THAT(BuildStatus(unknown).message(),
              HasSubstr("not a route template"));
  Table shadow{{"/a", "/a/{x}"}, {{"/a/{txn}", "/a"}}, {}, {}};
  EXPECT_THAT(BuildStatus(shadow).message(), HasSubstr("collides"));
}

TEST(RouteTableTest, RejectsPrefixAliasesWithPlaceholders) {
  Table table{{"/p/v3/x"}, {}, {{"/p/{v}", "/p/v3"}}, {}};
  EXPECT_THAT(BuildStatus(table).message(), HasSubstr("prefix alias"));
  Table trailing{{"/p/v3/x"}, {}, {{"/p/r0/", "/p/v3"}}, {}};
  EXPECT_THAT(BuildStatus(trailing).message(), HasSubstr("prefix alias"));
}

TEST(RouteTableTest, AliasExpansionsThatDisagreeAreAnError) {
  // /p/u/x would be both /p/v3/x and /p/v1/x.
  Table table{
      {"/p/v3/x", "/p/v1/x"}, {}, {{"/p/u", "/p/v3"}, {"/p/u", "/p/v1"}}, {}};
  absl::Status status = BuildStatus(table);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("/p/u/x"));
}

TEST(RouteTableTest, ExplicitLinesOverrideAliasExpansions) {
  Table table{{"/p/v3/x", "/p/u/x", "/p/v3/y"}, {}, {{"/p/u", "/p/v3"}}, {}};
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(table.Spec());
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->Match("/p/u/x"), 2);  // its own template
  EXPECT_EQ(trie->Match("/p/u/y"), 3);  // the alias of /p/v3/y
  EXPECT_EQ(trie->Match("/p/v3/x"), 1);
}

TEST(RouteTableTest, FormsAreAliasedLikeTemplates) {
  Table table{{"/p/v3/send/{t}/{txn}"},
              {{"/p/v3/send/{t}", "/p/v3/send/{t}/{txn}"}},
              {{"/p/r0", "/p/v3"}},
              {}};
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(table.Spec());
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->Match("/p/r0/send/m"), 1);
  EXPECT_EQ(trie->Match("/p/r0/send/m/1"), 1);
  EXPECT_EQ(trie->Match("/p/r1/send/m/1"), 0);
}

TEST(RouteTableTest, EmptyPlaceholdersOnlyWhereDeclared) {
  Table table{{"/s/{type}/{key}", "/t/{type}/{key}"}, {}, {}, {"key"}};
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(table.Spec());
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->Match("/s/a/"), 1);
  EXPECT_EQ(trie->Match("/s//b"), 0);
  EXPECT_EQ(trie->Match("/t/a/"), 2);
  // Two templates disagreeing on one placeholder node is an error.
  Table conflict{{"/s/{type}/{key}", "/s/{type}/{other}/x"}, {}, {}, {"key"}};
  EXPECT_THAT(BuildStatus(conflict).message(), HasSubstr("may be empty"));
}

TEST(RouteTableTest, LiteralBeatsPlaceholderWithBacktracking) {
  Table table{{"/q/{type}", "/q/directory", "/q/a/b", "/q/{x}/c"}, {}, {}, {}};
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(table.Spec());
  ASSERT_TRUE(trie.ok()) << trie.status();
  EXPECT_EQ(trie->Match("/q/directory"), 2);
  EXPECT_EQ(trie->Match("/q/other"), 1);
  EXPECT_EQ(trie->Match("/q/a"), 1);  // literal `a` has no route: {type}
  EXPECT_EQ(trie->Match("/q/a/b"), 3);
  EXPECT_EQ(trie->Match("/q/a/c"), 4);  // literal branch fails at `c`
  EXPECT_EQ(trie->Match("/q/a/d"), 0);
}

TEST(RouteTableTest, EmptyTableMatchesNothing) {
  Table table;
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(table.Spec());
  ASSERT_TRUE(trie.ok());
  EXPECT_EQ(trie->Match("/"), 0);
  EXPECT_EQ(trie->Match("/a"), 0);
  EXPECT_THAT(trie->keys(), ::testing::ElementsAre(kFallbackRouteKey));
}

// --- Synapse
// ------------------------------------------------------------------

// Expands the regex subset synapse-routes.tsv uses into concrete paths:
// literal text, `\.`, `x?`, groups with alternatives (named or not, optional
// with `?`), character classes with `*`/`+`, and `{name}` placeholders. Each
// class or placeholder becomes `value`. Throws on anything else (`.*`).
class RegexExpander {
 public:
  RegexExpander(std::string_view regex, std::string value)
      : text_(regex), value_(std::move(value)) {}

  std::vector<std::string> Expand() {
    std::vector<std::string> out = Alternation();
    if (pos_ != text_.size()) throw std::runtime_error("unbalanced ')'");
    return out;
  }

 private:
  std::vector<std::string> Alternation() {
    std::vector<std::string> out = Sequence();
    while (pos_ < text_.size() && text_[pos_] == '|') {
      ++pos_;
      std::vector<std::string> more = Sequence();
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

  std::vector<std::string> Sequence() {
    std::vector<std::string> out = {""};
    while (pos_ < text_.size() && text_[pos_] != '|' && text_[pos_] != ')') {
      std::vector<std::string> item = Item();
      if (pos_ < text_.size() && text_[pos_] == '?') {
        ++pos_;
        item.push_back("");
      }
      std::vector<std::string> next;
      for (const std::string& a : out) {
        for (const std::string& b : item) next.push_back(a + b);
      }
      out = std::move(next);
    }
    return out;
  }

  std::vector<std::string> Item() {
    char c = text_[pos_++];
    switch (c) {
      case '(': {
        if (text_.substr(pos_, 3) == "?P<") pos_ = text_.find('>', pos_) + 1;
        std::vector<std::string> inner = Alternation();
        if (pos_ >= text_.size() || text_[pos_] != ')') {
          throw std::runtime_error("unclosed group");
        }
        ++pos_;
        return inner;
      }
      case '[': {
        size_t close = pos_;
        while (text_[close] != ']') close += text_[close] == '\\' ? 2 : 1;
        pos_ = close + 1;
        if (pos_ < text_.size() && (text_[pos_] == '*' || text_[pos_] == '+')) {
          ++pos_;
        }
        return {value_};
      }
      case '{':
        pos_ = text_.find('}', pos_) + 1;
        return {value_};
      case '\\':
        return {std::string(1, text_[pos_++])};
      case '.':
        if (pos_ < text_.size() && text_[pos_] == '*') {
          throw std::runtime_error("'.*' is not a route shape");
        }
        return {"."};
      default:
        return {std::string(1, c)};
    }
  }

  std::string_view text_;
  std::string value_;
  size_t pos_ = 0;
};

std::vector<std::string> ExpandSynapsePattern(std::string pattern,
                                              std::string value) {
  if (!pattern.empty() && pattern.front() == '^') pattern.erase(0, 1);
  if (!pattern.empty() && pattern.back() == '$') pattern.pop_back();
  return RegexExpander(pattern, std::move(value)).Expand();
}

// The path with its version segment(s) replaced, so that paths differing only
// in version group together.
std::string WithoutVersion(std::string path) {
  for (std::string_view prefix : {"/_matrix/client/", "/_matrix/media/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    std::string rest = path.substr(prefix.size());
    for (std::string_view version :
         {"api/v1/", "r0/", "v3/", "v1/", "unstable/"}) {
      if (rest.rfind(version, 0) == 0) {
        return std::string(prefix) + "V/" + rest.substr(version.size());
      }
    }
  }
  return path;
}

// Against the default packs (spec, msc, synapse): what Synapse serves.
TEST(RouteTableTest, EverySynapseRouteIsKnownAndVersionsShareAKey) {
  const RouteTrie trie = testing::BuildPackTrie(testing::PackTable::Default());
  struct {
    const RouteTrie& trie;
    Route Normalize(std::string_view, std::string_view target) const {
      RouteId id = trie.Match(target);
      return Route{id, trie.keys()[id], id != kFallbackRouteId};
    }
  } normalizer{trie};
  std::vector<testing::TsvRow> rows = testing::ReadTsv("synapse-routes.tsv");
  ASSERT_GE(rows.size(), 211u);
  size_t expanded_paths = 0;
  size_t skipped_rows = 0;
  for (const testing::TsvRow& row : rows) {
    const std::string& pattern = row.at("regex_or_path");
    std::vector<std::string> plain;
    std::vector<std::string> hostile;
    try {
      plain = ExpandSynapsePattern(pattern, "ID1");
      hostile = ExpandSynapsePattern(pattern, "%21id%2F2%3Ahs");
    } catch (const std::runtime_error&) {
      // Only `pushrules/.*` (its spec shapes are tested from the spec list).
      EXPECT_THAT(pattern, HasSubstr("pushrules/.*"));
      ++skipped_rows;
      continue;
    }
    ASSERT_EQ(plain.size(), hostile.size());
    std::map<std::string, std::string_view> key_by_shape;
    for (size_t i = 0; i < plain.size(); ++i) {
      Route r = normalizer.Normalize(row.at("methods"), plain[i]);
      EXPECT_TRUE(r.known) << pattern << " -> " << plain[i];
      EXPECT_EQ(normalizer.Normalize("GET", hostile[i]).key, r.key)
          << hostile[i];
      auto [it, inserted] =
          key_by_shape.emplace(WithoutVersion(plain[i]), r.key);
      EXPECT_EQ(it->second, r.key)
          << plain[i] << ": version spellings of one endpoint differ";
      ++expanded_paths;
    }
  }
  EXPECT_EQ(skipped_rows, 1u);
  EXPECT_GT(expanded_paths, 500u);
}

}  // namespace
}  // namespace mxlimit::internal
