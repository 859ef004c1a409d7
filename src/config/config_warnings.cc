#include "src/config/config_warnings.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"
#include "src/engine/room_locator.h"
#include "src/policy/route_glob.h"
#include "src/route/route_trie.h"
#include "src/util/quote.h"

namespace mxlimit::config_internal {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

// The `{name}` placeholders in `text`, in order.
std::vector<std::string_view> Placeholders(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t open = text.find('{'); open != std::string_view::npos;
       open = text.find('{', open + 1)) {
    const size_t close = text.find('}', open);
    if (close == std::string_view::npos) break;
    out.push_back(text.substr(open + 1, close - open - 1));
  }
  return out;
}

// Address ranges that a reverse proxy, load balancer or container network
// connects from, with what an operator calls them.
struct SpecialRange {
  const char* cidr;
  const char* what;
};
constexpr SpecialRange kSpecialRanges[] = {
    {"127.0.0.0/8", "loopback"},         {"::1/128", "loopback"},
    {"10.0.0.0/8", "private"},           {"172.16.0.0/12", "private"},
    {"192.168.0.0/16", "private"},       {"fc00::/7", "private"},
    {"100.64.0.0/10", "shared (CGNAT)"}, {"169.254.0.0/16", "link-local"},
    {"fe80::/10", "link-local"},
};

bool Overlap(const Cidr& a, const Cidr& b) {
  return a.Contains(b.base) || b.Contains(a.base);
}

}  // namespace

// What the warnings read of one table, each part built on first use (a file
// whose patterns need none of them pays for none).
struct RouteFacts::Facts {
  explicit Facts(const internal::MergedRouteTable& table);
  void BuildKeys();
  void BuildPlaceholders();
  void BuildGlobs();
  void BuildAll() {
    BuildKeys();
    BuildPlaceholders();
    BuildGlobs();
  }

  const internal::MergedRouteTable& table;
  std::string table_name;
  bool keys_built = false;
  absl::flat_hash_set<std::string> keys;
  bool placeholders_built = false;
  std::vector<std::string> placeholders;  // sorted
  bool globs_built = false;
  // Canonical globs of every route form; nullopt where RouteFormGlob refuses.
  std::vector<std::optional<std::string>> form_globs;
};

RouteFacts::Facts::Facts(const internal::MergedRouteTable& table)
    : table(table) {
  table_name = absl::StrCat("routes.packs: ",
                            absl::StrJoin(table.options().packs, ", "));
  if (!table.options().extra.empty()) {
    const size_t n = table.options().extra.size();
    absl::StrAppend(&table_name, "; ", n,
                    n == 1 ? " extra template" : " extra templates");
  }
}

void RouteFacts::Facts::BuildKeys() {
  if (keys_built) return;
  keys_built = true;
  // Every template and form the table serves, in canonical form (version
  // aliases folded), as policies compare them.
  const internal::RouteTrie& trie = table.trie();
  keys.reserve(trie.keys().size() + trie.forms().size());
  for (std::string_view key : trie.keys()) {
    keys.insert(internal::CanonicalPath(key));
  }
  for (const RouteForm& form : trie.forms()) {
    keys.insert(internal::CanonicalPath(form.pattern));
  }
}

void RouteFacts::Facts::BuildPlaceholders() {
  if (placeholders_built) return;
  placeholders_built = true;
  std::set<std::string, std::less<>> names;
  for (const RouteForm& form : table.trie().forms()) {
    for (std::string_view name : Placeholders(form.pattern)) {
      names.emplace(name);
    }
  }
  placeholders.assign(names.begin(), names.end());
}

void RouteFacts::Facts::BuildGlobs() {
  if (globs_built) return;
  globs_built = true;
  form_globs.reserve(table.trie().forms().size());
  for (const RouteForm& form : table.trie().forms()) {
    form_globs.push_back(internal::RouteFormGlob(form.pattern));
  }
}

RouteFacts::RouteFacts(const internal::MergedRouteTable* table)
    : table_(table) {}

RouteFacts::~RouteFacts() = default;

