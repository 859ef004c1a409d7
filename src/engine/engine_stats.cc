// What an engine reports about itself: its counters (Stats) and the buckets
// a request would charge (DescribeBuckets, for `explain`). Apart from
// engine.cc so that none of it joins Check's flattened call tree.

#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/mutex.h"
#include "src/engine/engine.h"

namespace mxlimit::internal {

LimiterStats Engine::Stats() const {
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
  {
    MutexLock lock(scope_tables_->mu);
    s.origin_table = table(scope_tables_->origin);
    s.room_table = table(scope_tables_->room);
    s.target_table = table(scope_tables_->target);
    const LeaseTable& leases = scope_tables_->leases;
    s.lease_table.size = leases.size();
    s.lease_table.capacity = leases.capacity();
    s.lease_table.admissions = leases.acquisitions();
    s.lease_table.evictions = leases.evictions();
    s.leases_released = leases.releases();
    s.leases_expired = leases.expirations();
  }
  s.exempt = exempt_requests_;
  s.policies.reserve(policies_->size());
  for (size_t id = 0; id < policies_->size(); ++id) {
    const Policy& p = policies_->policy(static_cast<PolicyId>(id));
    PolicyStats& out = s.policies.emplace_back();
    out.name = p.name;
    out.scope = p.scope;
    out.builtin = p.builtin;
    out.layer = p.layer;
    out.shadow = p.shadow_mode;
    out.rate = p.rate;
    out.counters = policy_counters_[id];
  }
  for (size_t id = 0; id < route_keys_.size(); ++id) {
    if (route_denials_[id] == 0) continue;
    s.route_denials.push_back(RouteDenials{static_cast<RouteId>(id),
                                           std::string(route_keys_[id]),
                                           route_denials_[id]});
  }
  s.fallback_allowed = fallback_decisions_[0];
  s.fallback_denied = fallback_decisions_[1];
  return s;
}

std::vector<std::string> Engine::DescribeBuckets(const Request& request) const {
  std::vector<std::string> out;
  if (IsExempt(request)) return out;
  Evaluation e;
  // A tier changes rates, not keys; only an exempt one matters here, and
  // an expiry does not (explain has no clock).
  Resolve(request, MonotonicTime::FromNanoseconds(0), kBothScopes, e);
  for (const BucketCheck& c : e.all()) {
    if (!c.has_bucket && !c.in_flight) continue;
    std::string who;
    RouteId bucket_route;
    if (c.scope == Scope::kIp) {
      const ClientPrefix prefix = c.spec->client_prefix.value_or(
          ClientPrefix{tables_.ipv4_prefix, tables_.ipv6_prefix});
      who = absl::StrCat(
          "ip ", FormatClientPrefix(request.client, prefix.ipv4, prefix.ipv6));
      bucket_route = c.key.ip.route;
    } else {
      bucket_route = c.key.user.route();
      switch (c.scope) {
        case Scope::kOrigin:
          who = absl::StrCat("origin ", internal::ToAbsl(request.origin));
          if (!request.origin_verified) {
            const ClientPrefix prefix =
                c.spec->client_prefix.value_or(kOriginNetworkPrefix);
            absl::StrAppend(
                &who, " from ",
                FormatClientPrefix(request.client, prefix.ipv4, prefix.ipv6));
          }
          break;
        case Scope::kRoom: {
          std::array<char, kMaxRoomBytes> buf;
          const RoomValue room = scope_tables_->rooms.Find(
              e.route.id, QueryFreePath(request.target), buf);
          who = absl::StrCat("room ", internal::ToAbsl(room.value),
                             room.valid ? "" : " (malformed: shared bucket)");
          break;
        }
        case Scope::kTarget:
          who = absl::StrCat("target ", internal::ToAbsl(request.target_user));
          break;
        default:
          who = absl::StrCat("user ", internal::ToAbsl(request.user_id));
          break;
      }
    }
    const std::string route = bucket_route == kSharedBucketRoute
                                  ? std::string("* (shared)")
                                  : std::string(normalizer_->key(bucket_route));
    out.push_back(absl::StrCat(
        who, " | layer ", internal::ToAbsl(policies_->layer_name(c.layer)),
        " | policy ", c.spec->name, c.shadow ? " (shadow)" : "",
        c.in_flight ? " (in flight: takes a lease)" : "", " | route ", route));
  }
  return out;
}

}  // namespace mxlimit::internal
