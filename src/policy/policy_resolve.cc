// PolicySet's per-request side: which policies apply to a request (Resolve),
// from the compiled per-route rows, the raw path's trie and inner-'*' lists,
// and the query conditions.

#include <bit>
#include <cstring>
#include <string_view>

#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/policy_set.h"
#include "src/policy/policy_ranks.h"
#include "src/policy/route_glob.h"
#include "src/policy/slot_lanes.h"
#include "src/util/query.h"

namespace mxlimit {

using internal::Bit;
using internal::CanonicalCursor;
using internal::ClassifyMethod;
using internal::FoundSlots;
using internal::GlobMatch;
using internal::GlobMatchCanonical;
using internal::MaxInto;
using internal::MethodClass;

RouteId PolicySet::ClampRoute(RouteId route) const {
  return route < route_keys_.size() ? route : kFallbackRouteId;
}

RouteId PolicySet::BucketRoute(PolicyId id, RouteId route) const {
  if (id == kNoPolicy) return kFallbackRouteId;
  return info_[id].share_threshold ? kSharedBucketRoute : route;
}

uint32_t PolicySet::DroppedSlots(RouteId rid,
                                 const RequestSubjects& subjects) const {
  const size_t has = static_cast<size_t>(subjects.user) |
                     static_cast<size_t>(subjects.origin) << 1 |
                     static_cast<size_t>(subjects.target) << 2;
  return route_dropped_[rid] | subject_dropped_[has];
}

uint32_t PolicySet::ConditionDroppedSlots(
    std::string_view request_target) const {
  // One flat pass: a condition fails on any name found where it must be
  // absent, or missing where it must be present.
  uint32_t dropped = 0;
  for (const ConditionName& n : condition_names_) {
    if (internal::QueryHasParameter(request_target, n.text, n.plain) ==
        n.absent) {
      dropped |= condition_slots_[n.condition];
    }
  }
  return dropped;
}

bool PolicySet::QueryConditionsHold(PolicyId id,
                                    std::string_view request_target) const {
  const uint8_t condition = slots_[info_[id].slot].condition;
  for (const ConditionName& n : condition_names_) {
    if (n.condition == condition &&
        internal::QueryHasParameter(request_target, n.text, n.plain) ==
            n.absent) {
      return false;
    }
  }
  return true;
}

static_assert(std::endian::native == std::endian::little,
              "Resolve writes a ResolvedPolicy as a little-endian word");

PolicySet::Resolution PolicySet::Resolve(std::string_view method, RouteId route,
                                         std::string_view query_free_path,
                                         RequestSubjects subjects,
                                         bool idle_checks) const {
  const RouteId rid = ClampRoute(route);
  const MethodClass m = ClassifyMethod(method);
  const size_t lanes = lanes_;
  const size_t stride = internal::kMethodClassCount * lanes;
  // Best entry order per slot; 0 = none yet.
  alignas(16) uint16_t best[kMaxResolved];
  const uint16_t* row = cells_.data() + route_table_[rid] * stride + m * lanes;
  // The usual widths copied inline (a call for 32 bytes costs more).
  if (lanes == 16) {
    std::memcpy(best, row, 16 * sizeof(uint16_t));
  } else if (lanes == 8) {
    std::memcpy(best, row, 8 * sizeof(uint16_t));
  } else {
    std::memcpy(best, row, lanes * sizeof(uint16_t));
  }

  const uint32_t dropped = DroppedSlots(rid, subjects);
  if ((route_only_[rid] & Bit(m)) == 0) {
    ResolveRawPath(query_free_path, m, dropped, best);
  }

  // The slots that found a policy, as a bit set.
  uint32_t found = FoundSlots(best, lanes) & slot_bits_ & ~dropped;
  // Query conditions are read only for the slots they could drop: most
  // requests reach none of them, and then the query is never looked at.
  if ((found & conditional_slots_) != 0) [[unlikely]] {
    // The query alone when the target starts with the path (an engine's
    // views do): no path byte is scanned again.
    std::string_view target = subjects.request_target;
    if (target.data() == query_free_path.data() &&
        target.size() > query_free_path.size()) {
      target.remove_prefix(query_free_path.size());
    }
    found &= ~ConditionDroppedSlots(target);
  }
  Resolution r;
  uint8_t kinds = 0;
  const bool general = (found & general_slots_) != 0;
  uint8_t count = 0;
  // The default layer's plain rate policies name the decision's
  // ip_policy/user_policy.
  auto name_decision = [&](uint8_t slot, PolicyId& policy, RouteId& bucket) {
    if (slot == kNoDecisionSlot || (found & (1u << slot)) == 0) return;
    const OrderInfo o = order_info_[best[slot]];
    policy = o.policy;
    bucket = o.share_threshold ? kSharedBucketRoute : rid;
  };
  name_decision(ip_decision_slot_, r.ip, r.ip_bucket_route);
  name_decision(user_decision_slot_, r.user, r.user_bucket_route);
  if (idle_checks && (found & idle_slots_) != 0) {
    found &= ~IdledSlot(found & idle_slots_, best, r.idled);
  }
  while (found != 0) {
    const auto s = static_cast<size_t>(std::countr_zero(found));
    found &= found - 1;
    const OrderInfo o = order_info_[best[s]];
    const RouteId bucket = o.share_threshold ? kSharedBucketRoute : rid;
    // ResolvedPolicy{o.policy, bucket, slot.layer, slot.scope, slot.shadow},
    // stored as one word.
    const uint64_t word =
        slot_words_[s] | o.policy | static_cast<uint64_t>(bucket) << 16;
    std::memcpy(&r.applied[count++], &word, sizeof word);
    kinds |= o.kind;
  }
  r.count = count;
  r.plain = !general && kinds == 0;
  r.weighed = (kinds & kWeighed) != 0;
  return r;
}

uint32_t PolicySet::IdledSlot(uint32_t candidates, const uint16_t* best,
                              PolicyId& idled) const {
  // One check left out: the engine counts one (Engine::CountIdled).
  for (; candidates != 0; candidates &= candidates - 1) {
    const auto s = static_cast<size_t>(std::countr_zero(candidates));
    const OrderInfo o = order_info_[best[s]];
    if ((o.kind & kIdles) != 0) {
      idled = o.policy;
      return 1u << s;
    }
  }
  return 0;
}

void PolicySet::ResolveRawPath(std::string_view query_free_path, MethodClass m,
                               uint32_t dropped_slots, uint16_t* best) const {
  const size_t lanes = lanes_;
  const size_t stride = internal::kMethodClassCount * lanes;
  // Most paths are their own canonical form: then the trie and the globs
  // read the bytes directly, else through the decoding cursor.
  const CanonicalCursor path(query_free_path);
  const bool raw = path.IsRaw();
  auto take = [&](uint32_t table) {
    MaxInto(best, cells_.data() + table * stride + m * lanes, lanes);
  };
  if (raw) {
    trie_.ForEachMatch(query_free_path, take);
  } else {
    trie_.ForEachMatch(path, take);
  }

  // Inner-'*' patterns, best rank first per slot: stop at the first that
  // cannot beat what the slot holds.
  for (const uint8_t s : inner_slots_) {
    if ((dropped_slots >> s) & 1u) continue;
    for (const InnerStar& in : inner_[s]) {
      if (in.order <= best[s]) break;
      if ((in.methods & Bit(m)) == 0) continue;
      if (raw ? GlobMatch(in.pattern, query_free_path)
              : GlobMatchCanonical(in.pattern, path)) {
        best[s] = in.order;
        break;
      }
    }
  }
}

}  // namespace mxlimit
