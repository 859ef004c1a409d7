#include "mxlimit/limiter.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit {

// The bucket one scope would charge for one request.
struct Limiter::ScopePlan {
  PolicyId policy = kNoPolicy;
  const Policy* spec = nullptr;
  // True for limited rates; unlimited and blocked ones need no state.
  bool needs_bucket = false;
};

struct Limiter::Plan {
  Route route;
  ScopePlan ip;
  ScopePlan user;
  internal::IpBucketKey ip_key;
  internal::UserBucketKey user_key;
};

namespace {

GcraResult Evaluate(const Rate& rate, const GcraState* state, MonotonicTime now,
                    int64_t cost) {
  static constexpr GcraState kFull;
  return GcraPeek(rate, state != nullptr ? *state : kFull, now, cost);
}

// A denial charges nothing, but a TAT that a clock stepping backwards left
// more than tau ahead of `now` is pulled back to now + tau, as `GcraCheck`
// does. Without this the evaluation clamps the wait to tau on every call
// while the stored TAT stays days ahead: the client is told to retry in one
// interval and then denied again until the clock catches up with the old
// timeline. A no-op for any state a forward-running clock produced.
void PersistPullBack(const Rate& rate, GcraState& state, MonotonicTime now) {
  if (rate.kind() != Rate::Kind::kLimited) return;
  const int64_t clamped = internal::ClampNow(now);
  const int64_t ahead = internal::GcraAhead(rate, state, clamped);
  if (ahead > 0) state.tat = clamped + ahead;
}

}  // namespace

Limiter::Limiter(const TableOptions& tables)
    : tables_(tables),
      user_key_secret_(internal::RandomSipKey()),
      ip_table_(tables.ip_capacity),
      user_table_(tables.user_capacity) {}

Limiter::~Limiter() = default;

absl::StatusOr<std::unique_ptr<Limiter>> Limiter::Create(
    const LimiterConfig& config) {
  absl::Status tables_ok = ValidateTableOptions(config.tables);
  if (!tables_ok.ok()) return tables_ok;
  std::unique_ptr<Limiter> limiter(new Limiter(config.tables));
  absl::Status installed = limiter->Install(config);
  if (!installed.ok()) return installed;
  return limiter;
}

absl::Status Limiter::Reload(const LimiterConfig& config) {
  const TableOptions& t = config.tables;
  if (t.ip_capacity != tables_.ip_capacity ||
      t.user_capacity != tables_.user_capacity ||
      t.ipv4_prefix != tables_.ipv4_prefix ||
      t.ipv6_prefix != tables_.ipv6_prefix) {
    return absl::FailedPreconditionError(
        "tables: capacities and prefixes are fixed at start-up; restart to "
        "change them (the old policies stay in force)");
  }
  return Install(config);
}

absl::Status Limiter::Install(const LimiterConfig& config) {
  // Everything that can fail happens before anything is replaced, so a
  // rejected config never half-applies.
  absl::StatusOr<PolicySet> compiled = PolicySet::Compile(
      config.policies, config.builtin_policies, normalizer_.keys());
  if (!compiled.ok()) return compiled.status();
  auto next = std::make_unique<PolicySet>(*std::move(compiled));

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
  ip_table_.EraseIf(
      [&](const internal::IpBucketKey& k, const GcraState&) {
        return !kept[k.policy];
      });
  user_table_.EraseIf(
      [&](const internal::UserBucketKey& k, const GcraState&) {
        return !kept[k.policy];
      });

  // Carry over per-policy counters of policies that kept their name.
  std::vector<PolicyCounters> counters(next->size());
  if (policies_ != nullptr) {
    for (PolicyId n = 0; n < next->size(); ++n) {
      std::optional<PolicyId> old = policies_->Find(next->policy(n).name);
      if (old.has_value()) counters[n] = policy_counters_[*old];
    }
  }

  absl::flat_hash_set<std::string> users(config.exempt.users.begin(),
                                         config.exempt.users.end());
  policies_ = std::move(next);
  bucket_token_ = std::move(tokens);
  policy_counters_ = std::move(counters);
  exempt_ips_ = config.exempt.ips;
  exempt_users_ = std::move(users);
  return absl::OkStatus();
}

bool Limiter::IsExempt(const Request& request) const {
  if (request.exempt) return true;
  for (const Cidr& net : exempt_ips_) {
    if (net.Contains(request.client)) return true;
  }
  return !request.user_id.empty() && !exempt_users_.empty() &&
         exempt_users_.contains(internal::ToAbsl(request.user_id));
}

Limiter::Plan Limiter::MakePlan(const Request& request) const {
  Plan plan;
  plan.route = normalizer_.Normalize(request.method, request.target);
  const bool has_user = !request.user_id.empty();
  PolicySet::Resolution r = policies_->Resolve(
      request.method, plan.route.id, QueryFreePath(request.target), has_user);
  if (r.ip != kNoPolicy) {
    plan.ip.policy = r.ip;
    plan.ip.spec = &policies_->policy(r.ip);
    plan.ip.needs_bucket = plan.ip.spec->rate.kind() == Rate::Kind::kLimited;
    if (plan.ip.needs_bucket) {
      plan.ip_key = internal::IpBucketKey::Make(
          MaskAddress(request.client, tables_.ipv4_prefix, tables_.ipv6_prefix),
          bucket_token_[r.ip], r.ip_bucket_route);
    }
  }
  if (r.user != kNoPolicy) {
    plan.user.policy = r.user;
    plan.user.spec = &policies_->policy(r.user);
    plan.user.needs_bucket =
        plan.user.spec->rate.kind() == Rate::Kind::kLimited;
    if (plan.user.needs_bucket) {
      plan.user_key = internal::UserBucketKey::Make(
          request.user_id, bucket_token_[r.user], r.user_bucket_route,
          user_key_secret_);
    }
  }
  return plan;
}

