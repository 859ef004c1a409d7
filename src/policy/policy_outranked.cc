// PolicySet::Outranked, behind `mxlimit check-config`'s warning about
// operator policies that another policy of their layer and scope outranks
// on every request of a route they were written for. Not on the request
// path.
//
// A policy that matches a route's key takes part in every request of that
// route, so the best such policy per (route, method, slot) is the row
// BuildRouteSide computed. An operator policy loses every request of a
// route it may see when that row's policy ranks above the best of its
// patterns that may see the route.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/internal/prefix_trie.h"
#include "mxlimit/policy_set.h"
#include "src/policy/policy_ranks.h"
#include "src/policy/route_glob.h"

namespace mxlimit {
namespace {

using internal::GlobMatch;
using internal::GlobsOverlap;
using internal::MethodMask;
using internal::PatternKind;
using internal::PatternShape;
using internal::ShapeOf;

// What an operator entry is compared with: texts by their literal head.
struct ByHead {
  std::string_view head;
  RouteId route;
  std::string_view text;  // a canonical route key, or a form glob
};

// The texts whose head could let `pattern` (with literal head `head`) match
// one of them: those whose head starts with `head` (a range of `sorted`),
// and those whose head is a proper prefix of `head` (one walk of `trie`,
// whose values index `groups`).
class TextsByHead {
 public:
  explicit TextsByHead(std::vector<ByHead> texts) : sorted_(std::move(texts)) {
    std::sort(sorted_.begin(), sorted_.end(),
              [](const ByHead& a, const ByHead& b) { return a.head < b.head; });
    internal::PrefixTrie::Builder builder;
    for (size_t i = 0; i < sorted_.size(); ++i) {
      uint32_t& value = builder.Slot(sorted_[i].head);
      if (value == internal::PrefixTrie::kNone) {
        value = static_cast<uint32_t>(groups_.size());
        groups_.emplace_back(i, i);
      }
      groups_[value].second = i + 1;
    }
    trie_ = std::move(builder).Build();
  }

  template <typename Visit>
  void ForEachCandidate(std::string_view head, Visit visit) const {
    trie_.ForEachMatch(head, [&](uint32_t group) {
      for (size_t i = groups_[group].first; i < groups_[group].second; ++i) {
        // Heads equal to `head` come again below.
        if (sorted_[i].head.size() < head.size()) visit(sorted_[i]);
      }
    });
    auto it = std::lower_bound(
        sorted_.begin(), sorted_.end(), head,
        [](const ByHead& a, std::string_view b) { return a.head < b; });
    for (; it != sorted_.end() && it->head.starts_with(head); ++it) visit(*it);
  }

 private:
  std::vector<ByHead> sorted_;
  std::vector<std::pair<size_t, size_t>> groups_;  // [begin, end) in sorted_
  internal::PrefixTrie trie_;
};

std::vector<std::string> MethodNames(MethodMask mask) {
  std::vector<std::string> names;
  for (int m = 0; m < internal::kMethodClassCount; ++m) {
    if ((mask & (1u << m)) == 0) continue;
    names.emplace_back(m == internal::kOtherMethod ? std::string_view("other")
                                                   : internal::kMethodNames[m]);
  }
  return names;
}

}  // namespace

// The analysis, one operator policy at a time.
class internal::OutrankedAnalysis {
 public:
  OutrankedAnalysis(const PolicySet& set, const PreparedRouteForms& forms)
      : set_(set),
        stride_(internal::kMethodClassCount * set.lanes_),
        seen_(set.route_keys_.size()) {
    IndexTexts(forms);
    // Each operator policy's entries (orders), from entries_.
    orders_of_.resize(set.policies_.size());
    for (size_t i = 0; i < set.entries_.size(); ++i) {
      const PolicyId p = set.entries_[i].policy;
      if (!set.policies_[p].builtin) {
        orders_of_[p].push_back(static_cast<uint16_t>(i + 1));
      }
    }
  }

  std::vector<OutrankedPolicy> Run() {
    std::vector<OutrankedPolicy> out;
    for (size_t id = 0; id < set_.policies_.size(); ++id) {
      if (set_.policies_[id].builtin || orders_of_[id].empty()) continue;
      if (std::optional<OutrankedPolicy> r =
              Analyse(static_cast<PolicyId>(id))) {
        out.push_back(*std::move(r));
      }
    }
    return out;
  }

