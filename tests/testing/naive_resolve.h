// A reference for `PolicySet::Resolve`: the resolution rules of
// docs/policies.md applied literally, by scanning every pattern of every
// policy against the canonical route key and the canonical path. Slow and
// allocating; for tests and the fuzzer only.

#ifndef MXLIMIT_TESTS_TESTING_NAIVE_RESOLVE_H_
#define MXLIMIT_TESTS_TESTING_NAIVE_RESOLVE_H_

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"

namespace mxlimit::testing {

// (layer, scope, shadow, kind and query conditions) -> the policy that
// applies there.
using NaiveSlot = std::tuple<int, int, bool, std::string>;
using NaiveResolution = std::map<NaiveSlot, PolicyId>;

// A policy's kind and query conditions, as text: policies compete only
// with those of the same.
inline std::string NaiveVariant(const Policy& p) {
  std::vector<std::string> absent = p.query_absent;
  std::vector<std::string> present = p.query_present;
  std::sort(absent.begin(), absent.end());
  std::sort(present.begin(), present.end());
  absent.erase(std::unique(absent.begin(), absent.end()), absent.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  std::string v = p.concurrency.has_value() ? "in flight" : "rate";
  for (const std::string& a : absent) v += " -" + a;
  for (const std::string& q : present) v += " +" + q;
  return v;
}

inline NaiveSlot NaiveSlotOf(const PolicySet& set, PolicyId id) {
  const Policy& p = set.policy(id);
  return {static_cast<int>(set.layer_of(id)), static_cast<int>(p.scope),
          p.shadow_mode, NaiveVariant(p)};
}

// Whether the query of `target` names `name`, decoded the slow way.
inline bool NaiveQueryHas(std::string_view target, std::string_view name) {
  target = target.substr(0, target.find('#'));
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return false;
  std::string query(target.substr(q + 1));
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string key = query.substr(start, end - start);
    key = key.substr(0, key.find('='));
    std::string decoded;
    for (size_t i = 0; i < key.size(); ++i) {
      if (key[i] == '%' && i + 2 < key.size() &&
          std::isxdigit(static_cast<unsigned char>(key[i + 1])) != 0 &&
          std::isxdigit(static_cast<unsigned char>(key[i + 2])) != 0) {
        decoded +=
            static_cast<char>(std::stoi(key.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += key[i] == '+' ? ' ' : key[i];
      }
    }
    if (!key.empty() && decoded == name) return true;
    start = end + 1;
  }
  return false;
}

inline std::string NaiveCanonical(std::string_view pattern) {
  if (pattern == kFallbackRouteKey) return std::string(pattern);
  return internal::CanonicalPath(pattern);
}

// Literal bytes of `c` that are neither '*' nor part of a `{name}`
// placeholder (name: one or more of [A-Za-z0-9_]), counted naively.
inline size_t NaiveRankBytes(std::string_view c) {
  size_t bytes = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] == '{') {
      size_t end = i + 1;
      while (end < c.size() &&
             (std::isalnum(static_cast<unsigned char>(c[end])) != 0 ||
              c[end] == '_')) {
        ++end;
      }
      if (end > i + 1 && end < c.size() && c[end] == '}') {
        i = end;
        continue;
      }
    }
    bytes += c[i] != '*';
  }
  return bytes;
}

// Tier, operator, literal bytes outside placeholders, then earlier policy
// and pattern: compared as a tuple, larger wins.
inline std::tuple<int, bool, size_t, int, int> NaiveRank(const Policy& p,
                                                         PolicyId id,
                                                         size_t pattern) {
  const std::string c = NaiveCanonical(p.match[pattern]);
  const internal::PatternShape shape = internal::ShapeOf(c);
  int tier = 0;
  if (c == kFallbackRouteKey) {
    tier = 1;
  } else if (shape.kind == internal::PatternKind::kExact) {
    tier = 3;
  } else if (shape.literal_bytes > 0) {
    tier = 2;
  }
  return {tier, !p.builtin, NaiveRankBytes(c), -static_cast<int>(id),
          -static_cast<int>(pattern)};
}

