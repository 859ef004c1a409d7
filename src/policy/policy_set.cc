// PolicySet: compilation (validation, ranks, per-route and raw-path lookup
// structures). Per-request resolution is in policy_resolve.cc, the
// explaining scan in policy_explain.cc.

#include "mxlimit/policy_set.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/decision.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/prefix_trie.h"
#include "src/engine/room_locator.h"
#include "src/policy/idle_checks.h"
#include "src/policy/policy_ranks.h"
#include "src/policy/route_glob.h"
#include "src/util/query.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace {

using internal::Bit;
using internal::CanonicalCursor;
using internal::CanonicalPattern;
using internal::ClassifyMethod;
using internal::GlobMatch;
using internal::GlobMatchCanonical;
using internal::MethodClass;
using internal::MethodMask;
using internal::PatternKind;
using internal::PatternShape;
using internal::QuoteForError;

using internal::RouteKeyHasRoom;
using internal::ShapeOf;
using internal::TierOf;
using internal::ToAbsl;

MethodMask MaskOf(const Policy& p) {
  if (p.methods.empty()) return internal::kAllMethods;
  MethodMask mask = 0;
  for (const std::string& m : p.methods) mask |= Bit(ClassifyMethod(m));
  return mask;
}

// The order (1-based rank) of entries_[index].
uint16_t OrderOf(size_t index) { return static_cast<uint16_t>(index + 1); }

// Resolution keeps one lane per (layer, scope, mode) group in a 32-bit set:
// five scopes in eight layers could need more.
// What, beside layer, scope and mode, puts a policy in its own group: its
// kind (rate or in flight) and its query conditions, as sorted names.
struct GroupVariant {
  bool concurrency = false;
  std::vector<std::string> absent;
  std::vector<std::string> present;
  friend bool operator==(const GroupVariant&, const GroupVariant&) = default;
};

GroupVariant VariantOf(const Policy& p);

// The distinct variants of a set's policies in order of first appearance,
// each policy's, and each variant's query conditions: an index into
// `conditions` + 1 (0: none).
struct Variants {
  std::vector<GroupVariant> list;
  std::vector<size_t> of_policy;
  std::vector<uint8_t> condition;
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>>
      conditions;
};

Variants CollectVariants(std::span<const Policy> policies) {
  Variants out;
  for (const Policy& p : policies) {
    GroupVariant v = VariantOf(p);
    auto it = std::find(out.list.begin(), out.list.end(), v);
    out.of_policy.push_back(static_cast<size_t>(it - out.list.begin()));
    if (it != out.list.end()) continue;
    uint8_t condition = 0;
    if (!v.absent.empty() || !v.present.empty()) {
      const auto pair = std::make_pair(v.absent, v.present);
      auto c = std::find(out.conditions.begin(), out.conditions.end(), pair);
      condition = static_cast<uint8_t>(c - out.conditions.begin() + 1);
      if (c == out.conditions.end()) out.conditions.push_back(pair);
    }
    out.condition.push_back(condition);
    out.list.push_back(std::move(v));
  }
  return out;
}

GroupVariant VariantOf(const Policy& p) {
  GroupVariant v{p.concurrency.has_value(), p.query_absent, p.query_present};
  for (std::vector<std::string>* names : {&v.absent, &v.present}) {
    std::sort(names->begin(), names->end());
    names->erase(std::unique(names->begin(), names->end()), names->end());
  }
  return v;
}

// A room-scope policy keys by the route's room placeholder: each of its
// patterns must reach a route that has one.
void AddRoomPatternProblems(std::span<const Policy> operator_policies,
                            std::span<const std::string_view> route_keys,
                            std::vector<std::string>& problems) {
  std::vector<std::string> room_keys;
  for (const std::string_view key : route_keys) {
    if (RouteKeyHasRoom(key)) room_keys.push_back(CanonicalPattern(key));
  }
  for (const Policy& p : operator_policies) {
    if (p.scope != Scope::kRoom) continue;
    for (const std::string& pattern : p.match) {
      const std::string canonical = CanonicalPattern(pattern);
      const bool reaches = std::any_of(
          room_keys.begin(), room_keys.end(), [&](const std::string& key) {
            return canonical != kFallbackRouteKey && GlobMatch(canonical, key);
          });
      if (reaches) continue;
      problems.push_back(absl::StrCat(
          "policy ", QuoteForError(p.name),
          p.source_line > 0 ? absl::StrCat(" (line ", p.source_line, ")") : "",
          ": match: got ", QuoteForError(pattern),
          ", but a room-scope policy applies only to routes with a {roomId} "
          "or {roomIdOrAlias} placeholder, and this pattern matches none"));
    }
  }
}

}  // namespace

