// Engine's cold paths: building an engine, and reloading its policies in
// two steps (check and compile, which may fail; install, which may not), so
// that a ShardedLimiter compiles a config once for all its shards. The
// request path is in engine.cc.

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/engine/engine.h"
#include "src/policy/idle_checks.h"

namespace mxlimit::internal {

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const LimiterConfig& config) {
  absl::Status tables_ok = ValidateTableOptions(config.tables);
  if (!tables_ok.ok()) return tables_ok;
  absl::StatusOr<std::unique_ptr<RouteNormalizer>> normalizer =
      RouteNormalizer::Create(config.routes);
  if (!normalizer.ok()) return normalizer.status();
  auto engine = std::make_unique<Engine>(
      config.tables,
      std::shared_ptr<const RouteNormalizer>(*std::move(normalizer)),
      RandomSipKey());
  absl::StatusOr<std::shared_ptr<const PolicySet>> compiled =
      CompilePolicies(config, *engine->normalizer_);
  if (!compiled.ok()) return compiled.status();
  absl::StatusOr<std::shared_ptr<const TierSet>> tiers =
      CompileTiers(config, **compiled);
  if (!tiers.ok()) return tiers.status();
  engine->Install(*std::move(compiled), config.exempt, *std::move(tiers));
  return engine;
}

absl::Status Engine::CheckTablesUnchanged(const TableOptions& current,
                                          const TableOptions& next) {
  // Names every difference, and says when the new value is the default: a
  // file that merely leaves out a customised `tables:` section lands here,
  // and "fixed at start-up" alone would not tell its author why.
  static const TableOptions kDefaults;
  std::string changes;
  auto compare = [&](std::string_view field, auto running, auto wanted,
                     auto fallback) {
    if (running == wanted) return;
    absl::StrAppend(&changes, changes.empty() ? "" : "; ",
                    internal::ToAbsl(field), " ", running, " in force, ",
                    wanted, " in the new config",
                    wanted == fallback ? " (the default: is `tables:` "
                                         "left out there?)"
                                       : "");
  };
  compare("tables.ip.capacity", current.ip_capacity, next.ip_capacity,
          kDefaults.ip_capacity);
  compare("tables.ip.ipv4_prefix", current.ipv4_prefix, next.ipv4_prefix,
          kDefaults.ipv4_prefix);
  compare("tables.ip.ipv6_prefix", current.ipv6_prefix, next.ipv6_prefix,
          kDefaults.ipv6_prefix);
  compare("tables.user.capacity", current.user_capacity, next.user_capacity,
          kDefaults.user_capacity);
  compare("tables.origin.capacity", current.origin_capacity,
          next.origin_capacity, kDefaults.origin_capacity);
  compare("tables.room.capacity", current.room_capacity, next.room_capacity,
          kDefaults.room_capacity);
  compare("tables.target.capacity", current.target_capacity,
          next.target_capacity, kDefaults.target_capacity);
  compare("tables.leases.capacity", current.lease_capacity, next.lease_capacity,
          kDefaults.lease_capacity);
  if (changes.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "tables: capacities and prefixes are fixed at start-up; restart to "
      "change them (the old policies stay in force): ",
      changes));
}