// A scope's policies apply when the request has its subject; room-scope ones
// only on routes whose key names a room.
inline bool NaiveHasSubject(Scope scope, std::string_view route_key,
                            RequestSubjects subjects) {
  switch (scope) {
    case Scope::kIp:
      return true;
    case Scope::kUser:
      return subjects.user;
    case Scope::kOrigin:
      return subjects.origin;
    case Scope::kTarget:
      return subjects.target;
    case Scope::kRoom:
      return route_key.find("{roomId}") != std::string_view::npos ||
             route_key.find("{roomIdOrAlias}") != std::string_view::npos;
  }
  return false;
}

inline NaiveResolution NaiveResolve(const PolicySet& set,
                                    std::string_view method,
                                    std::string_view route_key,
                                    std::string_view path,
                                    RequestSubjects subjects) {
  const std::string key = NaiveCanonical(route_key);
  const std::string canonical_path = internal::CanonicalPath(path);
  NaiveResolution out;
  std::map<NaiveSlot, std::tuple<int, bool, size_t, int, int>> best_rank;
  for (PolicyId id = 0; id < set.size(); ++id) {
    const Policy& p = set.policy(id);
    if (!NaiveHasSubject(p.scope, route_key, subjects)) continue;
    bool query_ok = true;
    for (const std::string& a : p.query_absent) {
      query_ok &= !NaiveQueryHas(subjects.request_target, a);
    }
    for (const std::string& q : p.query_present) {
      query_ok &= NaiveQueryHas(subjects.request_target, q);
    }
    if (!query_ok) continue;
    bool method_ok = p.methods.empty();
    for (const std::string& m : p.methods) method_ok |= m == method;
    if (!method_ok) continue;
    for (size_t j = 0; j < p.match.size(); ++j) {
      const std::string c = NaiveCanonical(p.match[j]);
      const bool hit =
          internal::GlobMatch(c, key) ||
          (c != kFallbackRouteKey && internal::GlobMatch(c, canonical_path));
      if (!hit) continue;
      const NaiveSlot slot = NaiveSlotOf(set, id);
      const auto rank = NaiveRank(p, id, j);
      auto it = best_rank.find(slot);
      if (it == best_rank.end() || rank > it->second) {
        best_rank[slot] = rank;
        out[slot] = id;
      }
    }
  }
  return out;
}

// `Resolve`'s answer in the same shape.
inline NaiveResolution NaiveResolve(const PolicySet& set,
                                    std::string_view method,
                                    std::string_view route_key,
                                    std::string_view path, bool has_user) {
  return NaiveResolve(set, method, route_key, path, RequestSubjects{has_user});
}

inline NaiveResolution AsNaive(const PolicySet& set,
                               const PolicySet::Resolution& r) {
  NaiveResolution out;
  for (const ResolvedPolicy& a : r.all()) {
    out[NaiveSlotOf(set, a.policy)] = a.policy;
  }
  return out;
}

// The resolution `Explain`'s chosen policies describe (Explain lists groups
// in resolution order).
inline PolicySet::Resolution ResolutionFromExplain(
    const PolicySet& set, const std::vector<PolicyMatch>& matches) {
  PolicySet::Resolution want;
  // Plain unless a chosen policy is of another scope, in flight, delaying,
  // weighs bytes or is charged on the response.
  want.plain = true;
  for (const PolicyMatch& m : matches) {
    if (m.verdict != MatchVerdict::kChosen) continue;
    want.applied[want.count++] =
        ResolvedPolicy{m.policy, m.bucket_route, m.layer, m.scope, m.shadow};
    const Policy& p = set.policy(m.policy);
    if ((m.scope != Scope::kIp && m.scope != Scope::kUser) ||
        p.concurrency.has_value() || p.on_limit == OnLimit::kDelay ||
        p.cost != CostKind::kRequests || ChargedOnResponse(p)) {
      want.plain = false;
    }
    if (p.cost != CostKind::kRequests || p.charge != ChargeOn::kRequest) {
      want.weighed = true;
    }
    if (m.layer != 0 || m.shadow || p.concurrency.has_value() ||
        !p.query_absent.empty() || !p.query_present.empty()) {
      continue;
    }
    (m.scope == Scope::kIp ? want.ip : want.user) = m.policy;
    (m.scope == Scope::kIp ? want.ip_bucket_route : want.user_bucket_route) =
        m.bucket_route;
  }
  return want;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_NAIVE_RESOLVE_H_
