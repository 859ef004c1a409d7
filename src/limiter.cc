#include "mxlimit/limiter.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/route_trie.h"

// `Check` inlines its whole call tree from this file (Evaluate, Resolve, the
// tables, Combine, Settle*), so the evaluation stays in registers rather than
// crossing five calls as a 240-byte struct; the out-of-line forms remain for
// ShardedLimiter and Peek. Needs -fno-semantic-interposition under -fPIC
// (CMakeLists.txt), else GCC may not inline exported functions at all.
#if defined(__GNUC__)
#define MXLIMIT_FLATTEN __attribute__((flatten))
#else
#define MXLIMIT_FLATTEN
#endif

namespace mxlimit {

namespace {

// What one bucket (null: a fresh one) says about a request; changes nothing.
GcraResult EvaluateBucket(const Rate& rate, const GcraState* state,
                          MonotonicTime now, int64_t cost) {
  static constexpr GcraState kFull;
  return GcraPeek(rate, state != nullptr ? *state : kFull, now, cost);
}

// How far the bucket's TAT lies ahead of `now`, in [0, tau] (0 for a fresh
// bucket): all that settling it needs, see Limiter::Settle.
int64_t BucketLead(const Rate& rate, const GcraState* state,
                   MonotonicTime now) {
  if (state == nullptr || rate.kind() != Rate::Kind::kLimited) return 0;
  return internal::GcraAhead(rate, *state, internal::ClampNow(now));
}

}  // namespace

Limiter::Limiter(const TableOptions& tables,
                 std::shared_ptr<const RouteNormalizer> normalizer)
    : tables_(tables),
      client_mask_(tables.ipv4_prefix, tables.ipv6_prefix),
      normalizer_(std::move(normalizer)),
      user_key_secret_(internal::RandomSipKey()),
      ip_table_(tables.ip_capacity),
      user_table_(tables.user_capacity) {}

Limiter::~Limiter() = default;

absl::StatusOr<std::unique_ptr<Limiter>> Limiter::Create(
    const LimiterConfig& config) {
  absl::Status tables_ok = ValidateTableOptions(config.tables);
  if (!tables_ok.ok()) return tables_ok;
  std::unique_ptr<Limiter> limiter(
      new Limiter(config.tables, std::make_shared<const RouteNormalizer>()));
  absl::StatusOr<std::shared_ptr<const PolicySet>> compiled =
      CompilePolicies(config, *limiter->normalizer_);
  if (!compiled.ok()) return compiled.status();
  limiter->Install(*std::move(compiled), config.exempt);
  return limiter;
}

absl::Status Limiter::CheckTablesUnchanged(const TableOptions& current,
                                           const TableOptions& next) {
  if (next.ip_capacity != current.ip_capacity ||
      next.user_capacity != current.user_capacity ||
      next.ipv4_prefix != current.ipv4_prefix ||
      next.ipv6_prefix != current.ipv6_prefix) {
    return absl::FailedPreconditionError(
        "tables: capacities and prefixes are fixed at start-up; restart to "
        "change them (the old policies stay in force)");
  }
  return absl::OkStatus();
}

absl::Status Limiter::Reload(const LimiterConfig& config) {
  absl::Status tables_ok = CheckTablesUnchanged(tables_, config.tables);
  if (!tables_ok.ok()) return tables_ok;
  // Everything that can fail happens before anything is replaced, so a
  // rejected config never half-applies.
  absl::StatusOr<std::shared_ptr<const PolicySet>> compiled =
      CompilePolicies(config, *normalizer_);
  if (!compiled.ok()) return compiled.status();
  Install(*std::move(compiled), config.exempt);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const PolicySet>> Limiter::CompilePolicies(
    const LimiterConfig& config, const RouteNormalizer& normalizer) {
  absl::StatusOr<PolicySet> compiled = PolicySet::Compile(
      config.policies, config.builtin_policies, normalizer.keys());
  if (!compiled.ok()) return compiled.status();
  return std::make_shared<const PolicySet>(*std::move(compiled));
}

void Limiter::Install(std::shared_ptr<const PolicySet> next,
                      const ExemptOptions& exempt) {
  // A policy keeps its bucket token (and so its buckets) when its name,
  // scope, rate and sharing are unchanged; every other token is free, and
  // the buckets still carrying one are dropped before it is handed out again.
  std::vector<uint16_t> tokens(next->size(), 0);
  std::vector<bool> kept(size_t{1} << 16, false);
  std::vector<bool> assigned(next->size(), false);
  for (PolicyId n = 0; policies_ != nullptr && n < next->size(); ++n) {
    const Policy& np = next->policy(n);
    std::optional<PolicyId> o = policies_->Find(np.name);
    if (!o.has_value()) continue;
    const Policy& op = policies_->policy(*o);
    if (op.scope == np.scope && op.rate == np.rate &&
        op.share_threshold == np.share_threshold) {
      tokens[n] = bucket_token_[*o];
      assigned[n] = true;
      kept[tokens[n]] = true;
    }
  }
  uint32_t candidate = 0;
  for (PolicyId n = 0; n < next->size(); ++n) {
    if (assigned[n]) continue;
    while (kept[candidate]) ++candidate;
    tokens[n] = static_cast<uint16_t>(candidate++);
  }
  ip_table_.EraseIf([&](const internal::IpBucketKey& k, const GcraState&) {
    return !kept[k.policy];
  });
  user_table_.EraseIf([&](const internal::UserBucketKey& k, const GcraState&) {
    return !kept[k.policy()];
  });

  // Carry over per-policy counters of policies that kept their name.
  std::vector<PolicyCounters> counters(next->size());
  if (policies_ != nullptr) {
    for (PolicyId n = 0; n < next->size(); ++n) {
      std::optional<PolicyId> old = policies_->Find(next->policy(n).name);
      if (old.has_value()) counters[n] = policy_counters_[*old];
    }
  }

  absl::flat_hash_set<std::string> users(exempt.users.begin(),
                                         exempt.users.end());
  policies_ = std::move(next);
  bucket_token_ = std::move(tokens);
  policy_counters_ = std::move(counters);
  exempt_ips_ = exempt.ips;
  exempt_users_ = std::move(users);
  has_exemptions_ = !exempt_ips_.empty() || !exempt_users_.empty();
}

Decision Limiter::ExemptDecision(const Route& route) {
  Decision d;
  d.exempt = true;
  d.remaining = kUnlimitedRemaining;
  d.route_id = route.id;
  d.route_key = route.key;
  return d;
}

bool Limiter::IsExempt(const Request& request) const {
  if (request.exempt) return true;
  for (const Cidr& net : exempt_ips_) {
    if (net.Contains(request.client)) return true;
  }
  return !request.user_id.empty() && !exempt_users_.empty() &&
         exempt_users_.contains(internal::ToAbsl(request.user_id));
}

void Limiter::Resolve(const Request& request, ScopeMask mask, Evaluation& e,
                      const Route* route) const {
  // Written in place: a returned key copied whole would stall
  // store-to-load forwarding (it is built a word at a time).
  BucketKeys& keys = e.keys;
  std::string_view path;
  if (route != nullptr) {
    e.route = *route;
    path = QueryFreePath(request.target);
  } else {
    // RouteNormalizer::Normalize, plus the path end found by the same pass;
    // fields are stored one by one (a returned Route copied whole stalled
    // store-to-load forwarding on every request).
    const internal::RouteTrie& trie = *normalizer_->trie_;
    size_t path_size = 0;
    const RouteId id = trie.Match(request.target, &path_size);
    e.route.id = id;
    e.route.key = trie.keys()[id];
    e.route.known = id != kFallbackRouteId;
    path = request.target.substr(0, path_size);
  }
  const PolicySet::Resolution r = policies_->Resolve(
      request.method, e.route.id, path, !request.user_id.empty());
  keys.resolution = r;
  if ((mask & kIpScope) != 0 && r.ip != kNoPolicy) {
    e.ip.policy = r.ip;
    e.ip.spec = &policies_->policy(r.ip);
    if (e.ip.spec->rate.kind() == Rate::Kind::kLimited) {
      keys.has_ip = true;
      keys.ip =
          internal::IpBucketKey::Make(client_mask_.Apply(request.client),
                                      bucket_token_[r.ip], r.ip_bucket_route);
    }
  }
  if ((mask & kUserScope) != 0 && r.user != kNoPolicy) {
    e.user.policy = r.user;
    e.user.spec = &policies_->policy(r.user);
    if (e.user.spec->rate.kind() == Rate::Kind::kLimited) {
      keys.has_user = true;
      keys.user.Assign(request.user_id, bucket_token_[r.user],
                       r.user_bucket_route, user_key_secret_);
    }
  }
}

bool Limiter::MarkExempt(const Request& request, const Route* route,
                         Evaluation& e) const {
  if (!MaybeExempt(request) || !IsExempt(request)) return false;
  e.exempt = true;
  // Still normalized, so the decision and reports name the route.
  e.route = route != nullptr
                ? *route
                : normalizer_->Normalize(request.method, request.target);
  return true;
}

Limiter::Evaluation Limiter::Evaluate(const Request& request, MonotonicTime now,
                                      ScopeMask mask, const Route* route) {
  Evaluation e;
  if (MarkExempt(request, route, e)) {
    ++exempt_requests_;
    return e;
  }
  Resolve(request, mask, e, route);
  const BucketKeys& keys = e.keys;
  // Hash each key once; start both tables' memory loads before waiting on
  // either. Then find both records (prefetching what relinking will touch)
  // so the two tables' misses overlap.
  e.ip.has_bucket = keys.has_ip;
  e.user.has_bucket = keys.has_user;
  if (keys.has_ip) {
    e.ip.hash = ip_table_.Hashed(keys.ip).hash;
    ip_table_.Prefetch({&keys.ip, e.ip.hash});
  }
  if (keys.has_user) {
    e.user.hash = user_table_.Hashed(keys.user).hash;
    user_table_.Prefetch({&keys.user, e.user.hash});
  }
  const GcraState* ip_state = nullptr;
  const GcraState* user_state = nullptr;
  if (keys.has_ip) {
    e.ip.slot = ip_table_.Locate({&keys.ip, e.ip.hash});
    ip_state = ip_table_.StateAt(e.ip.slot);
  }
  if (keys.has_user) {
    e.user.slot = user_table_.Locate({&keys.user, e.user.hash});
    user_state = user_table_.StateAt(e.user.slot);
  }
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  if (e.ip.spec != nullptr) {
    e.ip.verdict = EvaluateBucket(e.ip.spec->rate, ip_state, now, cost);
    e.ip.lead = BucketLead(e.ip.spec->rate, ip_state, now);
  }
  if (e.user.spec != nullptr) {
    e.user.verdict = EvaluateBucket(e.user.spec->rate, user_state, now, cost);
    e.user.lead = BucketLead(e.user.spec->rate, user_state, now);
  }
  return e;
}

Limiter::Evaluation Limiter::Inspect(const Request& request, MonotonicTime now,
                                     ScopeMask mask, const Route* route) const {
  Evaluation e;
  if (MarkExempt(request, route, e)) return e;
  Resolve(request, mask, e, route);
  const BucketKeys& keys = e.keys;
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  if (e.ip.spec != nullptr) {
    e.ip.verdict = EvaluateBucket(
        e.ip.spec->rate, keys.has_ip ? ip_table_.Peek(keys.ip) : nullptr, now,
        cost);
  }
  if (e.user.spec != nullptr) {
    e.user.verdict = EvaluateBucket(
        e.user.spec->rate,
        keys.has_user ? user_table_.Peek(keys.user) : nullptr, now, cost);
  }
  return e;
}

Decision Limiter::Combine(const Evaluation& ip_part,
                          const Evaluation& user_part) {
  Decision d;
  d.route_id = ip_part.route.id;
  d.route_key = ip_part.route.key;
  d.ip_policy = ip_part.ip.policy;
  d.user_policy = user_part.user.policy;
  d.remaining = kUnlimitedRemaining;

  auto consider = [&](const ScopeCheck& scope, LimitScope which) {
    if (scope.spec == nullptr) return;
    const GcraResult& r = scope.verdict;
    if (r.allowed) {
      d.remaining = std::min(d.remaining, r.remaining);
      return;
    }
    if (scope.spec->shadow_mode) {
      d.shadow_denied = true;
      d.shadow_policy = scope.spec->name;
      return;
    }
    // Report the scope with the longer wait; `never` is the longest.
    const bool worse = d.allowed || (r.never && !d.never) ||
                       (!d.never && r.retry_after > d.retry_after);
    d.allowed = false;
    d.remaining = 0;
    if (worse) {
      d.never = r.never;
      d.retry_after = r.retry_after;
      d.limited_by = which;
      d.policy = scope.spec->name;
    }
  };
  consider(ip_part.ip, LimitScope::kIp);
  consider(user_part.user, LimitScope::kUser);
  return d;
}

void Limiter::SettleIp(const Evaluation& e, const Decision& d,
                       MonotonicTime now, int64_t cost) {
  GcraState* bucket =
      e.ip.has_bucket ? ip_table_.Acquire({&e.keys.ip, e.ip.hash}, e.ip.slot)
                      : nullptr;
  Settle(e.ip, bucket, d, now, cost);
}

void Limiter::SettleUser(const Evaluation& e, const Decision& d,
                         MonotonicTime now, int64_t cost) {
  GcraState* bucket =
      e.user.has_bucket
          ? user_table_.Acquire({&e.keys.user, e.user.hash}, e.user.slot)
          : nullptr;
  Settle(e.user, bucket, d, now, cost);
}

void Limiter::Settle(const ScopeCheck& scope, GcraState* bucket,
                     const Decision& d, MonotonicTime now, int64_t cost) {
  if (scope.spec == nullptr) return;
  const bool charged = scope.verdict.allowed && d.allowed;
  if (bucket != nullptr) {
    // The bucket is as Evaluate found it (nothing touches a table between
    // Evaluate and Settle), so its lead is still `scope.lead`, and the new
    // TAT is what GcraCheck would store: now + lead + cost * interval when
    // charged (the verdict proved that within tau), else now + lead. The
    // latter changes nothing unless a clock stepping backwards left the TAT
    // more than tau ahead: the pull-back is kept, so the client is not told
    // to retry in one interval and then denied until the clock catches up.
    const int64_t base = internal::ClampNow(now) + scope.lead;
    if (charged) {
      bucket->tat = base + cost * scope.spec->rate.interval_ns();
    } else if (scope.lead > 0) {
      bucket->tat = base;
    }
  }
  PolicyCounters& c = policy_counters_[scope.policy];
  if (charged) {
    ++c.allowed;
  } else if (!scope.verdict.allowed) {
    // Denied and shadow-denied buckets are never charged. A shadow denial
    // is counted only when the request went through (the other scope may
    // have denied it for real).
    if (!scope.spec->shadow_mode) {
      ++c.denied;
    } else if (d.allowed) {
      ++c.shadow_denied;
    }
  }
  // Allowed here but denied by the other scope: nothing happened.
}

MXLIMIT_FLATTEN Decision Limiter::Check(const Request& request,
                                        MonotonicTime now) {
  const Evaluation e = Evaluate(request, now, kBothScopes);
  // One named result, built in place: returning one of two objects (or a
  // copy of one) made the compiler copy a Decision written field by field
  // with wide loads, which stalls store-to-load forwarding.
  Decision d = e.exempt ? ExemptDecision(e.route) : Combine(e, e);
  if (!e.exempt) {
    const int64_t cost = std::max<int64_t>(request.cost, 0);
    SettleIp(e, d, now, cost);
    SettleUser(e, d, now, cost);
  }
  return d;
}

Decision Limiter::Peek(const Request& request, MonotonicTime now) const {
  const Evaluation e = Inspect(request, now, kBothScopes);
  if (e.exempt) return ExemptDecision(e.route);
  return Combine(e, e);
}

void Limiter::Charge(const Request& request, MonotonicTime now) {
  ChargeScopes(request, now, kBothScopes);
}

void Limiter::ChargeScopes(const Request& request, MonotonicTime now,
                           ScopeMask mask) {
  if (IsExempt(request)) return;
  Evaluation e;
  Resolve(request, mask, e);
  const BucketKeys& keys = e.keys;
  if (keys.has_ip) {
    GcraCharge(e.ip.spec->rate, *ip_table_.FindOrAdmit(keys.ip), now,
               request.cost);
  }
  if (keys.has_user) {
    GcraCharge(e.user.spec->rate, *user_table_.FindOrAdmit(keys.user), now,
               request.cost);
  }
}

LimiterStats Limiter::Stats() const {
  LimiterStats s;
  auto table = [](const auto& t) {
    TableStats out;
    out.size = t.size();
    out.capacity = t.capacity();
    out.admissions = t.admissions();
    out.evictions = t.evictions();
    out.hits = t.hits();
    return out;
  };
  s.ip_table = table(ip_table_);
  s.user_table = table(user_table_);
  s.exempt = exempt_requests_;
  s.policies.reserve(policies_->size());
  for (PolicyId id = 0; id < policies_->size(); ++id) {
    const Policy& p = policies_->policy(id);
    s.policies.push_back(
        PolicyStats{p.name, p.scope, p.builtin, policy_counters_[id]});
  }
  return s;
}

std::vector<std::string> Limiter::DescribeBuckets(
    const Request& request) const {
  std::vector<std::string> out;
  if (IsExempt(request)) return out;
  Evaluation e;
  Resolve(request, kBothScopes, e);
  const BucketKeys& keys = e.keys;
  const PolicySet::Resolution& r = keys.resolution;
  auto route_part = [&](RouteId bucket_route) -> std::string {
    if (bucket_route == kSharedBucketRoute) return "* (shared)";
    return std::string(normalizer_->key(bucket_route));
  };
  if (keys.has_ip) {
    out.push_back(
        absl::StrCat("ip ",
                     FormatClientPrefix(request.client, tables_.ipv4_prefix,
                                        tables_.ipv6_prefix),
                     " | policy ", e.ip.spec->name, " | route ",
                     route_part(r.ip_bucket_route)));
  }
  if (keys.has_user) {
    out.push_back(absl::StrCat("user ", internal::ToAbsl(request.user_id),
                               " | policy ", e.user.spec->name, " | route ",
                               route_part(r.user_bucket_route)));
  }
  return out;
}

}  // namespace mxlimit
