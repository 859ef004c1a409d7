// The merge of route packs and extra templates into one table, and the
// checks on extra templates. See src/route/route_table_builder.h and the
// rules in src/route/route_packs.h.

#include "src/route/route_table_builder.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <span>
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

// One explicit line of a table: a template or a form, and its key's id.
struct ExpansionLine {
  std::string_view text;
  RouteId id;
  ExpandedPattern::Origin origin;
};

// The expansion of one set of active packs (templates, forms and version
// spellings): the list, and its patterns by shape, which every extra
// template is checked against.
struct PackShapes {
  absl::Status status;  // ExpandRouteTable's: not OK only in a broken build
  std::vector<ExpandedPattern> patterns;
  ExpansionRuns runs;
  absl::flat_hash_map<std::string, ShapeOwner> by_shape;
  absl::flat_hash_map<std::string_view, RouteId> id_of;  // by template
};

std::unique_ptr<const PackShapes> ExpandPackShapes(
    const RouteTableSpec& spec, std::span<const std::string_view> pack_of) {
  auto out = std::make_unique<PackShapes>();
  absl::StatusOr<std::vector<ExpandedPattern>> expanded =
      ExpandRouteTable(spec, &out->runs);
  if (!expanded.ok()) {
    out->status = expanded.status();
    return out;
  }
  out->patterns = *std::move(expanded);
  for (size_t i = 0; i < spec.templates.size(); ++i) {
    out->id_of.emplace(spec.templates[i], static_cast<RouteId>(i + 1));
  }
  std::vector<ParsedSegment> parsed;
  for (const ExpandedPattern& p : out->patterns) {
    if (!ParseTemplate(p.pattern, &parsed).ok()) continue;
    const bool alias = p.origin == ExpandedPattern::Origin::kPrefixAlias;
    ShapeOwner owner{p.pattern,
                     spec.templates[p.id - 1],
                     alias ? "version spelling"
                     : p.origin == ExpandedPattern::Origin::kForm ? "form"
                                                                  : "route",
                     pack_of[p.id],
                     alias,
                     0};
    out->by_shape.emplace(TemplateShape(parsed), std::move(owner));
  }
  return out;
}