const RouteFacts::Facts& RouteFacts::facts(void (Facts::*build)()) {
  if (facts_ == nullptr) {
    if (table_ == nullptr) {
      // Most files use the default table: its facts never change.
      static const Facts* const kDefault = [] {
        auto* facts = new Facts(internal::DefaultRouteTable());
        facts->BuildAll();
        return facts;
      }();
      facts_ = kDefault;
    } else {
      owned_ = std::make_unique<Facts>(*table_);
      facts_ = owned_.get();
    }
  }
  if (owned_ != nullptr && build != nullptr) (owned_.get()->*build)();
  return *facts_;
}

bool RouteFacts::IsKey(std::string_view canonical_pattern) {
  return facts(&Facts::BuildKeys).keys.contains(ToAbsl(canonical_pattern));
}

bool RouteFacts::ReachesRoomRoute(std::string_view canonical_pattern) {
  if (canonical_pattern == kFallbackRouteKey) return false;
  const internal::RouteTrie& trie = facts(nullptr).table.trie();
  for (std::string_view key : trie.keys()) {
    if (!internal::RouteKeyHasRoom(key)) continue;
    if (internal::GlobMatch(canonical_pattern, internal::CanonicalPath(key))) {
      return true;
    }
  }
  return false;
}

const std::string& RouteFacts::table_name() {
  return facts(nullptr).table_name;
}

const std::vector<std::string>& RouteFacts::placeholders() {
  return facts(&Facts::BuildPlaceholders).placeholders;
}

bool RouteFacts::AnyRouteMayMatch(std::string_view canonical_pattern) {
  const std::vector<std::optional<std::string>>& globs =
      facts(&Facts::BuildGlobs).form_globs;
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::optional<std::string>& glob) {
                       return !glob.has_value() ||
                              internal::GlobsOverlap(canonical_pattern, *glob);
                     });
}

void WarnPattern(std::string_view path, const YAML::Mark& mark,
                 std::string_view pattern, RouteFacts& routes,
                 ConfigErrors& warnings) {
  if (pattern == kFallbackRouteKey) return;
  const std::string head =
      absl::StrCat(ToAbsl(path), ": ", QuoteForError(pattern), " ");
  if (std::string note = PatternCanonicalNote(pattern); !note.empty()) {
    warnings.Add(mark, absl::StrCat(head, note));
  }
  const std::string canonical = internal::CanonicalPath(pattern);
  bool unknown_placeholder = false;
  const std::vector<std::string_view> names = Placeholders(canonical);
  for (auto it = names.begin(); it != names.end(); ++it) {
    const std::string_view name = *it;
    if (std::find(names.begin(), it, name) != it) {
      // Route templates may not repeat a name (ParseTemplate): no key does.
      unknown_placeholder = true;
      warnings.Add(mark,
                   absl::StrCat(head, "repeats the placeholder {", ToAbsl(name),
                                "}, which no route template does, so it "
                                "matches only paths holding those very "
                                "bytes"));
      continue;
    }
    const std::vector<std::string>& known = routes.placeholders();
    if (std::binary_search(known.begin(), known.end(), name)) continue;
    unknown_placeholder = true;
    std::vector<std::string_view> candidates(known.begin(), known.end());
    std::string message =
        absl::StrCat(head, "holds the placeholder {", ToAbsl(name),
                     "}, which no route template uses, so it matches only "
                     "paths holding those very bytes");
    if (auto near = NearestWord(name, candidates)) {
      absl::StrAppend(&message, " (did you mean {", ToAbsl(*near), "}?)");
    }
    warnings.Add(mark, std::move(message));
  }
  // A template (placeholders, no '*') matches route keys only: a raw path
  // never holds "{roomId}". One the table lacks can never apply.
  // (Not again when a placeholder no route uses already said so.)
  if (!unknown_placeholder && canonical.find('{') != std::string::npos &&
      canonical.find('*') == std::string::npos && !routes.IsKey(canonical)) {
    warnings.Add(mark, absl::StrCat(head,
                                    "is not a route template of the active "
                                    "table (",
                                    routes.table_name(),
                                    "), so no request is keyed by it; "
                                    "add its pack or an extra template"));
  }
  if (canonical.size() > 1 && canonical.back() == '/' &&
      !routes.AnyRouteMayMatch(canonical)) {
    std::string message = absl::StrCat(
        head,
        "ends with '/', and no route has that trailing slash: such a path "
        "is an unknown route (the fallback)");
    const std::string_view bare =
        std::string_view(canonical).substr(0, canonical.size() - 1);
    if (routes.AnyRouteMayMatch(bare)) {
      absl::StrAppend(&message, "; did you mean ", QuoteForError(bare), "?");
    }
    warnings.Add(mark, std::move(message));
  }
}