Decision Limiter::Decide(const Request& request, const Plan& plan,
                         const GcraState* ip_state,
                         const GcraState* user_state,
                         MonotonicTime now) const {
  Decision d;
  d.route_id = plan.route.id;
  d.route_key = plan.route.key;
  d.ip_policy = plan.ip.policy;
  d.user_policy = plan.user.policy;
  d.remaining = kUnlimitedRemaining;
  const int64_t cost = std::max<int64_t>(request.cost, 0);

  auto consider = [&](const ScopePlan& scope, const GcraState* state,
                      LimitScope which) {
    if (scope.spec == nullptr) return;
    GcraResult r = Evaluate(scope.spec->rate, state, now, cost);
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
  consider(plan.ip, ip_state, LimitScope::kIp);
  consider(plan.user, user_state, LimitScope::kUser);
  return d;
}

Decision Limiter::Check(const Request& request, MonotonicTime now) {
  if (IsExempt(request)) {
    ++exempt_requests_;
    Decision d;
    d.exempt = true;
    d.remaining = kUnlimitedRemaining;
    return d;
  }
  const Plan plan = MakePlan(request);
  // Start both tables' memory loads before waiting on either.
  if (plan.ip.needs_bucket) ip_table_.Prefetch(plan.ip_key);
  if (plan.user.needs_bucket) user_table_.Prefetch(plan.user_key);
  GcraState* ip_state =
      plan.ip.needs_bucket ? ip_table_.FindOrAdmit(plan.ip_key) : nullptr;
  GcraState* user_state =
      plan.user.needs_bucket ? user_table_.FindOrAdmit(plan.user_key) : nullptr;

  Decision d = Decide(request, plan, ip_state, user_state, now);
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  auto settle = [&](const ScopePlan& scope, GcraState* state,
                    LimitScope which) {
    if (scope.spec == nullptr) return;
    // Denied and shadow-denied buckets are not charged; they still need it.
    if (state != nullptr) PersistPullBack(scope.spec->rate, *state, now);
    PolicyCounters& c = policy_counters_[scope.policy];
    const bool shadow_hit =
        d.shadow_denied && scope.spec->shadow_mode &&
        d.shadow_policy.data() == scope.spec->name.data();
    if (d.allowed) {
      if (shadow_hit) {
        ++c.shadow_denied;  // Would have denied: counted, never charged.
      } else {
        ++c.allowed;
        if (state != nullptr) GcraCharge(scope.spec->rate, *state, now, cost);
      }
    } else if (d.limited_by == which ||
               !Evaluate(scope.spec->rate, state, now, cost).allowed) {
      if (!scope.spec->shadow_mode) ++c.denied;
    }
  };
  settle(plan.ip, ip_state, LimitScope::kIp);
  settle(plan.user, user_state, LimitScope::kUser);
  return d;
}

Decision Limiter::Peek(const Request& request, MonotonicTime now) const {
  if (IsExempt(request)) {
    Decision d;
    d.exempt = true;
    d.remaining = kUnlimitedRemaining;
    return d;
  }
  const Plan plan = MakePlan(request);
  const GcraState* ip_state =
      plan.ip.needs_bucket ? ip_table_.Peek(plan.ip_key) : nullptr;
  const GcraState* user_state =
      plan.user.needs_bucket ? user_table_.Peek(plan.user_key) : nullptr;
  return Decide(request, plan, ip_state, user_state, now);
}

void Limiter::Charge(const Request& request, MonotonicTime now) {
  if (IsExempt(request)) return;
  const Plan plan = MakePlan(request);
  if (plan.ip.needs_bucket) {
    GcraCharge(plan.ip.spec->rate, *ip_table_.FindOrAdmit(plan.ip_key), now,
               request.cost);
  }
  if (plan.user.needs_bucket) {
    GcraCharge(plan.user.spec->rate, *user_table_.FindOrAdmit(plan.user_key),
               now, request.cost);
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
  const Plan plan = MakePlan(request);
  auto route_part = [&](RouteId bucket_route) -> std::string {
    if (bucket_route == kSharedBucketRoute) return "* (shared)";
    return std::string(normalizer_.key(bucket_route));
  };
  const PolicySet::Resolution r =
      policies_->Resolve(request.method, plan.route.id,
                         QueryFreePath(request.target), !request.user_id.empty());
  if (plan.ip.needs_bucket) {
    out.push_back(absl::StrCat(
        "ip ",
        FormatIpAddress(MaskAddress(request.client, tables_.ipv4_prefix,
                                    tables_.ipv6_prefix)),
        " | policy ", plan.ip.spec->name, " | route ",
        route_part(r.ip_bucket_route)));
  }
  if (plan.user.needs_bucket) {
    out.push_back(absl::StrCat(
        "user ", internal::ToAbsl(request.user_id), " | policy ",
        plan.user.spec->name, " | route ", route_part(r.user_bucket_route)));
  }
  return out;
}

}  // namespace mxlimit