absl::Status Engine::CheckRoutesUnchanged(const RouteNormalizer& current,
                                          const RouteOptions& next) {
  const RouteOptions& running = current.options();
  for (const std::string& name : next.packs) {
    if (std::find(RoutePackNames().begin(), RoutePackNames().end(), name) ==
        RoutePackNames().end()) {
      return ValidateRouteOptions(next);  // names the unknown pack
    }
  }
  if (SameRouteTable(running, next)) return absl::OkStatus();
  static const RouteOptions kDefaults;
  std::string changes;
  const std::vector<std::string> wanted = ActiveRoutePacks(next);
  if (running.packs != wanted) {
    absl::StrAppend(&changes, "routes.packs [",
                    absl::StrJoin(running.packs, ", "), "] in force, [",
                    absl::StrJoin(wanted, ", "), "] in the new config");
  }
  if (running.extra != next.extra) {
    absl::StrAppend(&changes, changes.empty() ? "" : "; ", "routes.extra ",
                    running.extra.size(), " templates in force, ",
                    next.extra.size(), " in the new config");
    for (size_t i = 0; i < std::min(running.extra.size(), next.extra.size());
         ++i) {
      if (running.extra[i] != next.extra[i]) {
        absl::StrAppend(&changes, ", the first difference at routes.extra[", i,
                        "]");
        break;
      }
    }
  }
  if (SameRouteTable(next, kDefaults)) {
    absl::StrAppend(&changes, " (the default: is `routes:` left out there?)");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "routes: packs and extra templates are fixed at start-up (route ids key "
      "the buckets); restart to change them (the old policies stay in "
      "force): ",
      changes));
}

absl::Status Engine::Reload(const LimiterConfig& config) {
  absl::Status tables_ok = CheckTablesUnchanged(tables_, config.tables);
  if (!tables_ok.ok()) return tables_ok;
  absl::Status routes_ok = CheckRoutesUnchanged(*normalizer_, config.routes);
  if (!routes_ok.ok()) return routes_ok;
  // Everything that can fail happens before anything is replaced, so a
  // rejected config never half-applies.
  absl::StatusOr<std::shared_ptr<const PolicySet>> compiled =
      CompilePolicies(config, *normalizer_);
  if (!compiled.ok()) return compiled.status();
  absl::StatusOr<std::shared_ptr<const TierSet>> tiers =
      CompileTiers(config, **compiled);
  if (!tiers.ok()) return tiers.status();
  Install(*std::move(compiled), config.exempt, *std::move(tiers));
  return absl::OkStatus();
}

