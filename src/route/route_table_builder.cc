// The merge of route packs and extra templates into one table, and the
// checks on extra templates. See src/route/route_table_builder.h and the
// rules in src/route/route_packs.h.

#include "src/route/route_table_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/route/route_packs.h"
#include "src/route/route_template.h"
#include "src/util/quote.h"

namespace mxlimit::internal {
namespace {

using Field = RouteOptionsProblem::Field;

// The placeholder names of a parsed template, sorted: an alias must bind the
// same identifiers as the template whose key it shares.
std::vector<std::string_view> SortedPlaceholders(
    const std::vector<ParsedSegment>& segments) {
  std::vector<std::string_view> names;
  for (const ParsedSegment& s : segments) {
    if (s.placeholder) names.push_back(s.text);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// `text` quoted for a message: C-escaped, so no byte of the options can
// break a message's line or forge another; a template within the size limit
// is never cut (collision messages must name both templates whole).
std::string Quoted(std::string_view text) {
  if (text.size() > RouteOptions::kMaxTemplateBytes) return QuoteForError(text);
  return absl::StrCat("\"", absl::CHexEscape(ToAbsl(text)), "\"");
}

// A pattern already in the table, for collision messages.
struct ShapeOwner {
  std::string pattern;
  std::string_view key;
  std::string_view origin;  // "route", "form", "version spelling"
  std::string_view pack;    // a pack name, or "extra"
  bool prefix_alias = false;
  size_t extra_index = 0;  // when pack == "extra"
};

}  // namespace

std::string RouteOptionsProblem::Path() const {
  switch (field) {
    case Field::kRoutes:
      return "routes";
    case Field::kPacks:
      return "routes.packs";
    case Field::kPack:
      return absl::StrCat("routes.packs[", index, "]");
    case Field::kExtra:
      return "routes.extra";
    case Field::kExtraTemplate:
      return absl::StrCat("routes.extra[", index, "].template");
    case Field::kExtraAliasOf:
      return absl::StrCat("routes.extra[", index, "].alias_of");
  }
  return "routes";
}

// Merges and checks in one pass over the options; see Merge().
class RouteTableMerger {
 public:
  RouteTableMerger(const RouteOptions& routes,
                   std::vector<RouteOptionsProblem>& problems,
                   std::span<const size_t> shown_index = {})
      : routes_(routes), problems_(problems), shown_index_(shown_index) {}

  // The table, or null when some problem is an error.
  std::unique_ptr<MergedRouteTable> Merge();

 private:
  // One extra template that passed the per-entry checks.
  struct Extra {
    size_t index;
    std::vector<ParsedSegment> parsed;  // views into routes_.extra[index]
    std::string_view key;               // its own template, or alias_of's
    bool alias = false;
  };

  void Error(Field field, size_t index, std::string message) {
    problems_.push_back({field, index, false, std::move(message)});
    has_error_ = true;
  }
  void Warn(Field field, size_t index, std::string message) {
    problems_.push_back({field, index, true, std::move(message)});
  }

  void SelectPacks();
  void MergePacks();
  bool CheckExtraTemplate(size_t i, std::vector<ParsedSegment>& parsed);
  void CheckExtras();
  void CheckAliases();
  void CheckShapes();
  void Finish();
  void BuildTrie();

  // The index messages print for extra entry `i`.
  size_t Shown(size_t i) const {
    return i < shown_index_.size() ? shown_index_[i] : i;
  }
  std::string Describe(const ShapeOwner& owner) const;

  const RouteOptions& routes_;
  std::vector<RouteOptionsProblem>& problems_;
  std::span<const size_t> shown_index_;
  bool has_error_ = false;
  std::unique_ptr<MergedRouteTable> table_ =
      std::make_unique<MergedRouteTable>();
  std::vector<const RoutePack*> active_packs_;
  // Every active key (built-in or extra) -> its pack.
  absl::flat_hash_map<std::string_view, std::string_view> keys_;
  std::vector<Extra> extras_;
};

std::string RouteTableMerger::Describe(const ShapeOwner& owner) const {
  std::string text =
      absl::StrCat(ToAbsl(owner.origin), " ", Quoted(owner.pattern));
  if (owner.pattern != owner.key) {
    absl::StrAppend(&text, " (key ", Quoted(owner.key), ")");
  }
  if (owner.pack == "extra") {
    absl::StrAppend(&text, " of routes.extra[", Shown(owner.extra_index), "]");
  } else {
    absl::StrAppend(&text, " of pack ", ToAbsl(owner.pack));
  }
  return text;
}

void RouteTableMerger::SelectPacks() {
  std::span<const RoutePack> all = BuiltinRoutePacks();
  std::vector<bool> active(all.size(), false);
  auto index_of = [&](std::string_view name) -> size_t {
    for (size_t p = 0; p < all.size(); ++p) {
      if (all[p].name == name) return p;
    }
    return all.size();
  };
  if (routes_.packs.empty()) {
    for (std::string_view name : DefaultRoutePacks()) {
      active[index_of(name)] = true;
    }
  }
  for (size_t i = 0; i < routes_.packs.size(); ++i) {
    const std::string& name = routes_.packs[i];
    const size_t p = index_of(name);
    if (p == all.size()) {
      Error(Field::kPack, i,
            absl::StrCat(
                "unknown pack ", QuoteForError(name), ", expected one of ",
                absl::StrJoin(RoutePackNames(), ", ",
                              [](std::string* out, std::string_view s) {
                                out->append(s);
                              })));
    } else if (active[p]) {
      Error(Field::kPack, i,
            absl::StrCat("pack ", QuoteForError(name), " is listed twice"));
    }
    if (p != all.size()) active[p] = true;
  }
  for (size_t p = 0; p < all.size(); ++p) {
    if (active[p]) {
      active_packs_.push_back(&all[p]);
      table_->options_.packs.emplace_back(all[p].name);
    }
  }
}

// Templates in canonical pack order, each once (the first pack that lists
// it owns it); forms whose target is active; active packs' prefix aliases;
// every pack's may-be-empty names.
void RouteTableMerger::MergePacks() {
  MergedRouteTable& t = *table_;
  t.pack_of_.push_back("");  // the fallback
  for (const RoutePack* pack : active_packs_) {
    for (std::string_view key : pack->table.templates) {
      if (keys_.try_emplace(key, pack->name).second) {
        t.templates_.push_back(key);
        t.pack_of_.push_back(pack->name);
      }
    }
  }
  absl::flat_hash_set<std::pair<std::string_view, std::string_view>> seen;
  for (const RoutePack* pack : active_packs_) {
    for (const RouteFormRow& form : pack->table.forms) {
      if (keys_.contains(form.route_template) &&
          seen.emplace(form.form, form.route_template).second) {
        t.forms_.push_back(form);
      }
    }
    for (const PrefixAliasRow& alias : pack->table.prefix_aliases) {
      if (seen.emplace(alias.alias_prefix, alias.stable_prefix).second) {
        t.prefix_aliases_.push_back(alias);
      }
    }
  }
  for (const RoutePack& pack : BuiltinRoutePacks()) {
    for (std::string_view name : pack.table.may_be_empty) {
      if (std::find(t.may_be_empty_.begin(), t.may_be_empty_.end(), name) ==
          t.may_be_empty_.end()) {
        t.may_be_empty_.push_back(name);
      }
    }
  }
}

// The rules one template obeys on its own; true when it passed them.
bool RouteTableMerger::CheckExtraTemplate(size_t i,
                                          std::vector<ParsedSegment>& parsed) {
  const std::string& text = routes_.extra[i].route_template;
  if (text.size() > RouteOptions::kMaxTemplateBytes) {
    Error(Field::kExtraTemplate, i,
          absl::StrCat("got ", text.size(), " bytes, expected at most ",
                       RouteOptions::kMaxTemplateBytes));
    return false;
  }
  if (text.empty() || text[0] != '/') {
    Error(Field::kExtraTemplate, i,
          absl::StrCat(Quoted(text), " must start with '/'"));
    return false;
  }
  if (text.find_first_of("?#") != std::string::npos) {
    Error(Field::kExtraTemplate, i,
          absl::StrCat(Quoted(text),
                       " holds '?' or '#': a template is a path, without "
                       "query or fragment"));
    return false;
  }
  absl::Status status = ParseTemplate(text, &parsed);
  if (!status.ok()) {
    // ParseTemplate's message starts with the template; say it once.
    std::string_view why = FromAbsl(status.message());
    const std::string prefix = absl::StrCat("route template \"", text, "\": ");
    if (why.substr(0, prefix.size()) == prefix)
      why.remove_prefix(prefix.size());
    Error(Field::kExtraTemplate, i,
          absl::StrCat(Quoted(text), ": ", ToAbsl(why)));
    return false;
  }
  if (parsed.front().placeholder) {
    Error(Field::kExtraTemplate, i,
          absl::StrCat(Quoted(text),
                       ": the first segment must be a literal, not a "
                       "placeholder (it would match every path of its "
                       "length)"));
    return false;
  }
  return true;
}

// Per-entry checks, then the keys of the extras that are not aliases.
void RouteTableMerger::CheckExtras() {
  if (routes_.extra.size() > RouteOptions::kMaxExtraRoutes) {
    Error(Field::kExtra, 0,
          absl::StrCat("got ", routes_.extra.size(),
                       " templates, expected at most ",
                       RouteOptions::kMaxExtraRoutes));
    return;
  }
  absl::flat_hash_map<std::string_view, size_t> first_at;
  for (size_t i = 0; i < routes_.extra.size(); ++i) {
    const ExtraRoute& extra = routes_.extra[i];
    Extra checked{i, {}, extra.route_template, !extra.alias_of.empty()};
    if (!CheckExtraTemplate(i, checked.parsed)) continue;
    auto [it, first] = first_at.try_emplace(extra.route_template, i);
    if (!first) {
      Error(Field::kExtraTemplate, i,
            absl::StrCat(Quoted(extra.route_template),
                         " is listed twice (also routes.extra[",
                         Shown(it->second), "])"));
      continue;
    }
    if (!checked.alias) {
      auto known = keys_.find(extra.route_template);
      if (known != keys_.end()) {
        Warn(Field::kExtraTemplate, i,
             absl::StrCat(Quoted(extra.route_template),
                          " is already a template of pack ",
                          ToAbsl(known->second),
                          "; the built-in key serves it (remove this entry)"));
        continue;
      }
      keys_.emplace(extra.route_template, "extra");
    }
    extras_.push_back(std::move(checked));
  }
}

// `alias_of` names an active key (not another alias) with the same
// placeholders.
void RouteTableMerger::CheckAliases() {
  std::vector<ParsedSegment> target;
  std::erase_if(extras_, [&](Extra& extra) {
    if (!extra.alias) return false;
    const std::string& alias_of = routes_.extra[extra.index].alias_of;
    if (!keys_.contains(alias_of)) {
      Error(Field::kExtraAliasOf, extra.index,
            absl::StrCat(Quoted(alias_of),
                         " is not an active route template (of the packs ",
                         absl::StrJoin(table_->options_.packs, ", "),
                         " or another extra entry without alias_of)"));
      return true;
    }
    if (!ParseTemplate(alias_of, &target).ok() ||
        SortedPlaceholders(target) != SortedPlaceholders(extra.parsed)) {
      Error(Field::kExtraAliasOf, extra.index,
            absl::StrCat(Quoted(alias_of),
                         " has other placeholders than the template ",
                         Quoted(routes_.extra[extra.index].route_template),
                         ": an alias names the same identifiers"));
      return true;
    }
    extra.key = keys_.find(alias_of)->first;
    return false;
  });
}

// No extra pattern (or version spelling of it) may serve exactly the paths
// of another active one with a different key; ExpandRouteTable would either
// refuse the table without saying which entry is at fault or, for an
// explicit line over a version spelling, quietly let one win.
void RouteTableMerger::CheckShapes() {
  if (extras_.empty()) return;
  absl::flat_hash_map<std::string, ShapeOwner> shapes;
  std::vector<ParsedSegment> parsed;
  {
    absl::StatusOr<std::vector<ExpandedPattern>> builtin =
        ExpandRouteTable(table_->spec_);
    if (!builtin.ok()) {
      Error(Field::kPacks, 0, std::string(builtin.status().message()));
      return;
    }
    for (ExpandedPattern& p : *builtin) {
      if (!ParseTemplate(p.pattern, &parsed).ok()) continue;
      const bool alias = p.origin == ExpandedPattern::Origin::kPrefixAlias;
      ShapeOwner owner{std::move(p.pattern),
                       table_->templates_[p.id - 1],
                       alias ? "version spelling"
                       : p.origin == ExpandedPattern::Origin::kForm ? "form"
                                                                    : "route",
                       table_->pack_of_[p.id],
                       alias,
                       0};
      shapes.emplace(TemplateShape(parsed), std::move(owner));
    }
  }
  // Explicit lines first, then version spellings, as ExpandRouteTable. One
  // error per entry: its spellings collide wherever it does.
  absl::flat_hash_set<size_t> failed;
  for (const Extra& extra : extras_) {
    const std::string& text = routes_.extra[extra.index].route_template;
    ShapeOwner owner{text,    extra.key, extra.alias ? "alias" : "route",
                     "extra", false,     extra.index};
    auto [it, inserted] =
        shapes.try_emplace(TemplateShape(extra.parsed), owner);
    if (!inserted) {
      Error(Field::kExtraTemplate, extra.index,
            absl::StrCat(Quoted(text), " matches exactly the same paths as ",
                         Describe(it->second)));
      failed.insert(extra.index);
    }
  }
  for (const Extra& extra : extras_) {
    if (failed.contains(extra.index)) continue;
    const std::string& text = routes_.extra[extra.index].route_template;
    for (const PrefixAliasRow& alias : table_->prefix_aliases_) {
      std::string_view stable = alias.stable_prefix;
      if (text.size() <= stable.size() ||
          std::string_view(text).substr(0, stable.size()) != stable ||
          text[stable.size()] != '/') {
        continue;
      }
      std::string spelling =
          absl::StrCat(ToAbsl(alias.alias_prefix),
                       ToAbsl(std::string_view(text).substr(stable.size())));
      if (!ParseTemplate(spelling, &parsed).ok()) continue;
      ShapeOwner owner{spelling, extra.key, "version spelling",
                       "extra",  true,      extra.index};
      auto [it, inserted] = shapes.try_emplace(TemplateShape(parsed), owner);
      // A spelling yields to an explicit line, as built-in ones do.
      if (inserted || !it->second.prefix_alias || it->second.key == extra.key) {
        continue;
      }
      Error(Field::kExtraTemplate, extra.index,
            absl::StrCat(Quoted(text), " is also served as ", Quoted(spelling),
                         " (prefix alias ", ToAbsl(alias.alias_prefix),
                         "), which matches exactly the same paths as ",
                         Describe(it->second)));
      break;
    }
  }
}

void RouteTableMerger::Finish() {
  MergedRouteTable& t = *table_;
  // Extra keys by the caller's text -> the table's own copy, so that an
  // alias of an extra points into the table, not into the caller's options.
  absl::flat_hash_map<std::string_view, std::string_view> owned_key;
  for (const Extra& extra : extras_) {
    if (extra.alias) continue;
    const std::string& text =
        t.owned_.emplace_back(routes_.extra[extra.index].route_template);
    t.templates_.push_back(text);
    t.pack_of_.push_back("extra");
    owned_key.emplace(extra.key, text);
  }
  for (const Extra& extra : extras_) {
    if (!extra.alias) continue;
    const std::string& text =
        t.owned_.emplace_back(routes_.extra[extra.index].route_template);
    auto it = owned_key.find(extra.key);
    t.forms_.push_back({text, it != owned_key.end() ? it->second : extra.key});
  }
  t.options_.extra = routes_.extra;
  t.spec_ = RouteTableSpec{t.templates_, t.forms_, t.prefix_aliases_,
                           t.may_be_empty_};
}

void RouteTableMerger::BuildTrie() {
  MergedRouteTable& t = *table_;
  if (t.templates_.size() + 1 >= kSharedBucketRoute) {
    Error(
        Field::kExtra, 0,
        absl::StrCat("the table would hold ", t.templates_.size() + 1,
                     " route keys, expected fewer than ", kSharedBucketRoute));
    return;
  }
  absl::StatusOr<RouteTrie> trie = RouteTrie::Build(t.spec_);
  if (trie.ok()) {
    t.trie_ = std::make_unique<const RouteTrie>(*std::move(trie));
    return;
  }
  // Pin the error on the extra entry whose template it quotes, if any.
  const std::string message(trie.status().message());
  for (const Extra& extra : extras_) {
    const std::string& text = routes_.extra[extra.index].route_template;
    if (message.find(absl::StrCat("\"", text, "\"")) != std::string::npos) {
      Error(Field::kExtraTemplate, extra.index, message);
      return;
    }
  }
  Error(extras_.empty() ? Field::kPacks : Field::kExtra, 0, message);
}

std::unique_ptr<MergedRouteTable> RouteTableMerger::Merge() {
  SelectPacks();
  MergePacks();
  table_->spec_ =
      RouteTableSpec{table_->templates_, table_->forms_,
                     table_->prefix_aliases_, table_->may_be_empty_};
  CheckExtras();
  CheckAliases();
  CheckShapes();
  if (has_error_) return nullptr;
  Finish();
  BuildTrie();
  if (has_error_) return nullptr;
  return std::move(table_);
}

bool IsDefaultRouteOptions(const RouteOptions& routes) {
  if (!routes.extra.empty()) return false;
  const std::span<const std::string_view> defaults = DefaultRoutePackNames();
  return routes.packs.empty() ||
         std::equal(routes.packs.begin(), routes.packs.end(), defaults.begin(),
                    defaults.end());
}

std::vector<RouteOptionsProblem> FindRouteOptionsProblems(
    const RouteOptions& routes, std::span<const size_t> shown_index) {
  std::vector<RouteOptionsProblem> problems;
  // The default table has no problems: DefaultRouteTable() would abort.
  if (IsDefaultRouteOptions(routes)) return problems;
  RouteTableMerger(routes, problems, shown_index).Merge();
  return problems;
}

absl::StatusOr<std::unique_ptr<const MergedRouteTable>> MergeRouteTable(
    const RouteOptions& routes) {
  std::vector<RouteOptionsProblem> problems;
  std::unique_ptr<MergedRouteTable> table =
      RouteTableMerger(routes, problems).Merge();
  if (table != nullptr) return table;
  std::string message;
  for (const RouteOptionsProblem& problem : problems) {
    if (problem.warning) continue;
    absl::StrAppend(&message, message.empty() ? "" : "\n", problem.Path(), ": ",
                    problem.message);
  }
  return absl::InvalidArgumentError(message);
}

const MergedRouteTable& DefaultRouteTable() {
  static const MergedRouteTable* const kTable = [] {
    absl::StatusOr<std::unique_ptr<const MergedRouteTable>> table =
        MergeRouteTable(RouteOptions{});
    if (!table.ok()) {
      // The packs are compiled in and route_table_test builds them, so this
      // is a broken build, not a runtime condition a caller could handle.
      std::fprintf(stderr, "mxlimit: built-in route table is invalid: %s\n",
                   std::string(table.status().message()).c_str());
      std::abort();
    }
    return table->release();
  }();
  return *kTable;
}

}  // namespace mxlimit::internal