std::optional<GroupOverflow> FindGroupOverflow(
    std::span<const Policy> operator_policies, bool include_builtins,
    bool all_shadow) {
  using Group = std::tuple<std::string_view, Scope, bool, GroupVariant>;
  std::vector<Group> groups;
  size_t in_flight = 0;
  // Whether `p` opens a group; counts it.
  auto add = [&](const Policy& p) {
    Group g{p.layer, p.scope, p.shadow_mode || all_shadow, VariantOf(p)};
    if (std::find(groups.begin(), groups.end(), g) != groups.end()) {
      return false;
    }
    groups.push_back(std::move(g));
    in_flight += p.concurrency.has_value() ? 1 : 0;
    return true;
  };
  static const std::vector<Policy>* const kBuiltins =
      new std::vector<Policy>(BuiltinPolicies());
  if (include_builtins) {
    for (const Policy& b : *kBuiltins) {
      const bool replaced =
          std::any_of(operator_policies.begin(), operator_policies.end(),
                      [&](const Policy& p) { return p.name == b.name; });
      if (!replaced) add(b);
    }
  }
  for (size_t i = 0; i < operator_policies.size(); ++i) {
    const Policy& p = operator_policies[i];
    if (!add(p)) continue;
    if (p.concurrency.has_value() && in_flight > kMaxLeases) {
      return GroupOverflow{
          i, "concurrency",
          absl::StrCat("in-flight group ", in_flight,
                       " (layer, scope, mode and query conditions) of a set "
                       "that holds at most ",
                       kMaxLeases,
                       ", built-ins included (a request holds one lease per "
                       "group); give it the layer, scope and conditions of "
                       "another in-flight policy")};
    }
    if (groups.size() > kMaxResolved) {
      return GroupOverflow{
          i, "layer",
          absl::StrCat("group ", groups.size(),
                       " (layer, scope, mode, kind and query conditions) of a "
                       "set that holds at most ",
                       kMaxResolved,
                       ", built-ins included; put policies of one scope in "
                       "fewer layers")};
    }
  }
  return std::nullopt;
}

PreparedRouteForms::PreparedRouteForms(std::span<const RouteForm> forms) {
  for (const RouteForm& form : forms) {
    if (form.id >= by_route_.size()) {
      by_route_.resize(form.id + 1);
      refused_.resize(form.id + 1, false);
    }
    std::optional<std::string> glob = internal::RouteFormGlob(form.pattern);
    if (glob.has_value()) {
      const size_t head_size = internal::FormGlobHead(*glob).size();
      by_route_[form.id].push_back(Glob{*std::move(glob), head_size});
    } else {
      refused_[form.id] = true;
    }
  }
  for (std::vector<Glob>& globs : by_route_) {
    // Version aliases of one form canonicalize to one glob.
    std::sort(globs.begin(), globs.end(),
              [](const Glob& a, const Glob& b) { return a.text < b.text; });
    globs.erase(std::unique(globs.begin(), globs.end()), globs.end());
  }
}

absl::StatusOr<PolicySet> PolicySet::Compile(
    std::vector<Policy> operator_policies, bool include_builtins,
    std::span<const std::string_view> route_keys, bool all_shadow,
    std::span<const RouteForm> route_forms) {
  // The default table is static, so its forms (every engine's and tool's
  // with the default routes, reloads included) are prepared once.
  static const std::span<const RouteForm> kDefaultForms =
      RouteNormalizer().forms();
  if (route_forms.data() == kDefaultForms.data() &&
      route_forms.size() == kDefaultForms.size()) {
    static const PreparedRouteForms* const kDefaultPrepared =
        new PreparedRouteForms(kDefaultForms);
    return Compile(std::move(operator_policies), include_builtins, route_keys,
                   all_shadow, *kDefaultPrepared);
  }
  return Compile(std::move(operator_policies), include_builtins, route_keys,
                 all_shadow, PreparedRouteForms(route_forms));
}

