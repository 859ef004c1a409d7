// PolicySet::Explain, the scan behind `mxlimit explain`: every policy with a
// pattern that matched, its verdict and the rule that decided, held by the
// tests to Resolve's choices. Not on the request path.

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy_set.h"
#include "src/policy/policy_ranks.h"

namespace mxlimit {
namespace {

using internal::Bit;
using internal::CanonicalPath;
using internal::CanonicalPattern;
using internal::ClassifyMethod;
using internal::GlobMatch;
using internal::MethodMask;
using internal::RankReasonBetween;

// The highest and second-highest of `matches` by `order` among those `in`
// accepts (nullptr where there are fewer).
template <typename In, typename Order>
std::pair<PolicyMatch*, PolicyMatch*> TopTwo(std::vector<PolicyMatch>& matches,
                                             In in, Order order) {
  PolicyMatch* first = nullptr;
  PolicyMatch* second = nullptr;
  for (PolicyMatch& pm : matches) {
    if (!in(pm)) continue;
    if (first == nullptr || order(pm) > order(*first)) {
      second = first;
      first = &pm;
    } else if (second == nullptr || order(pm) > order(*second)) {
      second = &pm;
    }
  }
  return {first, second};
}

}  // namespace

std::string_view MatchFormName(MatchForm form) {
  switch (form) {
    case MatchForm::kRouteKey:
      return "route key";
    case MatchForm::kRawPath:
      return "raw path";
    case MatchForm::kBoth:
      return "route key and raw path";
  }
  return "?";
}

std::string_view MatchVerdictName(MatchVerdict verdict) {
  switch (verdict) {
    case MatchVerdict::kChosen:
      return "chosen";
    case MatchVerdict::kOutranked:
      return "outranked";
    case MatchVerdict::kMethodExcluded:
      return "method excluded";
    case MatchVerdict::kNeedsUser:
      return "needs a user";
    case MatchVerdict::kNeedsSubject:
      return "needs its subject";
    case MatchVerdict::kQueryExcluded:
      return "query excluded";
  }
  return "?";
}

std::string_view RankReasonName(RankReason reason) {
  switch (reason) {
    case RankReason::kOnlyCandidate:
      return "only candidate";
    case RankReason::kExact:
      return "exact over wildcard";
    case RankReason::kMoreSpecific:
      return "more specific form";
    case RankReason::kMoreLiteralBytes:
      return "more literal bytes";
    case RankReason::kOperatorOverBuiltin:
      return "operator over built-in";
    case RankReason::kEarlier:
      return "earlier in file";
  }
  return "?";
}

std::vector<PolicyMatch> PolicySet::Explain(std::string_view method,
                                            RouteId route,
                                            std::string_view query_free_path,
                                            RequestSubjects subjects) const {
  const RouteId rid = ClampRoute(route);
  const std::string key = CanonicalPattern(route_keys_[rid]);
  const std::string path = CanonicalPath(query_free_path);
  const MethodMask bit = Bit(ClassifyMethod(method));

  // Per policy, its best-ranked matching pattern (entries are sorted by
  // rank, so the last match wins).
  std::vector<PolicyMatch> by_policy(policies_.size());
  std::vector<uint16_t> order_of_policy(policies_.size(), 0);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const bool via_key = GlobMatch(e.canonical, key);
    const bool via_raw =
        e.canonical != kFallbackRouteKey && GlobMatch(e.canonical, path);
    if (!via_key && !via_raw) continue;
    PolicyMatch& pm = by_policy[e.policy];
    pm.policy = e.policy;
    pm.pattern = e.pattern;
    pm.form = via_key && via_raw ? MatchForm::kBoth
              : via_key          ? MatchForm::kRouteKey
                                 : MatchForm::kRawPath;
    order_of_policy[e.policy] = static_cast<uint16_t>(i + 1);
  }
  std::vector<PolicyMatch> out;
  for (size_t i = 0; i < policies_.size(); ++i) {
    if (order_of_policy[i] == 0) continue;
    const Policy& p = policies_[i];
    PolicyMatch pm = by_policy[i];
    pm.scope = p.scope;
    pm.layer = info_[i].layer;
    pm.shadow = p.shadow_mode;
    const bool has_subject =
        (p.scope != Scope::kOrigin || subjects.origin) &&
        (p.scope != Scope::kRoom || route_has_room_[rid]) &&
        (p.scope != Scope::kTarget || subjects.target);
    if (p.scope == Scope::kUser && !subjects.user) {
      pm.verdict = MatchVerdict::kNeedsUser;
    } else if (!has_subject) {
      pm.verdict = MatchVerdict::kNeedsSubject;
    } else if ((entry(order_of_policy[i]).methods & bit) == 0) {
      pm.verdict = MatchVerdict::kMethodExcluded;
    } else if (!QueryConditionsHold(static_cast<PolicyId>(i),
                                    subjects.request_target)) {
      pm.verdict = MatchVerdict::kQueryExcluded;
    } else {
      pm.verdict = MatchVerdict::kOutranked;
    }
    out.push_back(pm);
  }
  auto order = [&](const PolicyMatch& pm) {
    return order_of_policy[pm.policy];
  };

  // Why `winner` outranks `loser`: the first rule that separates them.
  auto reason = [&](const PolicyMatch& winner, const PolicyMatch& loser) {
    return RankReasonBetween(
        entry(order(winner)).canonical, entry(order(loser)).canonical,
        policies_[winner.policy].builtin, policies_[loser.policy].builtin);
  };

  for (size_t s = 0; s < slots_.size(); ++s) {
    const auto slot = static_cast<uint8_t>(s);
    auto in_slot = [&](const PolicyMatch& pm) {
      return info_[pm.policy].slot == slot &&
             pm.verdict == MatchVerdict::kOutranked;
    };
    auto [chosen, runner_up] = TopTwo(out, in_slot, order);
    if (chosen == nullptr) continue;
    chosen->verdict = MatchVerdict::kChosen;
    chosen->bucket_route = BucketRoute(chosen->policy, rid);
    if (runner_up != nullptr) {
      chosen->versus = runner_up->policy;
      chosen->reason = reason(*chosen, *runner_up);
    }
    for (PolicyMatch& pm : out) {
      if (!in_slot(pm)) continue;
      pm.versus = chosen->policy;
      pm.reason = reason(*chosen, pm);
    }
  }

  std::sort(out.begin(), out.end(),
            [&](const PolicyMatch& a, const PolicyMatch& b) {
              const uint8_t sa = info_[a.policy].slot;
              const uint8_t sb = info_[b.policy].slot;
              if (sa != sb) return sa < sb;
              if (a.verdict != b.verdict) return a.verdict < b.verdict;
              return order(a) > order(b);
            });
  return out;
}

}  // namespace mxlimit