// The shapes of the packs in `pack_set` (bit p: BuiltinRoutePacks()[p]),
// whose table `spec` is. They depend on nothing else, and expanding the
// packs costs more than all the checks on a few extra templates, so each set
// is expanded once per process: at most one entry per subset of the packs,
// in practice the one or two sets a process's configs name. The entries
// point only into the static pack data.
const PackShapes& BuiltinPackShapes(uint32_t pack_set,
                                    const RouteTableSpec& spec,
                                    std::span<const std::string_view> pack_of) {
  static std::mutex mu;
  static auto* const cache =
      new absl::flat_hash_map<uint32_t, std::unique_ptr<const PackShapes>>;
  const std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<const PackShapes>& entry = (*cache)[pack_set];
  if (entry == nullptr) entry = ExpandPackShapes(spec, pack_of);
  return *entry;
}

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
    // The template as the table holds it: as written, or its stable
    // spelling (FoldVersion). Points into routes_ or folded_.
    std::string_view text;
    std::vector<ParsedSegment> parsed;  // views into `text`
    std::string_view key;               // `text`, or alias_of's key
    bool alias = false;
  };
  // An alias whose own template was refused (invalid, or listed twice): its
  // alias_of is still checked, so that one pass names both problems.
  struct RefusedAlias {
    size_t index;
    std::vector<ParsedSegment> parsed;  // empty when the template is invalid
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
  // `text` in its stable spelling when it starts with a version alias
  // prefix that stands for one stable prefix, else `text` itself.
  std::string_view FoldVersion(std::string_view text);
  void CheckExtras();
  void CheckAliases();
  void CheckShapes();
  void Finish();
  void BuildTrie();
  // The active packs alone, as the table holds them before the extras.
  RouteTableSpec PackSpec() const;
  std::optional<std::vector<ExpandedPattern>> ExpandWithPacks() const;
  // The extras' explicit lines as the table lists them; false when an alias
  // names no key.
  bool ExtraLines(const PackShapes& packs,
                  std::vector<ExpansionLine>* templates,
                  std::vector<ExpansionLine>* forms) const;

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
  uint32_t pack_set_ = 0;  // bit p: BuiltinRoutePacks()[p] is active
  // The packs' lines in the table, before the extras'.
  size_t pack_templates_ = 0;
  size_t pack_forms_ = 0;
  // Every active key (built-in or extra) -> its pack.
  absl::flat_hash_map<std::string_view, std::string_view> keys_;
  std::vector<Extra> extras_;
  std::vector<RefusedAlias> refused_aliases_;
  std::deque<std::string> folded_;  // FoldVersion's texts; never move
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
      pack_set_ |= uint32_t{1} << p;
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

// The prefix alias rows say which spellings stand for which stable prefix:
// `/_matrix/client/r0` only for `/_matrix/client/v3`, while
// `/_matrix/client/unstable` spells both v3 and v1 (and is where unstable
// endpoints live under their own keys), so it is left as written. The
// longest alias prefix decides (`.../unstable/org.matrix.msc3916/media` is
// `/_matrix/client/v1/media`).
std::string_view RouteTableMerger::FoldVersion(std::string_view text) {
  size_t longest = 0;
  std::string_view stable;
  bool one = true;
  for (const PrefixAliasRow& row : table_->prefix_aliases_) {
    const std::string_view alias = row.alias_prefix;
    if (text.size() <= alias.size() || !text.starts_with(alias) ||
        text[alias.size()] != '/' || alias.size() < longest) {
      continue;
    }
    if (alias.size() > longest) {
      longest = alias.size();
      stable = row.stable_prefix;
      one = true;
    } else if (row.stable_prefix != stable) {
      one = false;
    }
  }
  if (longest == 0 || !one) return text;
  return folded_.emplace_back(
      absl::StrCat(ToAbsl(stable), ToAbsl(text.substr(longest))));
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
    Extra checked{i, extra.route_template, {}, {}, !extra.alias_of.empty()};
    if (!CheckExtraTemplate(i, checked.parsed)) {
      if (checked.alias) refused_aliases_.push_back({i, {}});
      continue;
    }
    auto [it, first] = first_at.try_emplace(extra.route_template, i);
    if (!first) {
      Error(Field::kExtraTemplate, i,
            absl::StrCat(Quoted(extra.route_template),
                         " is listed twice (also routes.extra[",
                         Shown(it->second), "])"));
      if (checked.alias) {
        refused_aliases_.push_back({i, std::move(checked.parsed)});
      }
      continue;
    }
    // A template under r0 is the endpoint its v3 spelling names: keyed and
    // version-spelled as that, like every built-in under v3.
    std::string read_as;
    if (std::string_view folded = FoldVersion(checked.text);
        folded != checked.text) {
      read_as = absl::StrCat(" (read as ", Quoted(folded), ")");
      checked.text = folded;
      if (absl::Status status = ParseTemplate(checked.text, &checked.parsed);
          !status.ok()) {
        Error(Field::kExtraTemplate, i,
              absl::StrCat(Quoted(extra.route_template), read_as, ": ",
                           status.message()));
        continue;
      }
    }
    checked.key = checked.text;
    if (!checked.alias) {
      auto known = keys_.find(checked.text);
      if (known != keys_.end() && known->second != "extra") {
        Warn(Field::kExtraTemplate, i,
             absl::StrCat(Quoted(extra.route_template), read_as,
                          " is already a template of pack ",
                          ToAbsl(known->second),
                          "; the built-in key serves it (remove this entry)"));
        continue;
      }
      // An extra that another one already keys (spelled differently) is
      // left to CheckShapes, which names both.
      keys_.emplace(checked.text, "extra");
    }
    if (!read_as.empty()) {
      Warn(Field::kExtraTemplate, i,
           absl::StrCat(Quoted(extra.route_template), " is read as ",
                        Quoted(checked.text),
                        ": a version spelling is keyed as its stable form and "
                        "served under every spelling of it"));
    }
    extras_.push_back(std::move(checked));
  }
}