absl::StatusOr<PolicySet> PolicySet::Compile(
    std::vector<Policy> operator_policies, bool include_builtins,
    std::span<const std::string_view> route_keys, bool all_shadow,
    const PreparedRouteForms& route_forms) {
  std::vector<std::string> problems;
  for (Policy& p : operator_policies) {
    p.builtin = false;
    // ValidatePolicies takes methods in any case; the tables and reports use
    // the standard spelling.
    for (std::string& m : p.methods) absl::AsciiStrToUpper(&m);
  }
  for (PolicyError& e : ValidatePolicies(operator_policies)) {
    problems.push_back(std::move(e.message));
  }

  PolicySet set;
  const size_t operator_count = operator_policies.size();
  set.policies_ = std::move(operator_policies);
  if (include_builtins) {
    std::vector<Policy> builtins = BuiltinPolicies();
    for (Policy& b : builtins) {
      const bool replaced = std::any_of(
          set.policies_.begin(), set.policies_.end(),
          [&](const Policy& p) { return !p.builtin && p.name == b.name; });
      if (!replaced) set.policies_.push_back(std::move(b));
    }
  }
  if (all_shadow) {
    for (Policy& p : set.policies_) p.shadow_mode = true;
  }
  if (set.policies_.size() > kMaxPolicies) {
    problems.push_back(absl::StrCat("policies: got ", set.policies_.size(),
                                    " (built-ins included), expected at most ",
                                    kMaxPolicies));
  }
  size_t patterns = 0;
  for (const Policy& p : set.policies_) patterns += p.match.size();
  if (patterns >= 0xFFFF) {
    problems.push_back(absl::StrCat("patterns: got ", patterns,
                                    " (built-ins included), expected fewer "
                                    "than 65535"));
  }
  if (route_keys.size() >= kSharedBucketRoute) {
    problems.push_back(absl::StrCat("route keys: got ", route_keys.size(),
                                    ", expected fewer than ",
                                    kSharedBucketRoute));
  }
  // Layers in order of first appearance, the default layer first.
  set.layers_.emplace_back(kDefaultLayer);
  for (const Policy& p : set.policies_) {
    if (std::find(set.layers_.begin(), set.layers_.end(), p.layer) ==
        set.layers_.end()) {
      set.layers_.push_back(p.layer);
    }
  }
  // The set's layers are those FindLayerOverflow counts, in another order
  // (operator layers before the built-ins'; the order names denials).
  const std::span<const Policy> operators(set.policies_.data(), operator_count);
  if (std::optional<LayerOverflow> over =
          FindLayerOverflow(operators, include_builtins)) {
    const Policy& p = operators[over->index];
    problems.push_back(absl::StrCat(
        "policy ", QuoteForError(p.name),
        p.source_line > 0 ? absl::StrCat(" (line ", p.source_line, ")") : "",
        ": layer: ", over->problem));
  }
  if (std::optional<GroupOverflow> over = FindGroupOverflow(
          std::span<const Policy>(set.policies_.data(), operator_count),
          include_builtins, all_shadow)) {
    const Policy& p = set.policies_[over->index];
    problems.push_back(absl::StrCat(
        "policy ", QuoteForError(p.name),
        p.source_line > 0 ? absl::StrCat(" (line ", p.source_line, ")") : "",
        ": ", ToAbsl(over->field), ": ", over->problem));
  }
  AddRoomPatternProblems(
      std::span<const Policy>(set.policies_.data(), operator_count), route_keys,
      problems);
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }

  set.AssignSlots();
  set.RankEntries();
  if (route_keys.empty()) {
    set.route_keys_.emplace_back(kFallbackRouteKey);
  } else {
    set.route_keys_.assign(route_keys.begin(), route_keys.end());
  }
  for (const std::string& key : set.route_keys_) {
    set.route_has_room_.push_back(RouteKeyHasRoom(key));
  }

  set.BuildRouteSide(route_forms);
  set.BuildRawSide();
  set.limit_errors_.reserve(set.policies_.size());
  for (const Policy& p : set.policies_) {
    LimitError e{p.errcode, p.info_uri};
    if (p.can_upgrade.has_value()) {
      e.can_upgrade =
          *p.can_upgrade ? LimitError::Upgrade::kYes : LimitError::Upgrade::kNo;
    }
    set.limit_errors_.push_back(e);
  }
  return set;
}