void WarnExemptNetwork(std::string_view path, const YAML::Mark& mark,
                       const Cidr& network, ConfigErrors& warnings) {
  std::vector<std::string> covered;
  for (const SpecialRange& range : kSpecialRanges) {
    absl::StatusOr<Cidr> special = ParseCidr(range.cidr);
    if (!special.ok() || !Overlap(network, *special)) continue;
    covered.push_back(absl::StrCat(range.what, " (", range.cidr, ")"));
  }
  if (covered.empty()) return;
  warnings.Add(
      mark,
      absl::StrCat(ToAbsl(path), ": ", FormatCidr(network), " covers ",
                   absl::StrJoin(covered, ", "),
                   " addresses: a reverse proxy, load balancer or container "
                   "network connects from these, and if mxlimit sees its "
                   "address instead of the client's, every request it "
                   "forwards is exempt"));
}

void WarnCapacity(const Field& field, size_t capacity, size_t shards,
                  ConfigErrors& warnings) {
  if (capacity >= shards) return;
  warnings.Add(
      field.mark(),
      absl::StrCat(field.path, ": ", capacity, " is below the ", shards,
                   " shards a ShardedLimiter (mxlimitd) splits the table "
                   "over, so it would refuse this file: each shard needs at "
                   "least one bucket"));
}

void WarnCallerClock(const Field& field, ConfigErrors& warnings) {
  warnings.Add(field.mark(),
               absl::StrCat(field.path,
                            ": caller: every process times the shared buckets "
                            "with its own clock, so a machine whose clock runs "
                            "ahead gets extra requests; meant for replays and "
                            "tests on one machine (the default, store, uses "
                            "the store's clock)"));
}

void WarnApproximateSharing(const Field& field, const Policy& policy,
                            ConfigErrors& warnings) {
  if (policy.rate.kind() != Rate::Kind::kLimited) return;
  if (policy.rate.burst() >= kApproximateMinBurst) return;
  warnings.Add(
      field.mark(),
      absl::StrCat(field.path, ": approximate on a policy with burst ",
                   policy.rate.burst(),
                   ": each process admits up to a burst of its own between "
                   "syncs, so N processes may let through about N times the "
                   "limit; approximate is meant for high-volume catch-alls "
                   "(burst ",
                   kApproximateMinBurst,
                   " or more), see docs/shared-state.md; use exact here"));
}

std::vector<bool> WarnShadowedPolicies(const std::vector<PolicyShape>& policies,
                                       ConfigErrors& warnings) {
  std::vector<bool> warned(policies.size(), false);
  // What resolution compares, in a form where equal means interchangeable.
  using Key = std::tuple<std::set<std::string>, std::set<std::string>, Scope,
                         std::string, bool>;
  std::vector<std::pair<Key, const PolicyShape*>> seen;
  for (size_t i = 0; i < policies.size(); ++i) {
    const PolicyShape& shape = policies[i];
    const Policy& p = *shape.policy;
    if (p.name.empty() || p.match.empty()) continue;  // Already an error.
    std::set<std::string> patterns;
    for (const std::string& m : p.match) {
      patterns.insert(m == kFallbackRouteKey ? m : internal::CanonicalPath(m));
    }
    std::set<std::string> methods(p.methods.begin(), p.methods.end());
    Key key{std::move(patterns), std::move(methods), p.scope, p.layer,
            p.shadow_mode};
    auto earlier = std::find_if(seen.begin(), seen.end(),
                                [&](const auto& s) { return s.first == key; });
    if (earlier != seen.end()) {
      const PolicyShape& first = *earlier->second;
      warnings.Add(
          shape.mark,
          absl::StrCat(shape.path, ": policy ", QuoteForError(p.name),
                       " has the same match, methods, scope and layer as "
                       "policy ",
                       QuoteForError(first.policy->name), " (line ", first.line,
                       "), which wins every tie: this one can never apply"));
      warned[i] = true;
      continue;
    }
    seen.emplace_back(std::move(key), &shape);
  }
  return warned;
}