// `alias_of` names an active key (not another alias) with the same
// placeholders.
void RouteTableMerger::CheckAliases() {
  std::vector<ParsedSegment> target;
  // The key `alias_of` of entry `index` names (its stable spelling, as
  // FoldVersion reads it), or empty after an error when that is not an
  // active key with the placeholders of `parsed` (not compared when null).
  auto check = [&](size_t index, const std::vector<ParsedSegment>* parsed) {
    const std::string& written = routes_.extra[index].alias_of;
    const std::string_view alias_of = FoldVersion(written);
    if (!keys_.contains(alias_of)) {
      Error(Field::kExtraAliasOf, index,
            absl::StrCat(Quoted(written),
                         " is not an active route template (of the packs ",
                         absl::StrJoin(table_->options_.packs, ", "),
                         " or another extra entry without alias_of)"));
      return std::string_view();
    }
    if (parsed != nullptr &&
        (!ParseTemplate(alias_of, &target).ok() ||
         SortedPlaceholders(target) != SortedPlaceholders(*parsed))) {
      Error(Field::kExtraAliasOf, index,
            absl::StrCat(Quoted(written),
                         " has other placeholders than the template ",
                         Quoted(routes_.extra[index].route_template),
                         ": an alias names the same identifiers"));
      return std::string_view();
    }
    return keys_.find(alias_of)->first;
  };
  for (const RefusedAlias& refused : refused_aliases_) {
    check(refused.index, refused.parsed.empty() ? nullptr : &refused.parsed);
  }
  std::erase_if(extras_, [&](Extra& extra) {
    if (!extra.alias) return false;
    extra.key = check(extra.index, &extra.parsed);
    return extra.key.empty();
  });
}