namespace {

// The bucket token a lease group's key carries (see LeaseGroupKey::Of).
uint16_t LeaseToken(const LeaseGroupKey& g) {
  if (g.words[0] == static_cast<uint8_t>(Scope::kIp)) {
    IpBucketKey k;
    std::memcpy(static_cast<void*>(&k), &g.words[1], sizeof(k));
    return k.policy;
  }
  UserBucketKey k;
  std::memcpy(static_cast<void*>(&k), &g.words[1], sizeof(k));
  return k.policy();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const PolicySet>> Engine::CompilePolicies(
    const LimiterConfig& config, const RouteNormalizer& normalizer) {
  absl::StatusOr<PolicySet> compiled = PolicySet::Compile(
      config.policies, config.builtin_policies, normalizer.keys(),
      config.shadow_mode, normalizer.forms());
  if (!compiled.ok()) return compiled.status();
  return std::make_shared<const PolicySet>(*std::move(compiled));
}

absl::StatusOr<std::shared_ptr<const TierSet>> Engine::CompileTiers(
    const LimiterConfig& config, const PolicySet& policies) {
  return TierSet::Compile(config.tiers, policies);
}

void EraseStaleShared(ScopeTables& tables, const std::vector<bool>& kept) {
  // A token handed out again must not inherit another policy's buckets or
  // leases.
  ScopeTablesLock lock;
  lock.Hold(tables);
  for (Scope scope : {Scope::kOrigin, Scope::kRoom, Scope::kTarget}) {
    tables.of(scope).EraseIf(
        [&](const internal::UserBucketKey& k, const GcraState&) {
          return !kept[k.policy()];
        });
  }
  tables.leases.EraseIf(
      [&](const LeaseGroupKey& g) { return !kept[LeaseToken(g)]; });
}

void Engine::Install(std::shared_ptr<const PolicySet> next,
                     const ExemptOptions& exempt,
                     std::shared_ptr<const TierSet> tiers,
                     std::vector<bool>* kept_tokens) {
  // A policy keeps its bucket token (and so its buckets) when its name is
  // in both sets and KeepsBuckets (policy.h) says so; every other token is
  // free, and the buckets still carrying one are dropped before it is handed
  // out again.
  std::vector<uint16_t> tokens(next->size(), 0);
  std::vector<bool> kept(size_t{1} << 16, false);
  std::vector<bool> assigned(next->size(), false);
  for (PolicyId n = 0; policies_ != nullptr && n < next->size(); ++n) {
    const Policy& np = next->policy(n);
    std::optional<PolicyId> o = policies_->Find(np.name);
    if (!o.has_value()) continue;
    const Policy& op = policies_->policy(*o);
    if (KeepsBuckets(op, np)) {
      tokens[n] = bucket_token_[*o];
      assigned[n] = true;
      kept[tokens[n]] = true;
    }
  }
  uint32_t candidate = 0;
  for (size_t n = 0; n < next->size(); ++n) {
    if (assigned[n]) continue;
    while (kept[candidate]) ++candidate;
    tokens[n] = static_cast<uint16_t>(candidate++);
  }
  // The sweep that drops the freed tokens' buckets also finds the latest
  // TAT of the kept buckets whose policy idles (IdleChecks): a policy may
  // keep buckets it charged before it idled, or restored ones.
  idle_tokens_.clear();
  for (size_t n = 0; n < next->size(); ++n) {
    if (IdlesWhileRoomy(next->policy(static_cast<PolicyId>(n)))) {
      idle_tokens_.push_back(tokens[n]);
    }
  }
  int64_t idle_tat = std::numeric_limits<int64_t>::min();
  auto sweep = [&](uint16_t token, const GcraState& state) {
    if (!kept[token]) return true;
    if (IdleToken(token)) idle_tat = std::max(idle_tat, state.tat);
    return false;
  };
  ip_table_.EraseIf([&](const internal::IpBucketKey& k, const GcraState& g) {
    return sweep(k.policy, g);
  });
  user_table_.EraseIf([&](const internal::UserBucketKey& k,
                          const GcraState& g) { return sweep(k.policy(), g); });
  if (kept_tokens != nullptr) {
    *kept_tokens = kept;
  } else {
    EraseStaleShared(*scope_tables_, kept);
  }

  // Carry over per-policy counters of policies that kept their name.
  std::vector<PolicyCounters> counters(next->size());
  if (policies_ != nullptr) {
    for (size_t n = 0; n < next->size(); ++n) {
      std::optional<PolicyId> old =
          policies_->Find(next->policy(static_cast<PolicyId>(n)).name);
      if (old.has_value()) counters[n] = policy_counters_[*old];
    }
  }

  std::vector<AddressMasker> masks;
  masks.reserve(next->size());
  for (const Policy& p : next->policies()) {
    if (p.client_prefix.has_value()) {
      masks.emplace_back(p.client_prefix->ipv4, p.client_prefix->ipv6);
    } else if (p.scope == Scope::kOrigin) {
      masks.emplace_back(kOriginNetworkPrefix.ipv4, kOriginNetworkPrefix.ipv6);
    } else {
      masks.push_back(client_mask_);
    }
  }

  absl::flat_hash_set<std::string> users(exempt.users.begin(),
                                         exempt.users.end());
  policies_ = std::move(next);
  ip_masks_ = std::move(masks);
  bucket_token_ = std::move(tokens);
  policy_counters_ = std::move(counters);
  exempt_ips_ = exempt.ips;
  exempt_users_ = std::move(users);
  has_exemptions_ = !exempt_ips_.empty() || !exempt_users_.empty();
  if (owns_tier_directory_) tier_directory_->Install(tiers);
  tiers_ = std::move(tiers);
  early_ = FindEarlyLoads(*policies_);
  early_loads_ = early_.ip != kNoPolicy || early_.user != kNoPolicy;
  idle_tat_ = idle_tat;
  idle_slack_ = IdleSlack(*policies_, tiers_.get());
  UpdateIdleFrom();
}

}  // namespace mxlimit::internal
