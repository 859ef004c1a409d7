// PolicySet: compilation (validation, ranks, per-route and raw-path lookup
// structures), per-request resolution, and the explaining scan.

#include "mxlimit/policy_set.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit {
namespace {

using internal::ClassifyMethod;
using internal::GlobMatch;
using internal::MethodClass;
using internal::MethodMask;
using internal::PatternKind;
using internal::PatternShape;
using internal::ShapeOf;
using internal::ToAbsl;

constexpr int ScopeIndex(Scope scope) { return scope == Scope::kIp ? 0 : 1; }

constexpr MethodMask Bit(MethodClass m) {
  return static_cast<MethodMask>(1u << m);
}

MethodMask MaskOf(const Policy& p) {
  if (p.methods.empty()) return internal::kAllMethods;
  MethodMask mask = 0;
  for (const std::string& m : p.methods) mask |= Bit(ClassifyMethod(m));
  return mask;
}

// Rank layout (higher wins): bit 62 exact; bits 24..55 literal bytes; bit 16
// operator; bits 0..15 (0xFFFF - id), so earlier ids win the last tie.
uint64_t RankOf(const Policy& p, PolicyId id) {
  const PatternShape shape = ShapeOf(p.match);
  uint64_t r = 0;
  if (shape.kind == PatternKind::kExact) r |= uint64_t{1} << 62;
  r |= static_cast<uint64_t>(shape.literal_bytes) << 24;
  if (!p.builtin) r |= uint64_t{1} << 16;
  r |= static_cast<uint64_t>(0xFFFF - id);
  return r;
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
  }
  return "?";
}

std::string_view RankReasonName(RankReason reason) {
  switch (reason) {
    case RankReason::kOnlyCandidate:
      return "only candidate";
    case RankReason::kExact:
      return "exact over wildcard";
    case RankReason::kMoreLiteralBytes:
      return "more literal bytes";
    case RankReason::kOperatorOverBuiltin:
      return "operator over built-in";
    case RankReason::kEarlier:
      return "earlier in file";
  }
  return "?";
}

absl::StatusOr<PolicySet> PolicySet::Compile(
    std::vector<Policy> operator_policies, bool include_builtins,
    std::span<const std::string_view> route_keys) {
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
  if (set.policies_.size() > kMaxPolicies) {
    problems.push_back(absl::StrCat("policies: got ", set.policies_.size(),
                                    " (built-ins included), expected at most ",
                                    kMaxPolicies));
  }
  if (route_keys.size() >= kSharedBucketRoute) {
    problems.push_back(absl::StrCat("route keys: got ", route_keys.size(),
                                    ", expected fewer than ",
                                    kSharedBucketRoute));
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }

  const size_t n = set.policies_.size();
  set.info_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Policy& p = set.policies_[i];
    const auto id = static_cast<PolicyId>(i);
    set.info_[i] = PolicyInfo{RankOf(p, id), MaskOf(p), p.share_threshold};
    set.by_name_.emplace(p.name, id);
  }

  if (route_keys.empty()) {
    set.route_keys_.emplace_back(kFallbackRouteKey);
  } else {
    set.route_keys_.assign(route_keys.begin(), route_keys.end());
  }

  // Route side: every policy matching each key, resolved to a table once.
  std::vector<PolicyId> candidates;
  set.route_table_.reserve(set.route_keys_.size());
  for (const std::string& key : set.route_keys_) {
    candidates.clear();
    for (size_t i = 0; i < n; ++i) {
      if (GlobMatch(set.policies_[i].match, key)) {
        candidates.push_back(static_cast<PolicyId>(i));
      }
    }
    set.route_table_.push_back(set.AddBestTable(candidates));
  }

  // Raw side: group exact patterns by text and trailing-'*' patterns by
  // prefix; each group becomes one table.
  absl::flat_hash_map<std::string, std::vector<PolicyId>> exact_groups;
  absl::flat_hash_map<std::string, std::vector<PolicyId>> prefix_groups;
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<PolicyId>(i);
    const Policy& p = set.policies_[i];
    const PatternShape shape = ShapeOf(p.match);
    switch (shape.kind) {
      case PatternKind::kExact:
        exact_groups[p.match].push_back(id);
        break;
      case PatternKind::kPrefix:
        prefix_groups[std::string(shape.prefix)].push_back(id);
        break;
      case PatternKind::kInnerStar:
        set.inner_.push_back(InnerStar{id, p.scope, set.info_[i].methods});
        break;
    }
  }
  internal::PrefixTrie::Builder trie;
  for (const auto& [text, ids] : exact_groups) {
    trie.ExactSlot(internal::FromAbsl(text)) = set.AddBestTable(ids);
  }
  for (const auto& [prefix, ids] : prefix_groups) {
    trie.Slot(internal::FromAbsl(prefix)) = set.AddBestTable(ids);
  }
  set.trie_ = std::move(trie).Build();
  std::sort(set.inner_.begin(), set.inner_.end(),
            [&](const InnerStar& a, const InnerStar& b) {
              return set.rank(a.id) > set.rank(b.id);
            });
  return set;
}