void WarnOutrankedPolicies(const std::vector<PolicyShape>& policies,
                           const std::vector<bool>& skip, bool builtins,
                           bool all_shadow,
                           const internal::MergedRouteTable* route_table,
                           ConfigErrors& warnings) {
  if (policies.empty()) return;
  const internal::RouteTrie& trie =
      (route_table != nullptr ? *route_table : internal::DefaultRouteTable())
          .trie();
  std::vector<Policy> operator_policies;
  operator_policies.reserve(policies.size());
  for (const PolicyShape& shape : policies) {
    operator_policies.push_back(*shape.policy);
  }
  absl::StatusOr<PolicySet> set = PolicySet::Compile(
      std::move(operator_policies), builtins, trie.keys(), all_shadow);
  if (!set.ok()) return;  // A set-level error, reported as one.
  std::optional<PreparedRouteForms> own_forms;
  if (route_table != nullptr) own_forms.emplace(trie.forms());
  static const PreparedRouteForms* const kDefaultForms =
      new PreparedRouteForms(internal::DefaultRouteTable().trie().forms());
  const PreparedRouteForms& forms =
      own_forms.has_value() ? *own_forms : *kDefaultForms;

  // Operator policies come first in the set, in file order.
  // `policy "name" (built-in)` or `(line N)`, with `more` inside.
  auto describe = [&](PolicyId id, std::string_view more = {}) {
    const Policy& p = set->policy(id);
    return absl::StrCat("policy ", QuoteForError(p.name), " (",
                        p.builtin ? std::string("built-in")
                                  : absl::StrCat("line ", policies[id].line),
                        more.empty() ? "" : ", ", ToAbsl(more), ")");
  };
  auto routes_text = [&](const std::vector<RouteId>& routes) {
    const RouteId first = routes.front();
    std::string text = first == kFallbackRouteId
                           ? std::string("unknown paths (<fallback>)")
                           : std::string(set->route_key(first));
    if (routes.size() > 1) {
      absl::StrAppend(&text, " and ", routes.size() - 1,
                      routes.size() == 2 ? " more route" : " more routes");
    }
    return text;
  };
  for (const OutrankedPolicy& o : set->Outranked(forms)) {
    if (skip[o.policy]) continue;
    const PolicyShape& shape = policies[o.policy];
    const std::string head = absl::StrCat(shape.path, ": policy ",
                                          QuoteForError(shape.policy->name));
    if (o.never_applies) {
      std::vector<std::string> winners;
      for (const OutrankedPolicy::Loss& loss : o.losses) {
        winners.push_back(describe(loss.by, RankReasonName(loss.reason)));
      }
      warnings.Add(
          shape.mark,
          absl::StrCat(
              head, " can never apply: ",
              winners.size() == 1
                  ? absl::StrCat(winners[0], " outranks it")
                  : absl::StrCat("one of ", absl::StrJoin(winners, ", "),
                                 " outranks it"),
              " on every request its patterns match, in the same "
              "layer and scope"));
      continue;
    }
    for (const OutrankedPolicy::Loss& loss : o.losses) {
      const bool every_method =
          loss.methods.size() == internal::kMethodClassCount;
      warnings.Add(
          shape.mark,
          absl::StrCat(head, " never applies to ",
                       every_method ? std::string("any method")
                                    : absl::StrJoin(loss.methods, ", "),
                       " on ", routes_text(loss.routes), ": ",
                       describe(loss.by),
                       " outranks it on every request there (",
                       ToAbsl(RankReasonName(loss.reason)),
                       "); to have it apply, give it a pattern that ranks "
                       "higher there or a layer of its own"));
    }
  }
}

}  // namespace mxlimit::config_internal