void PolicySet::AssignSlots() {
  // Slots: the (layer, scope, mode, variant) groups some policy belongs
  // to, in resolution order; variants in order of first appearance.
  const size_t n = policies_.size();
  info_.resize(n);
  Variants found = CollectVariants(policies_);
  const std::vector<GroupVariant>& variants = found.list;
  const std::vector<size_t>& variant_of = found.of_policy;
  const std::vector<uint8_t>& condition_of_variant = found.condition;
  condition_names_.clear();
  condition_slots_.assign(found.conditions.size() + 1, 0);
  uint8_t condition = 0;
  for (auto& [absent, present] : found.conditions) {
    ++condition;
    AddConditionNames(condition, absent, true);
    AddConditionNames(condition, present, false);
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto layer = static_cast<uint8_t>(l);
    for (Scope scope : {Scope::kIp, Scope::kUser, Scope::kOrigin, Scope::kRoom,
                        Scope::kTarget}) {
      for (bool shadow : {false, true}) {
        for (size_t v = 0; v < variants.size(); ++v) {
          auto member = [&](size_t i) {
            const Policy& p = policies_[i];
            return p.layer == layers_[layer] && p.scope == scope &&
                   p.shadow_mode == shadow && variant_of[i] == v;
          };
          bool used = false;
          for (size_t i = 0; i < n && !used; ++i) used = member(i);
          if (!used) continue;
          const auto slot = static_cast<uint8_t>(slots_.size());
          slots_.push_back(Slot{layer, scope, shadow, variants[v].concurrency,
                                condition_of_variant[v]});
          for (size_t i = 0; i < n; ++i) {
            if (member(i)) {
              info_[i] = PolicyInfo{policies_[i].share_threshold, layer, slot};
            }
          }
        }
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    by_name_.emplace(policies_[i].name, static_cast<PolicyId>(i));
  }
}

void PolicySet::AddConditionNames(uint8_t condition,
                                  std::vector<std::string>& names,
                                  bool absent) {
  for (std::string& text : names) {
    const bool plain = internal::IsPlainQueryName(text);
    condition_names_.push_back(
        ConditionName{std::move(text), plain, absent, condition});
  }
}

// Entries, one per pattern of every policy, sorted by rank (lowest first).
void PolicySet::RankEntries() {
  struct Ranked {
    int tier;
    bool operator_policy;
    size_t rank_bytes;
    size_t policy;
    size_t pattern;
  };
  std::vector<std::pair<Ranked, Entry>> ranked;
  for (size_t i = 0; i < policies_.size(); ++i) {
    const Policy& p = policies_[i];
    for (size_t j = 0; j < p.match.size(); ++j) {
      Entry e{static_cast<PolicyId>(i), static_cast<uint8_t>(j), info_[i].slot,
              MaskOf(p), CanonicalPattern(p.match[j])};
      Ranked r{TierOf(e.canonical), !p.builtin, ShapeOf(e.canonical).rank_bytes,
               i, j};
      ranked.emplace_back(r, std::move(e));
    }
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    const Ranked& x = a.first;
    const Ranked& y = b.first;
    // The ranking of docs/policies.md, "Which one applies": within a tier
    // the operator's policy beats a built-in (the operator wrote it for
    // this server), then more literal bytes, then the earlier.
    if (x.tier != y.tier) return x.tier < y.tier;
    if (x.operator_policy != y.operator_policy) return !x.operator_policy;
    if (x.rank_bytes != y.rank_bytes) return x.rank_bytes < y.rank_bytes;
    if (x.policy != y.policy) return x.policy > y.policy;
    return x.pattern > y.pattern;
  });
  entries_.reserve(ranked.size());
  order_info_.push_back(OrderInfo{kNoPolicy, false, 0});  // order 0: none
  for (auto& [r, e] : ranked) {
    const Policy& p = policies_[e.policy];
    const bool weighed =
        p.cost != CostKind::kRequests || p.charge != ChargeOn::kRequest;
    const bool general = weighed || p.on_limit == OnLimit::kDelay;
    order_info_.push_back(OrderInfo{
        e.policy, info_[e.policy].share_threshold,
        static_cast<uint8_t>((general ? kGeneral : 0) |
                             (weighed ? kWeighed : 0) |
                             (internal::IdlesWhileRoomy(p) ? kIdles : 0))});
    entries_.push_back(std::move(e));
  }
  // Table rows are padded to whole 8-lane vectors (see slot_lanes.h).
  lanes_ = std::max<size_t>(8, (slots_.size() + 7) / 8 * 8);
}

// Every entry by its head: the bytes of its canonical pattern before the
// first '*' (an exact pattern's whole text). An entry can match a text only
// when its head is a prefix of the text, and one walk of `trie` over a text
// visits exactly those entries: a route key or a form glob costs a walk, not
// a test per entry.
struct PolicySet::HeadIndex {
  internal::PrefixTrie trie;
  // Entries by trie value: a head's wildcard entries are its prefix value,
  // its exact ones its exact value (visited only for the head itself).
  std::vector<std::vector<size_t>> groups;
  std::vector<PatternKind> kinds;  // by entry
  // By entry: the literal bytes after the last '*' (inner-'*' entries).
  std::vector<std::string_view> tails;
  // Entries but `<fallback>` sorted by head, for the heads that extend a
  // form glob's head.
  struct ByHead {
    std::string_view head;
    size_t entry;
  };
  std::vector<ByHead> sorted;
};

void PolicySet::BuildRouteSide(const PreparedRouteForms& route_forms) {
  const size_t entry_count = entries_.size();
  HeadIndex index;
  index.kinds.reserve(entry_count);
  index.tails.reserve(entry_count);
  internal::PrefixTrie::Builder builder;
  for (size_t i = 0; i < entry_count; ++i) {
    const std::string_view canonical = entries_[i].canonical;
    const PatternShape shape = ShapeOf(canonical);
    index.kinds.push_back(shape.kind);
    index.tails.push_back(canonical.substr(canonical.rfind('*') + 1));
    uint32_t& value = shape.kind == PatternKind::kExact
                          ? builder.ExactSlot(shape.prefix)
                          : builder.Slot(shape.prefix);
    if (value == internal::PrefixTrie::kNone) {
      value = static_cast<uint32_t>(index.groups.size());
      index.groups.emplace_back();
    }
    index.groups[value].push_back(i);
    if (!route_forms.by_route_.empty() &&
        entries_[i].canonical != kFallbackRouteKey) {
      index.sorted.push_back({shape.prefix, i});
    }
  }
  index.trie = std::move(builder).Build();
  std::sort(index.sorted.begin(), index.sorted.end(),
            [](const HeadIndex::ByHead& a, const HeadIndex::ByHead& b) {
              return a.head < b.head;
            });

  std::vector<uint16_t> candidates;
  // A route may resolve from its row alone when every form has a glob.
  auto route_only_candidate = [&](size_t r) {
    return r != kFallbackRouteId && r < route_forms.by_route_.size() &&
           !route_forms.refused_[r] && !route_forms.by_route_[r].empty();
  };
  std::vector<char> matches_key(entry_count, 0);
  // Routes that match the same entries share one table: most routes meet
  // only a few catch-alls.
  absl::flat_hash_map<std::vector<uint16_t>, uint32_t> table_of;
  route_table_.reserve(route_keys_.size());
  route_only_.assign(route_keys_.size(), 0);
  std::string scratch;
  for (size_t r = 0; r < route_keys_.size(); ++r) {
    // Every entry matching the canonical key, resolved to a table once. An
    // exact or trailing-'*' entry whose head the walk reaches matches
    // (ShapeOf); an inner-'*' one when the key also ends with its tail and
    // the rest of it matches the rest of the key.
    const std::string_view key =
        internal::CanonicalPatternView(route_keys_[r], scratch);
    candidates.clear();
    index.trie.ForEachMatch(key, [&](uint32_t group) {
      for (const size_t i : index.groups[group]) {
        if (index.kinds[i] == PatternKind::kInnerStar) {
          const std::string_view pattern = entries_[i].canonical;
          const size_t head = pattern.find('*');
          if (!key.ends_with(index.tails[i]) ||
              !GlobMatch(pattern.substr(head), key.substr(head))) {
            continue;
          }
        }
        candidates.push_back(OrderOf(i));
      }
    });
    std::sort(candidates.begin(), candidates.end());
    auto [table, added] = table_of.try_emplace(candidates, 0);
    if (added) table->second = AddBestTable(candidates);
    route_table_.push_back(table->second);
    if (!route_only_candidate(r)) continue;
    for (uint16_t order : candidates) matches_key[order - 1] = 1;
    route_only_[r] = RouteOnlyMethods(route_forms.by_route_[r], matches_key,
                                      route_table_.back(), index);
    for (uint16_t order : candidates) matches_key[order - 1] = 0;
  }
}

void PolicySet::BuildRawSide() {
  const size_t entry_count = entries_.size();
  // Raw side: group exact patterns by text and trailing-'*' patterns by
  // prefix; each group becomes one table. `<fallback>` is a route key, never
  // a path.
  absl::flat_hash_map<std::string, std::vector<uint16_t>> exact_groups;
  absl::flat_hash_map<std::string, std::vector<uint16_t>> prefix_groups;
  inner_.resize(slots_.size());
  for (size_t i = 0; i < entry_count; ++i) {
    const Entry& e = entries_[i];
    if (e.canonical == kFallbackRouteKey) continue;
    const PatternShape shape = ShapeOf(e.canonical);
    switch (shape.kind) {
      case PatternKind::kExact:
        exact_groups[e.canonical].push_back(OrderOf(i));
        break;
      case PatternKind::kPrefix:
        prefix_groups[std::string(shape.prefix)].push_back(OrderOf(i));
        break;
      case PatternKind::kInnerStar:
        inner_[e.slot].push_back(InnerStar{OrderOf(i), e.methods, e.canonical});
        break;
    }
  }
  internal::PrefixTrie::Builder trie;
  for (const auto& [text, orders] : exact_groups) {
    trie.ExactSlot(internal::FromAbsl(text)) = AddBestTable(orders);
  }
  for (const auto& [prefix, orders] : prefix_groups) {
    trie.Slot(internal::FromAbsl(prefix)) = AddBestTable(orders);
  }
  trie_ = std::move(trie).Build();
  for (size_t slot = 0; slot < inner_.size(); ++slot) {
    std::vector<InnerStar>& list = inner_[slot];
    std::sort(list.begin(), list.end(),
              [](const InnerStar& a, const InnerStar& b) {
                return a.order > b.order;
              });
    if (!list.empty()) inner_slots_.push_back(static_cast<uint8_t>(slot));
  }
  // The default layer's plain rate policies name Resolution::ip and ::user.
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.layer != 0 || slot.shadow || slot.concurrency ||
        slot.condition != 0) {
      continue;
    }
    if (slot.scope == Scope::kIp) ip_decision_slot_ = static_cast<uint8_t>(i);
    if (slot.scope == Scope::kUser) {
      user_decision_slot_ = static_cast<uint8_t>(i);
    }
  }
  slot_words_.clear();
  for (const Slot& slot : slots_) {
    slot_words_.push_back(uint64_t{slot.layer} << 32 |
                          uint64_t{static_cast<uint8_t>(slot.scope)} << 40 |
                          uint64_t{slot.shadow} << 48);
  }
  for (size_t slot = 0; slot < slots_.size(); ++slot) {
    scope_slots_[static_cast<size_t>(slots_[slot].scope)] |= 1u << slot;
    slot_bits_ |= 1u << slot;
    condition_slots_[slots_[slot].condition] |= 1u << slot;
    if (slots_[slot].condition != 0) conditional_slots_ |= 1u << slot;
    if (slots_[slot].concurrency) concurrency_slots_ |= 1u << slot;
    if (slots_[slot].concurrency || (slots_[slot].scope != Scope::kIp &&
                                     slots_[slot].scope != Scope::kUser)) {
      general_slots_ |= 1u << slot;
    }
  }
  for (size_t i = 0; i < policies_.size(); ++i) {
    if (internal::IdlesWhileRoomy(policies_[i])) {
      idle_slots_ |= 1u << info_[i].slot;
    }
  }
  for (size_t has = 0; has < subject_dropped_.size(); ++has) {
    auto unless = [&](size_t bit, Scope scope) {
      return (has & bit) != 0 ? 0u : scope_slots_[static_cast<size_t>(scope)];
    };
    subject_dropped_[has] = unless(1, Scope::kUser) |
                            unless(2, Scope::kOrigin) |
                            unless(4, Scope::kTarget);
  }
  route_dropped_.assign(route_has_room_.size(), 0);
  for (size_t r = 0; r < route_has_room_.size(); ++r) {
    if (!route_has_room_[r]) route_dropped_[r] = scope_slots_[3];
  }
}

