#include "src/engine/shard_set.h"

#include <algorithm>
#include <array>
#include <bit>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "src/engine/bucket_keys.h"
#include "src/util/siphash.h"

namespace mxlimit::internal {

namespace {

// Shard `index`'s share of each table: the capacity divided evenly, the
// first `capacity % shards` shards holding one bucket more, so the shards
// together hold exactly the configured capacity (docs/config.md promises the
// total, and a rounded-up share would hold up to shards - 1 more).
// REQUIRES: every capacity is at least `shards` (CheckShardCapacities).
TableOptions ShardTables(const TableOptions& tables, size_t shards,
                         size_t index) {
  auto share = [&](size_t capacity) {
    return capacity / shards + (index < capacity % shards ? 1 : 0);
  };
  TableOptions t = tables;
  t.ip_capacity = share(tables.ip_capacity);
  t.user_capacity = share(tables.user_capacity);
  return t;
}

// Every shard needs a bucket of each table: a shard with none could never
// admit one, and its clients would get fresh buckets on every request.
absl::Status CheckShardCapacities(const TableOptions& tables, size_t shards) {
  for (const auto& [name, capacity] :
       {std::pair<const char*, size_t>{"tables.ip.capacity",
                                       tables.ip_capacity},
        std::pair<const char*, size_t>{"tables.user.capacity",
                                       tables.user_capacity}}) {
    if (capacity < shards) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": got ", capacity, ", expected at least ", shards,
          ", the shard count (each shard holds its share of the table and "
          "needs at least one bucket); raise the capacity or use fewer "
          "shards"));
    }
  }
  return absl::OkStatus();
}

// The coarsest prefixes the per-IP buckets of `config` mask addresses to,
// and never finer than the built-in network layer's.
ClientPrefix ShardPrefixFor(const LimiterConfig& config) {
  ClientPrefix p{std::min(config.tables.ipv4_prefix, 24),
                 std::min(config.tables.ipv6_prefix, 48)};
  for (const Policy& policy : config.policies) {
    if (!policy.client_prefix.has_value() || policy.scope != Scope::kIp) {
      continue;
    }
    p.ipv4 = std::min(p.ipv4, policy.client_prefix->ipv4);
    p.ipv6 = std::min(p.ipv6, policy.client_prefix->ipv6);
  }
  return p;
}

void AddTable(TableStats& sum, const TableStats& t) {
  sum.size += t.size;
  sum.capacity += t.capacity;
  sum.admissions += t.admissions;
  sum.evictions += t.evictions;
  sum.hits += t.hits;
}

void AddCounters(PolicyCounters& sum, const PolicyCounters& c) {
  sum.allowed += c.allowed;
  sum.denied += c.denied;
  sum.never += c.never;
  sum.shadow_denied += c.shadow_denied;
  sum.denied_by_other += c.denied_by_other;
}

}  // namespace

ShardSet::ShardSet(const TableOptions& tables, const ClientPrefix& shard_prefix,
                   size_t shard_count)
    : tables_(tables),
      shard_prefix_(shard_prefix),
      client_mask_(shard_prefix.ipv4, shard_prefix.ipv6),
      shard_count_(shard_count),
      shards_(std::make_unique<Shard[]>(shard_count)) {
  std::array<SipKey, 4> keys;
  RandomSipKeys(keys);
  user_shard_seed_ = {keys[0].k0, keys[0].k1, keys[1].k0,
                      keys[1].k1, keys[2].k0, keys[2].k1};
  user_shard_secret_ = {keys[3].k0, keys[3].k1};
}

ShardSet::~ShardSet() = default;

absl::StatusOr<std::unique_ptr<ShardSet>> ShardSet::Create(
    const LimiterConfig& config, size_t shards, size_t max_shards) {
  if (!std::has_single_bit(shards) || shards > max_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shards: got ", shards,
                     ", expected a power of two from 1 to ", max_shards));
  }
  absl::Status tables_ok = ValidateTableOptions(config.tables);
  if (!tables_ok.ok()) return tables_ok;
  absl::Status capacities_ok = CheckShardCapacities(config.tables, shards);
  if (!capacities_ok.ok()) return capacities_ok;

  std::unique_ptr<ShardSet> set(
      new ShardSet(config.tables, ShardPrefixFor(config), shards));
  // One normalizer for all shards: it is read-only, and one copy stays in
  // cache where sixteen would not. It also lets a request normalized by one
  // shard be resolved by another.
  absl::StatusOr<std::unique_ptr<RouteNormalizer>> normalizer =
      RouteNormalizer::Create(config.routes);
  if (!normalizer.ok()) return normalizer.status();
  set->normalizer_ = *std::move(normalizer);
  set->scope_tables_ =
      std::make_shared<ScopeTables>(config.tables, *set->normalizer_,
                                    /*shared=*/true);
  set->tier_directory_ = std::make_shared<TierDirectory>(/*synchronized=*/true);
  // Not shared with any other thread yet; the locks satisfy the analysis and
  // cost nothing here.
  for (size_t i = 0; i < shards; ++i) {
    Shard& s = set->shards_[i];
    MutexLock lock(s.mu);
    // One user key secret for every shard's engine and the router, so a
    // request's user key is built once (Prepare) for all of them.
    s.engine = std::make_unique<Engine>(
        ShardTables(config.tables, shards, i), set->normalizer_,
        set->user_key_secret(), set->scope_tables_, set->tier_directory_);
  }
  absl::Status installed = set->Reload(config);
  if (!installed.ok()) return installed;
  return set;
}

