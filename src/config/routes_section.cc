// The `routes:` section of the config file: which built-in route packs are
// keys and the operator's extra templates (mxlimit/route_options.h). The
// rules on templates live in src/route/route_table_builder.cc, the only
// copy; this file reads the YAML and pins each problem to its position.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/route_options.h"
#include "src/config/sections.h"
#include "src/config/yaml_fields.h"
#include "src/route/route_table_builder.h"

namespace mxlimit::config_internal {
namespace {

using Problem = internal::RouteOptionsProblem;

constexpr std::string_view kRoutesKeys[] = {"packs", "extra"};
constexpr std::string_view kExtraKeys[] = {"template", "alias_of"};

std::string PackList() {
  return absl::StrJoin(
      RoutePackNames(), ", ",
      [](std::string* out, std::string_view s) { out->append(s); });
}

// Where each value read into the RouteOptions came from: problems name
// indices into the options, which skip the entries that could not be read.
struct RouteMarks {
  YAML::Mark routes;
  YAML::Mark packs;
  YAML::Mark extra;
  std::vector<std::pair<std::string, YAML::Mark>> pack;  // path, mark
  struct Extra {
    size_t file_index;
    YAML::Mark entry;
    YAML::Mark route_template;
    YAML::Mark alias_of;
    // The template could not be read (reported); the entry is passed on
    // with an empty one so that its alias_of is still checked.
    bool template_reported = false;
  };
  std::vector<Extra> extras;
};

void ReadPacks(const Field& field, RouteOptions& routes, RouteMarks& marks,
               ConfigErrors& errors) {
  marks.packs = field.mark();
  if (field.value.IsSequence() && field.value.size() == 0) {
    errors.Add(field.mark(),
               absl::StrCat(
                   field.path, ": got an empty list, expected one or more of ",
                   PackList(), " (leave `packs:` out for the default: ",
                   absl::StrJoin(DefaultRoutePackNames(), ", ",
                                 [](std::string* out, std::string_view s) {
                                   out->append(s);
                                 }),
                   ")"));
    return;
  }
  if (field.value.IsNull()) {
    errors.Add(field.mark(), absl::StrCat(field.path,
                                          ": got nothing, expected a list of "
                                          "pack names, e.g. [spec, msc, "
                                          "synapse]"));
    return;
  }
  std::vector<ListString> names =
      ReadStringList(field, "a list of pack names, e.g. [spec, msc, synapse]",
                     absl::StrCat("a pack name (", PackList(), ")"), errors);
  for (size_t i = 0; i < names.size(); ++i) {
    marks.pack.emplace_back(names[i].path, names[i].mark);
    routes.packs.push_back(std::move(names[i].text));
  }
}

void ReadExtras(const Field& field, RouteOptions& routes, RouteMarks& marks,
                ConfigErrors& errors) {
  marks.extra = field.mark();
  std::vector<YAML::Node> items =
      ReadList(field,
               "a list of templates (each \"- template: ...\", optionally with "
               "\"alias_of: ...\")",
               errors);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string path = absl::StrCat(field.path, "[", i, "]");
    MapFields entry(items[i], path, kExtraKeys, /*null_is_empty=*/false,
                    errors);
    ExtraRoute extra;
    RouteMarks::Extra where{i, items[i].Mark(), items[i].Mark(),
                            items[i].Mark()};
    bool ok = true;
    if (const Field* f = entry.Find("template")) {
      std::optional<std::string> text = ReadString(
          *f, "a route template such as \"/_matrix/client/v3/...\"", errors);
      where.route_template = f->mark();
      if (text.has_value()) {
        extra.route_template = *std::move(text);
      } else {
        where.template_reported = true;
      }
    } else if (items[i].IsMap()) {
      errors.Add(items[i].Mark(),
                 absl::StrCat(path, ": `template` is missing"));
      where.template_reported = true;
    } else {
      ok = false;  // MapFields reported it
    }
    if (const Field* f = entry.Find("alias_of")) {
      std::optional<std::string> text = ReadString(
          *f, "the route template whose key this one shares", errors);
      where.alias_of = f->mark();
      if (text.has_value() && !text->empty()) {
        extra.alias_of = *std::move(text);
      } else {
        if (text.has_value()) {
          errors.Add(f->mark(), absl::StrCat(f->path,
                                             ": got \"\", expected the route "
                                             "template whose key this one "
                                             "shares"));
        }
        ok = false;
      }
    }
    if (!ok || (where.template_reported && extra.alias_of.empty())) continue;
    marks.extras.push_back(where);
    routes.extra.push_back(std::move(extra));
  }
}

// Where a problem found in the options points in the file, and its path as
// the file spells it (indices into the file, not into the options).
std::pair<YAML::Mark, std::string> Locate(const Problem& problem,
                                          const RouteMarks& marks) {
  switch (problem.field) {
    case Problem::Field::kRoutes:
      return {marks.routes, "routes"};
    case Problem::Field::kPacks:
      return {marks.packs, "routes.packs"};
    case Problem::Field::kPack: {
      return {marks.pack[problem.index].second,
              marks.pack[problem.index].first};
    }
    case Problem::Field::kExtra:
      return {marks.extra, "routes.extra"};
    case Problem::Field::kExtraTemplate: {
      const RouteMarks::Extra& e = marks.extras[problem.index];
      return {e.route_template,
              absl::StrCat("routes.extra[", e.file_index, "].template")};
    }
    case Problem::Field::kExtraAliasOf: {
      const RouteMarks::Extra& e = marks.extras[problem.index];
      return {e.alias_of,
              absl::StrCat("routes.extra[", e.file_index, "].alias_of")};
    }
  }
  return {marks.routes, "routes"};
}

}  // namespace

std::shared_ptr<const internal::MergedRouteTable> ReadRoutes(
    const Field& field, RouteOptions& routes, ConfigErrors& errors,
    ConfigErrors& warnings) {
  MapFields map(field, kRoutesKeys, /*null_is_empty=*/true, errors);
  RouteMarks marks;
  marks.routes = field.mark();
  marks.packs = marks.routes;
  marks.extra = marks.routes;
  if (const Field* f = map.Find("packs")) ReadPacks(*f, routes, marks, errors);
  if (const Field* f = map.Find("extra")) ReadExtras(*f, routes, marks, errors);
  // The rules on what was read, whatever else is wrong: every error at once.
  std::vector<size_t> file_index;
  for (const RouteMarks::Extra& e : marks.extras) {
    file_index.push_back(e.file_index);
  }
  internal::RouteOptionsCheck check =
      internal::CheckRouteOptions(routes, file_index);
  for (const Problem& problem : check.problems) {
    if (problem.field == Problem::Field::kExtraTemplate &&
        marks.extras[problem.index].template_reported) {
      continue;  // "" stands in for a template already reported
    }
    auto [mark, path] = Locate(problem, marks);
    (problem.warning ? warnings : errors)
        .Add(mark, absl::StrCat(path, ": ", problem.message));
  }
  return std::move(check.table);
}

}  // namespace mxlimit::config_internal