 private:
  // Per route, how the policy's entries may see it.
  struct Seen {
    uint16_t best = 0;  // the best order of an entry that may see it
    bool key = false;   // an entry matches the route key
    // An entry matches some of its paths with a literal head longer than
    // the form's: without matching the key, it names some values of a
    // placeholder (one room's `/rooms/!a:b/*` on the join route), so it
    // was written for those paths.
    bool targeted = false;
  };
  // What the policy loses to one other policy: every loss, and the
  // unexpected ones.
  struct Found {
    PolicyId by = kNoPolicy;
    RankReason reason = RankReason::kEarlier;  // on the first route
    std::vector<RouteId> routes;
    MethodMask methods = 0;
    RankReason unexpected_reason = RankReason::kEarlier;
    std::vector<RouteId> unexpected_routes;
    MethodMask unexpected_methods = 0;
  };

  const PolicySet::Entry& entry(uint16_t order) const {
    return set_.entry(order);
  }
  // The best order of `slot` for method class `m` on route `r`.
  uint16_t BestOn(RouteId r, int m, uint8_t slot) const {
    return set_.cells_[set_.route_table_[r] * stride_ + m * set_.lanes_ + slot];
  }

  // Route keys (canonical, as BuildRouteSide matched them) and form globs,
  // each by its head.
  void IndexTexts(const PreparedRouteForms& forms) {
    const size_t routes = set_.route_keys_.size();
    keys_.resize(routes);
    std::vector<ByHead> key_texts;
    for (size_t r = 0; r < routes; ++r) {
      keys_[r] = internal::CanonicalPattern(set_.route_keys_[r]);
      if (r == kFallbackRouteId) continue;
      key_texts.push_back(
          {ShapeOf(keys_[r]).prefix, static_cast<RouteId>(r), keys_[r]});
    }
    std::vector<ByHead> glob_texts;
    for (size_t r = 1; r < routes && r < forms.by_route_.size(); ++r) {
      if (forms.refused_[r]) refused_.push_back(static_cast<RouteId>(r));
      for (const PreparedRouteForms::Glob& glob : forms.by_route_[r]) {
        glob_texts.push_back(
            {std::string_view(glob.text).substr(0, glob.head_size),
             static_cast<RouteId>(r), glob.text});
      }
    }
    by_key_.emplace(std::move(key_texts));
    by_glob_.emplace(std::move(glob_texts));
  }

  Seen& See(RouteId r, uint16_t order) {
    if (seen_[r].best == 0) touched_.push_back(r);
    seen_[r].best = std::max(seen_[r].best, order);
    return seen_[r];
  }

  // Marks the routes entry `order` may see.
  void SeeEntry(uint16_t order) {
    const std::string_view pattern = entry(order).canonical;
    if (pattern == kFallbackRouteKey) {
      See(kFallbackRouteId, order);
      return;
    }
    const PatternShape shape = ShapeOf(pattern);
    // An exact pattern equal to a key is a path served as that route (a
    // placeholder segment matches its own `{name}` bytes too).
    bool known = false;
    by_key_->ForEachCandidate(shape.prefix, [&](const ByHead& key) {
      if (GlobMatch(pattern, key.text)) {
        See(key.route, order).key = true;
        known = true;
      }
    });
    by_glob_->ForEachCandidate(shape.prefix, [&](const ByHead& glob) {
      const bool targets = shape.prefix.size() > glob.head.size();
      const Seen& already = seen_[glob.route];
      if (already.best >= order && (already.targeted || !targets)) return;
      if (GlobsOverlap(pattern, glob.text)) {
        See(glob.route, order).targeted |= targets;
        known = true;
      }
    });
    // A wildcard matches unknown paths too (append a segment no route
    // has); an exact path is unknown unless some form serves it.
    if (shape.kind != PatternKind::kExact || !known) {
      See(kFallbackRouteId, order);
    }
  }

  // A route whose forms have no glob might be seen unnoticed: unless the
  // best key-matching policy there outranks the policy's best entry `top`,
  // it might apply there.
  bool MayApplyOnRefusedRoutes(PolicyId policy, MethodMask methods,
                               uint8_t slot, uint16_t top) const {
    for (const RouteId r : refused_) {
      for (int m = 0; m < internal::kMethodClassCount; ++m) {
        if ((methods & (1u << m)) == 0) continue;
        const uint16_t o = BestOn(r, m, slot);
        if (o <= top || entry(o).policy == policy) return true;
      }
    }
    return false;
  }