size_t ShardSet::IpShard(const IpAddress& client) const {
  // At least as coarse as every per-IP bucket key's masking: every address
  // that shares a bucket shares a shard.
  const IpAddress masked = client_mask_.Apply(client);
  const size_t h = absl::Hash<absl::string_view>{}(absl::string_view(
      reinterpret_cast<const char*>(masked.bytes.data()), masked.bytes.size()));
  return h & (shard_count_ - 1);
}

size_t ShardSet::UserShard(std::string_view user_id) const {
  // The ID's bucket key, checked and loaded a word at a time as the engines
  // build it (far cheaper than IsWellFormedUserId's byte-at-a-time pass),
  // then hashed.
  UserBucketKey key;
  key.Assign(user_id, 0, 0, user_key_secret());
  return UserShardOf(key);
}

size_t ShardSet::UserShardOf(const UserBucketKey& key) const {
  // Malformed IDs all share one overflow bucket per policy (bucket_keys.h);
  // spreading them over shards would multiply that budget.
  if (key.kind() == UserBucketKey::Kind::kOverflow) return 0;
  return BucketKeyHash(user_shard_seed_)(key) & (shard_count_ - 1);
}

void ShardSet::PinNames(const Shard& ip, const Shard& user, Decision& d) {
  // Branches rather than a reference to either shard, so the lock analysis
  // sees which shard's fields are read.
  if (d.denied_policy != kNoPolicy) {
    if (d.limited_by == LimitScope::kIp) {
      d.policy = ip.names[d.denied_policy];
      d.layer = ip.layers[d.denied_policy];
      d.error = ip.errors[d.denied_policy];
    } else {
      d.policy = user.names[d.denied_policy];
      d.layer = user.layers[d.denied_policy];
      d.error = user.errors[d.denied_policy];
    }
  }
  if (!d.quota.policy.empty()) {
    // The quota's policy may be another than the denying one (the smallest
    // remaining), checked by either engine, whose sets may differ while a
    // reload is under way: equal text under its id in one shard's set
    // names it (names are unique within a set).
    const PolicyId id = d.quota.policy_id;
    if (id < ip.names.size() && ip.names[id] == d.quota.policy) {
      d.quota.policy = ip.names[id];
    } else if (id < user.names.size() && user.names[id] == d.quota.policy) {
      d.quota.policy = user.names[id];
    }
  }
  if (d.shadow_denied) {
    // Names are unique within a set, so equal text means that policy.
    const PolicyId id = d.shadow_policy_id;
    if (ip.names[id] == d.shadow_policy) {
      d.shadow_policy = ip.names[id];
      d.shadow_layer = ip.layers[id];
    } else {
      d.shadow_policy = user.names[id];
      d.shadow_layer = user.layers[id];
    }
  }
}

ShardSet::Owners ShardSet::Prepare(const Request& request,
                                   PreparedRequest& prepared) const {
  size_t path_size = 0;
  prepared.route.id = normalizer_->Match(request.target, &path_size);
  prepared.route.key = normalizer_->key(prepared.route.id);
  prepared.route.known = prepared.route.id != kFallbackRouteId;
  prepared.path = request.target.substr(0, path_size);
  Owners o;
  o.ip = IpShard(request.client);
  o.user = o.ip;
  if (!request.user_id.empty()) {
    prepared.user_key.Assign(request.user_id, 0, 0, user_key_secret());
    prepared.has_user_key = true;
    o.user = UserShardOf(prepared.user_key);
  }
  return o;
}

void ShardSet::Charge(const Request& request, MonotonicTime now,
                      const Completion* completion) {
  const ShardSet::Owners o = OwnersOf(request);
  // Each scope under its own shard's lock, one after the other: a charge
  // has nothing to decide, so nothing needs both at once.
  {
    Shard& a = shard(o.ip);
    MutexLock lock(a.mu);
    a.engine->ChargeScopes(request, now,
                           o.split() ? Engine::kIpScope : Engine::kBothScopes,
                           completion);
  }
  if (o.split()) {
    Shard& b = shard(o.user);
    MutexLock lock(b.mu);
    b.engine->ChargeScopes(request, now, Engine::kUserScope, completion);
  }
}