// No extra pattern (or version spelling of it) may serve exactly the paths
// of another active one with a different key; ExpandRouteTable would either
// refuse the table without saying which entry is at fault or, for an
// explicit line over a version spelling, quietly let one win.
void RouteTableMerger::CheckShapes() {
  if (extras_.empty()) return;
  const PackShapes& builtin =
      BuiltinPackShapes(pack_set_, PackSpec(), table_->pack_of_);
  if (!builtin.status.ok()) {
    Error(Field::kPacks, 0, std::string(builtin.status.message()));
    return;
  }
  // The extras' shapes, over the packs' (which come first, as in the table).
  absl::flat_hash_map<std::string, ShapeOwner> extra_shapes;
  // Adds `owner` unless its shape is taken; returns the owner that holds it.
  auto claim =
      [&](const std::string& shape,
          const ShapeOwner& owner) -> std::pair<const ShapeOwner*, bool> {
    if (auto it = builtin.by_shape.find(shape); it != builtin.by_shape.end()) {
      return {&it->second, false};
    }
    auto [it, inserted] = extra_shapes.try_emplace(shape, owner);
    return {&it->second, inserted};
  };
  std::vector<ParsedSegment> parsed;
  // Explicit lines first, then version spellings, as ExpandRouteTable. One
  // error per entry: its spellings collide wherever it does.
  absl::flat_hash_set<size_t> failed;
  for (const Extra& extra : extras_) {
    const std::string& written = routes_.extra[extra.index].route_template;
    ShapeOwner owner{written, extra.key, extra.alias ? "alias" : "route",
                     "extra", false,     extra.index};
    auto [holder, inserted] = claim(TemplateShape(extra.parsed), owner);
    if (!inserted) {
      Error(Field::kExtraTemplate, extra.index,
            absl::StrCat(Quoted(written), " matches exactly the same paths as ",
                         Describe(*holder)));
      failed.insert(extra.index);
    }
  }
  for (const Extra& extra : extras_) {
    if (failed.contains(extra.index)) continue;
    const std::string_view text = extra.text;
    const std::string& written = routes_.extra[extra.index].route_template;
    for (const PrefixAliasRow& alias : table_->prefix_aliases_) {
      std::string_view stable = alias.stable_prefix;
      if (text.size() <= stable.size() ||
          text.substr(0, stable.size()) != stable ||
          text[stable.size()] != '/') {
        continue;
      }
      std::string spelling = absl::StrCat(ToAbsl(alias.alias_prefix),
                                          ToAbsl(text.substr(stable.size())));
      if (!ParseTemplate(spelling, &parsed).ok()) continue;
      ShapeOwner owner{spelling, extra.key, "version spelling",
                       "extra",  true,      extra.index};
      auto [holder, inserted] = claim(TemplateShape(parsed), owner);
      // A spelling yields to an explicit built-in line, as built-in ones
      // do. Another extra entry spelled that way is the operator's own
      // second key for one endpoint (r0 and v3 of one path): refused.
      if (inserted || holder->key == extra.key ||
          (!holder->prefix_alias && holder->pack != "extra")) {
        continue;
      }
      Error(
          Field::kExtraTemplate, extra.index,
          absl::StrCat(Quoted(written), " is also served as ", Quoted(spelling),
                       " (prefix alias ", ToAbsl(alias.alias_prefix),
                       "), which matches exactly the same paths as ",
                       Describe(*holder)));
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
    const std::string& text = t.owned_.emplace_back(extra.text);
    t.templates_.push_back(text);
    t.pack_of_.push_back("extra");
    owned_key.emplace(extra.key, text);
  }
  for (const Extra& extra : extras_) {
    if (!extra.alias) continue;
    const std::string& text = t.owned_.emplace_back(extra.text);
    auto it = owned_key.find(extra.key);
    t.forms_.push_back({text, it != owned_key.end() ? it->second : extra.key});
  }
  t.options_.extra = routes_.extra;
  t.spec_ = RouteTableSpec{t.templates_, t.forms_, t.prefix_aliases_,
                           t.may_be_empty_};
}

RouteTableSpec RouteTableMerger::PackSpec() const {
  const MergedRouteTable& t = *table_;
  return RouteTableSpec{
      std::span<const std::string_view>(t.templates_).first(pack_templates_),
      std::span<const RouteFormRow>(t.forms_).first(pack_forms_),
      t.prefix_aliases_, t.may_be_empty_};
}

bool RouteTableMerger::ExtraLines(const PackShapes& packs,
                                  std::vector<ExpansionLine>* templates,
                                  std::vector<ExpansionLine>* forms) const {
  const MergedRouteTable& t = *table_;
  for (size_t i = pack_templates_; i < t.templates_.size(); ++i) {
    templates->push_back({t.templates_[i], static_cast<RouteId>(i + 1),
                          ExpandedPattern::Origin::kTemplate});
  }
  for (size_t i = pack_forms_; i < t.forms_.size(); ++i) {
    const RouteFormRow& form = t.forms_[i];
    RouteId id = kFallbackRouteId;
    if (auto it = packs.id_of.find(form.route_template);
        it != packs.id_of.end()) {
      id = it->second;
    }
    for (const ExpansionLine& line : *templates) {
      if (line.text == form.route_template) id = line.id;
    }
    if (id == kFallbackRouteId) return false;
    forms->push_back({form.form, id, ExpandedPattern::Origin::kForm});
  }
  return true;
}

// ExpandRouteTable(table_->spec_), from the packs' expansion (cached) and
// the extras alone: the table lists the packs' templates, the extra ones,
// the packs' forms, the alias ones, then the version spellings of each line
// in that order. CheckShapes has refused every extra pattern that shares a
// shape with another line; a spelling that does is skipped as
// ExpandRouteTable skips it. Nullopt for anything else (an extra spelling
// over another key's, one that does not parse): the caller then expands
// the whole table, which reports it.
std::optional<std::vector<ExpandedPattern>> RouteTableMerger::ExpandWithPacks()
    const {
  using Origin = ExpandedPattern::Origin;
  const MergedRouteTable& t = *table_;
  const PackShapes& packs =
      BuiltinPackShapes(pack_set_, PackSpec(), t.pack_of_);
  if (!packs.status.ok() || packs.runs.templates != pack_templates_ ||
      packs.runs.forms != pack_forms_) {
    return std::nullopt;
  }
  using Line = ExpansionLine;
  std::vector<Line> templates;
  std::vector<Line> forms;
  if (!ExtraLines(packs, &templates, &forms)) return std::nullopt;
  // The extras' shapes: id, and whether a spelling holds it.
  absl::flat_hash_map<std::string, std::pair<RouteId, bool>> extra_shapes;
  std::vector<ParsedSegment> parsed;
  std::vector<ExpandedPattern> out;
  // Adds `line`'s pattern (or skips it as a spelling that yields); false
  // where ExpandRouteTable would have refused the table.
  auto add = [&](std::string pattern, const Line& line, Origin origin) {
    if (!ParseTemplate(pattern, &parsed).ok()) return false;
    std::string shape = TemplateShape(parsed);
    const bool spelling = origin == Origin::kPrefixAlias;
    if (auto it = packs.by_shape.find(shape); it != packs.by_shape.end()) {
      // The packs' explicit lines and template spellings come first; their
      // form spellings later, but then an extra template would collide
      // with a spelling of another key, which CheckShapes refused.
      return spelling && (!it->second.prefix_alias ||
                          it->second.key == t.templates_[line.id - 1]);
    }
    auto [it, inserted] =
        extra_shapes.try_emplace(std::move(shape), line.id, spelling);
    if (!inserted) {
      return spelling && (!it->second.second || it->second.first == line.id);
    }
    out.push_back({std::move(pattern), line.id, origin});
    return true;
  };
  auto spell = [&](const std::vector<Line>& lines) {
    for (const Line& line : lines) {
      for (const PrefixAliasRow& alias : t.prefix_aliases_) {
        const std::string_view stable = alias.stable_prefix;
        if (line.text.size() <= stable.size() ||
            line.text.substr(0, stable.size()) != stable ||
            line.text[stable.size()] != '/') {
          continue;
        }
        std::string aliased(alias.alias_prefix);
        aliased.append(line.text.substr(stable.size()));
        if (!add(std::move(aliased), line, Origin::kPrefixAlias)) return false;
      }
    }
    return true;
  };
  auto copy = [&](size_t begin, size_t end) {
    out.insert(out.end(),
               packs.patterns.begin() + static_cast<std::ptrdiff_t>(begin),
               packs.patterns.begin() + static_cast<std::ptrdiff_t>(end));
  };
  const size_t spellings = pack_templates_ + pack_forms_;
  const size_t form_spellings = spellings + packs.runs.template_spellings;
  out.reserve(packs.patterns.size() + (templates.size() + forms.size()) *
                                          (1 + t.prefix_aliases_.size()));
  copy(0, pack_templates_);
  for (const Line& line : templates) {
    if (!add(std::string(line.text), line, line.origin)) return std::nullopt;
  }
  copy(pack_templates_, spellings);
  for (const Line& line : forms) {
    if (!add(std::string(line.text), line, line.origin)) return std::nullopt;
  }
  copy(spellings, form_spellings);
  if (!spell(templates)) return std::nullopt;
  copy(form_spellings, packs.patterns.size());
  if (!spell(forms)) return std::nullopt;
  return out;
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
  // The default table is built once: it gains nothing from the packs' cache.
  std::optional<std::vector<ExpandedPattern>> expanded;
  if (!IsDefaultRouteOptions(routes_)) expanded = ExpandWithPacks();
  absl::StatusOr<RouteTrie> trie =
      expanded.has_value() ? RouteTrie::Build(t.spec_, *std::move(expanded))
                           : RouteTrie::Build(t.spec_);
  if (trie.ok()) {
    t.trie_ = std::make_unique<const RouteTrie>(*std::move(trie));
    return;
  }
  // Pin the error on the extra entry whose template it quotes, if any.
  const std::string message(trie.status().message());
  for (const Extra& extra : extras_) {
    if (message.find(absl::StrCat("\"", ToAbsl(extra.text), "\"")) !=
        std::string::npos) {
      Error(Field::kExtraTemplate, extra.index, message);
      return;
    }
  }
  Error(extras_.empty() ? Field::kPacks : Field::kExtra, 0, message);
}

std::unique_ptr<MergedRouteTable> RouteTableMerger::Merge() {
  SelectPacks();
  MergePacks();
  pack_templates_ = table_->templates_.size();
  pack_forms_ = table_->forms_.size();
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

RouteOptionsCheck CheckRouteOptions(const RouteOptions& routes,
                                    std::span<const size_t> shown_index) {
  RouteOptionsCheck check;
  if (IsDefaultRouteOptions(routes)) return check;
  check.table = RouteTableMerger(routes, check.problems, shown_index).Merge();
  return check;
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