// The methods for which a route's paths need no raw-path walk: those of no
// raw-path pattern that could match one of its paths without already
// matching its key (a pattern that matches the key is in the route's table,
// so meeting it again on the path changes nothing), and could beat what the
// route's table (`table`) holds for its slot under that method (a pattern
// ranked below it can never be chosen there, and another pattern of the
// same policy chooses the same policy). A pattern and a form glob can
// only overlap when one's literal head starts with the other's, so each glob
// looks at those entries alone: the heads its head starts with (one walk of
// the index), then those that extend it.
MethodMask PolicySet::RouteOnlyMethods(
    std::span<const PreparedRouteForms::Glob> globs,
    std::span<const char> matches_key, uint32_t table,
    const HeadIndex& index) const {
  const size_t stride = internal::kMethodClassCount * lanes_;
  const uint16_t* row = cells_.data() + table * stride;
  MethodMask relevant = 0;
  // True once every method is relevant (nothing left to learn).
  // `surely`: the pair overlaps without a search.
  auto consider = [&](size_t i, std::string_view glob, bool surely) {
    const Entry& e = entries_[i];
    if (matches_key[i]) return false;
    MethodMask beats = 0;
    for (int m = 0; m < internal::kMethodClassCount; ++m) {
      const uint16_t held = row[m * lanes_ + e.slot];
      if ((e.methods & (1u << m)) != 0 && OrderOf(i) > held &&
          order_info_[held].policy != e.policy) {
        beats |= static_cast<MethodMask>(1u << m);
      }
    }
    if ((beats & ~relevant) == 0) return false;
    if (surely || internal::GlobsOverlap(e.canonical, glob)) {
      relevant |= beats;
    }
    return relevant == internal::kAllMethods;
  };
  auto by_head = [](const HeadIndex::ByHead& a, std::string_view b) {
    return a.head < b;
  };
  for (const PreparedRouteForms::Glob& form : globs) {
    const std::string_view glob = form.text;
    const std::string_view head = glob.substr(0, form.head_size);
    // Heads that are a prefix of the glob's head, or equal to it. The walk
    // skips exact patterns shorter than the head, which no text of the glob
    // (each starts with the whole head) can equal; `<fallback>` is no path
    // and never on the way.
    // A trailing-'*' pattern on the way matches every text of the glob:
    // each starts with the glob's head, which starts with the pattern's.
    bool all = false;
    index.trie.ForEachMatch(head, [&](uint32_t group) {
      for (const size_t i : index.groups[group]) {
        if (all) return;
        all = consider(i, glob, index.kinds[i] == PatternKind::kPrefix);
      }
    });
    if (all) return 0;
    // Heads that extend the glob's head.
    for (auto it = std::lower_bound(index.sorted.begin(), index.sorted.end(),
                                    head, by_head);
         it != index.sorted.end() && it->head.starts_with(head); ++it) {
      if (it->head.size() == head.size()) continue;  // walked
      if (consider(it->entry, glob, /*surely=*/false)) return 0;
    }
  }
  return internal::kAllMethods & ~relevant;
}

bool PolicySet::ResolvedByRoute(RouteId route, std::string_view method) const {
  return (route_only_[ClampRoute(route)] & Bit(ClassifyMethod(method))) != 0;
}

uint32_t PolicySet::AddBestTable(std::span<const uint16_t> candidate_orders) {
  const size_t k = lanes_;
  const size_t stride = internal::kMethodClassCount * k;
  const size_t base = cells_.size();
  cells_.resize(base + stride, 0);
  for (uint16_t order : candidate_orders) {
    const Entry& e = entry(order);
    for (int m = 0; m < internal::kMethodClassCount; ++m) {
      if ((e.methods & (1u << m)) == 0) continue;
      uint16_t& cell = cells_[base + m * k + e.slot];
      cell = std::max(cell, order);
    }
  }
  return static_cast<uint32_t>(stride == 0 ? 0 : base / stride);
}

size_t PolicySet::inner_star_policies() const {
  size_t total = 0;
  for (const auto& list : inner_) total += list.size();
  return total;
}

std::string_view PolicySet::route_key(RouteId id) const {
  return route_keys_[ClampRoute(id)];
}

std::optional<PolicyId> PolicySet::Find(std::string_view name) const {
  auto it = by_name_.find(ToAbsl(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mxlimit