  // Records that order `o` beats the policy (whose best there is `mine`) on
  // route `r` for method class `m`.
  void RecordLoss(RouteId r, int m, uint16_t o, uint16_t mine,
                  std::vector<Found>& found) const {
    const PolicyId by = entry(o).policy;
    auto it = std::find_if(found.begin(), found.end(),
                           [&](const Found& f) { return f.by == by; });
    if (it == found.end()) {
      Found f;
      f.by = by;
      f.reason =
          internal::RankReasonBetween(entry(o).canonical, entry(mine).canonical,
                                      set_.policies_[by].builtin, false);
      it = found.insert(found.end(), std::move(f));
    }
    if (it->routes.empty() || it->routes.back() != r) it->routes.push_back(r);
    it->methods |= 1u << m;
    // On a route whose key it matches, losing to a pattern with more literal
    // bytes is ranking doing its job, and losing to one with no more is a
    // policy dead where it was written for. On a route it reaches through
    // raw paths only, losing where it names values of the route's
    // placeholders is too; other overlaps (`/_matrix/client/v3/*/report*` on
    // a room whose ID starts with "report") are no news.
    const bool unexpected = seen_[r].key
                                ? ShapeOf(entry(o).canonical).rank_bytes <=
                                      ShapeOf(entry(mine).canonical).rank_bytes
                                : seen_[r].targeted;
    if (!unexpected) return;
    if (it->unexpected_routes.empty()) {
      it->unexpected_reason =
          internal::RankReasonBetween(entry(o).canonical, entry(mine).canonical,
                                      set_.policies_[by].builtin, false);
    }
    if (it->unexpected_routes.empty() || it->unexpected_routes.back() != r) {
      it->unexpected_routes.push_back(r);
    }
    it->unexpected_methods |= 1u << m;
  }

  // The losses to report: all of them for a policy that never applies,
  // else the unexpected ones.
  static std::optional<OutrankedPolicy> Report(PolicyId policy, bool alive,
                                               std::vector<Found>& found) {
    OutrankedPolicy result;
    result.policy = policy;
    result.never_applies = !alive && !found.empty();
    for (Found& f : found) {
      OutrankedPolicy::Loss loss;
      loss.by = f.by;
      if (result.never_applies) {
        loss.reason = f.reason;
        loss.routes = std::move(f.routes);
        loss.methods = MethodNames(f.methods);
      } else if (!f.unexpected_routes.empty()) {
        loss.reason = f.unexpected_reason;
        loss.routes = std::move(f.unexpected_routes);
        loss.methods = MethodNames(f.unexpected_methods);
      } else {
        continue;
      }
      result.losses.push_back(std::move(loss));
    }
    if (result.losses.empty()) return std::nullopt;
    return result;
  }

  std::optional<OutrankedPolicy> Analyse(PolicyId policy) {
    const std::vector<uint16_t>& orders = orders_of_[policy];
    const uint8_t slot = set_.info_[policy].slot;
    touched_.clear();
    for (const uint16_t order : orders) SeeEntry(order);
    const MethodMask methods = entry(orders.front()).methods;
    bool alive = MayApplyOnRefusedRoutes(policy, methods, slot,
                                         orders.back());  // sorted: the best
    std::vector<Found> found;
    std::sort(touched_.begin(), touched_.end());
    for (const RouteId r : touched_) {
      const uint16_t mine = seen_[r].best;
      for (int m = 0; m < internal::kMethodClassCount; ++m) {
        if ((methods & (1u << m)) == 0) continue;
        const uint16_t o = BestOn(r, m, slot);
        if (o <= mine || entry(o).policy == policy) {
          alive = true;
        } else {
          RecordLoss(r, m, o, mine, found);
        }
      }
    }
    for (const RouteId r : touched_) seen_[r] = Seen{};
    return Report(policy, alive, found);
  }

  const PolicySet& set_;
  const size_t stride_;
  std::vector<std::string> keys_;
  std::vector<RouteId> refused_;
  std::optional<TextsByHead> by_key_;
  std::optional<TextsByHead> by_glob_;
  std::vector<std::vector<uint16_t>> orders_of_;
  std::vector<Seen> seen_;
  std::vector<RouteId> touched_;  // the routes to clear for the next policy
};

std::vector<OutrankedPolicy> PolicySet::Outranked(
    const PreparedRouteForms& route_forms) const {
  return internal::OutrankedAnalysis(*this, route_forms).Run();
}

}  // namespace mxlimit