std::vector<const LimitError*> ShardSet::InternErrors(
    const PolicySet& policies) {
  std::vector<const LimitError*> out(policies.size(), nullptr);
  for (size_t i = 0; i < policies.size(); ++i) {
    const LimitError* e = policies.limit_error(static_cast<PolicyId>(i));
    if (e == nullptr) continue;
    const std::string_view code = *names_.insert(std::string(e->errcode)).first;
    const std::string_view uri = *names_.insert(std::string(e->info_uri)).first;
    // The three fields as one key: neither string holds a NUL.
    std::string key(code);
    key.push_back('\0');
    key.append(uri);
    key.push_back('\0');
    key.push_back(static_cast<char>(e->can_upgrade));
    out[i] = &errors_.try_emplace(key, LimitError{code, uri, e->can_upgrade})
                  .first->second;
  }
  return out;
}

std::vector<std::string_view> ShardSet::InternNames(const PolicySet& policies,
                                                    bool layers) {
  std::vector<std::string_view> out;
  out.reserve(policies.size());
  for (const Policy& p : policies.policies()) {
    out.push_back(*names_.insert(layers ? p.layer : p.name).first);
  }
  return out;
}

absl::Status ShardSet::Reload(const LimiterConfig& config) {
  MutexLock reload(reload_mu_);
  absl::Status tables_ok = Engine::CheckTablesUnchanged(tables_, config.tables);
  if (!tables_ok.ok()) return tables_ok;
  absl::Status routes_ok =
      Engine::CheckRoutesUnchanged(*normalizer_, config.routes);
  if (!routes_ok.ok()) return routes_ok;
  for (const Policy& p : config.policies) {
    if (!p.client_prefix.has_value() || p.scope != Scope::kIp) continue;
    if (p.client_prefix->ipv4 < shard_prefix_.ipv4 ||
        p.client_prefix->ipv6 < shard_prefix_.ipv6) {
      return absl::FailedPreconditionError(absl::StrCat(
          "policy \"", p.name, "\": client_prefix {ipv4: ",
          p.client_prefix->ipv4, ", ipv6: ", p.client_prefix->ipv6,
          "} is coarser than the shard prefix (/", shard_prefix_.ipv4, ", /",
          shard_prefix_.ipv6,
          ") fixed when this limiter started; restart to use it (the old "
          "policies stay in force)"));
    }
  }
  // Compiled once for all shards: every shard's normalizer is built from the
  // same route table, so route ids agree.
  absl::StatusOr<std::shared_ptr<const PolicySet>> compiled =
      Engine::CompilePolicies(config, *normalizer_);
  if (!compiled.ok()) return compiled.status();
  absl::StatusOr<std::shared_ptr<const TierSet>> tiers =
      Engine::CompileTiers(config, **compiled);
  if (!tiers.ok()) return tiers.status();
  // Everything that can fail is done: from here on every shard installs.
  const std::vector<std::string_view> names = InternNames(**compiled, false);
  const std::vector<std::string_view> layers = InternNames(**compiled, true);
  const std::vector<const LimitError*> errors = InternErrors(**compiled);
  std::vector<bool> kept;
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[i];
    MutexLock lock(s.mu);
    s.engine->Install(*compiled, config.exempt, *tiers, &kept);
    s.names = names;
    s.layers = layers;
    s.errors = errors;
  }
  // The shared tables once, after every shard: what a shard still on the
  // old policies wrote under a token the reload hands out again goes too
  // (and with it what a reloaded shard wrote meanwhile: a few requests'
  // state, the price of not stopping every shard at once).
  EraseStaleShared(*scope_tables_, kept);
  tier_directory_->Install(*std::move(tiers));
  return absl::OkStatus();
}

LimiterStats ShardSet::Stats() const {
  MutexLock reload(reload_mu_);
  LimiterStats sum;
  // Route denials summed by route id; the route table bounds the array.
  std::vector<uint64_t> route_denials(normalizer_->keys().size(), 0);
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[i];
    LimiterStats one;
    {
      MutexLock lock(s.mu);
      one = s.engine->Stats();
    }
    AddTable(sum.ip_table, one.ip_table);
    AddTable(sum.user_table, one.user_table);
    if (i == 0) {
      // One set of subject-scope tables for all shards: counted once.
      sum.origin_table = one.origin_table;
      sum.room_table = one.room_table;
      sum.target_table = one.target_table;
      sum.lease_table = one.lease_table;
      sum.leases_released = one.leases_released;
      sum.leases_expired = one.leases_expired;
    }
    sum.exempt += one.exempt;
    sum.fallback_allowed += one.fallback_allowed;
    sum.fallback_denied += one.fallback_denied;
    for (const RouteDenials& r : one.route_denials) {
      route_denials[r.route_id] += r.denied;
    }
    if (i == 0) {
      sum.policies = std::move(one.policies);
      continue;
    }
    // Every shard holds the same policy set: Reload cannot run meanwhile.
    for (size_t p = 0; p < sum.policies.size(); ++p) {
      AddCounters(sum.policies[p].counters, one.policies[p].counters);
    }
  }
  for (size_t id = 0; id < route_denials.size(); ++id) {
    if (route_denials[id] == 0) continue;
    sum.route_denials.push_back(
        RouteDenials{static_cast<RouteId>(id),
                     std::string(normalizer_->key(static_cast<RouteId>(id))),
                     route_denials[id]});
  }
  return sum;
}

}  // namespace mxlimit::internal