uint32_t PolicySet::AddBestTable(std::span<const PolicyId> candidates) {
  BestTable table;
  std::fill(&table.best[0][0],
            &table.best[0][0] + 2 * internal::kMethodClassCount, kNoPolicy);
  for (PolicyId id : candidates) {
    const int s = ScopeIndex(policies_[id].scope);
    for (int m = 0; m < internal::kMethodClassCount; ++m) {
      if ((info_[id].methods & (1u << m)) == 0) continue;
      PolicyId& cur = table.best[s][m];
      if (cur == kNoPolicy || rank(id) > rank(cur)) cur = id;
    }
  }
  tables_.push_back(table);
  return static_cast<uint32_t>(tables_.size() - 1);
}

RouteId PolicySet::ClampRoute(RouteId route) const {
  return route < route_keys_.size() ? route : kFallbackRouteId;
}

RouteId PolicySet::BucketRoute(PolicyId id, RouteId route) const {
  if (id == kNoPolicy) return kFallbackRouteId;
  return info_[id].share_threshold ? kSharedBucketRoute : route;
}

std::string_view PolicySet::route_key(RouteId id) const {
  return route_keys_[ClampRoute(id)];
}

std::optional<PolicyId> PolicySet::Find(std::string_view name) const {
  auto it = by_name_.find(ToAbsl(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

PolicySet::Resolution PolicySet::Resolve(std::string_view method, RouteId route,
                                         std::string_view query_free_path,
                                         bool has_user) const {
  const RouteId rid = ClampRoute(route);
  const MethodClass m = ClassifyMethod(method);
  const int scopes = has_user ? 2 : 1;
  PolicyId best[2] = {kNoPolicy, kNoPolicy};
  auto take = [&](const BestTable& t) {
    for (int s = 0; s < scopes; ++s) {
      const PolicyId id = t.best[s][m];
      if (id != kNoPolicy && (best[s] == kNoPolicy || rank(id) > rank(best[s])))
        best[s] = id;
    }
  };

  take(tables_[route_table_[rid]]);
  trie_.ForEachMatch(query_free_path,
                     [&](uint32_t table) { take(tables_[table]); });

  // Inner-'*' patterns, best rank first: stop once none can beat what both
  // scopes already hold. Ranks are never 0, so 0 stands for "nothing yet".
  for (const InnerStar& in : inner_) {
    uint64_t floor = best[0] == kNoPolicy ? 0 : rank(best[0]);
    if (scopes == 2) {
      floor = std::min(floor, best[1] == kNoPolicy ? 0 : rank(best[1]));
    }
    if (rank(in.id) <= floor) break;
    const int s = ScopeIndex(in.scope);
    if (s >= scopes || (in.methods & Bit(m)) == 0) continue;
    if (best[s] != kNoPolicy && rank(in.id) <= rank(best[s])) continue;
    if (GlobMatch(policies_[in.id].match, query_free_path)) best[s] = in.id;
  }

  Resolution r;
  r.ip = best[0];
  r.ip_bucket_route = BucketRoute(best[0], rid);
  r.user = best[1];
  r.user_bucket_route = BucketRoute(best[1], rid);
  return r;
}

std::vector<PolicyMatch> PolicySet::Explain(std::string_view method,
                                            RouteId route,
                                            std::string_view query_free_path,
                                            bool has_user) const {
  const RouteId rid = ClampRoute(route);
  const std::string_view key = route_keys_[rid];
  const MethodMask bit = Bit(ClassifyMethod(method));

  std::vector<PolicyMatch> out;
  for (size_t i = 0; i < policies_.size(); ++i) {
    const Policy& p = policies_[i];
    const bool via_key = GlobMatch(p.match, key);
    const bool via_raw = GlobMatch(p.match, query_free_path);
    if (!via_key && !via_raw) continue;
    PolicyMatch pm;
    pm.policy = static_cast<PolicyId>(i);
    pm.scope = p.scope;
    pm.form = via_key && via_raw ? MatchForm::kBoth
              : via_key          ? MatchForm::kRouteKey
                                 : MatchForm::kRawPath;
    if (p.scope == Scope::kUser && !has_user) {
      pm.verdict = MatchVerdict::kNeedsUser;
    } else if ((info_[i].methods & bit) == 0) {
      pm.verdict = MatchVerdict::kMethodExcluded;
    } else {
      pm.verdict = MatchVerdict::kOutranked;
    }
    out.push_back(pm);
  }

  // Why `winner` outranks `loser`: the first rule that separates them.
  auto reason = [&](PolicyId winner, PolicyId loser) {
    const PatternShape w = ShapeOf(policies_[winner].match);
    const PatternShape l = ShapeOf(policies_[loser].match);
    if ((w.kind == PatternKind::kExact) != (l.kind == PatternKind::kExact)) {
      return RankReason::kExact;
    }
    if (w.literal_bytes != l.literal_bytes)
      return RankReason::kMoreLiteralBytes;
    if (policies_[winner].builtin != policies_[loser].builtin) {
      return RankReason::kOperatorOverBuiltin;
    }
    return RankReason::kEarlier;
  };

  for (Scope scope : {Scope::kIp, Scope::kUser}) {
    PolicyMatch* chosen = nullptr;
    PolicyMatch* runner_up = nullptr;
    for (PolicyMatch& pm : out) {
      if (pm.scope != scope || pm.verdict != MatchVerdict::kOutranked) continue;
      if (chosen == nullptr || rank(pm.policy) > rank(chosen->policy)) {
        runner_up = chosen;
        chosen = &pm;
      } else if (runner_up == nullptr ||
                 rank(pm.policy) > rank(runner_up->policy)) {
        runner_up = &pm;
      }
    }
    if (chosen == nullptr) continue;
    chosen->verdict = MatchVerdict::kChosen;
    chosen->bucket_route = BucketRoute(chosen->policy, rid);
    if (runner_up != nullptr) {
      chosen->versus = runner_up->policy;
      chosen->reason = reason(chosen->policy, runner_up->policy);
    }
    for (PolicyMatch& pm : out) {
      if (pm.scope != scope || pm.verdict != MatchVerdict::kOutranked) continue;
      pm.versus = chosen->policy;
      pm.reason = reason(chosen->policy, pm.policy);
    }
  }

  std::sort(out.begin(), out.end(),
            [&](const PolicyMatch& a, const PolicyMatch& b) {
              if (a.scope != b.scope) return a.scope < b.scope;
              if (a.verdict != b.verdict) return a.verdict < b.verdict;
              return rank(a.policy) > rank(b.policy);
            });
  return out;
}

}  // namespace mxlimit
