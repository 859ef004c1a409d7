// -----------------------------------------------------------------------------
// File: policy/idle_checks.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// Which policies' checks a decision may leave out while they cannot deny.
// A policy charged on the response by the bytes it sent asks, at the
// decision, for one byte of room (Engine::DecisionCost) and charges nothing
// then (Engine::SettleCost): as long as none of its buckets is within one
// byte of its limit, its check allows every request and changes no bucket.
// Most of the time no client is near a download quota, so the engine leaves
// such a check out of `Check` while its horizon says none can be
// (Engine::idle_from_), and makes it in full otherwise. PolicySet marks
// these policies when it compiles (`PolicySet::Resolution::idled`).

#ifndef MXLIMIT_POLICY_IDLE_CHECKS_H_
#define MXLIMIT_POLICY_IDLE_CHECKS_H_

#include "mxlimit/policy.h"
#include "mxlimit/rate.h"

namespace mxlimit::internal {

// Whether a check of `p` may be left out while no bucket of `p` lacks a
// byte of room. Only a rate per address or user that denies (a shadow
// policy counts its would-be denials; a delaying one queues), so that the
// one effect of the check left out is its count (Engine::CountIdled).
inline bool IdlesWhileRoomy(const Policy& p) {
  return ChargedOnResponse(p) && p.cost == CostKind::kResponseBytes &&
         p.rate.kind() == Rate::Kind::kLimited && !p.shadow_mode &&
         p.on_limit == OnLimit::kDeny && !p.concurrency.has_value() &&
         (p.scope == Scope::kIp || p.scope == Scope::kUser);
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_IDLE_CHECKS_H_
