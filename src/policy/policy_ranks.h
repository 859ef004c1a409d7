// -----------------------------------------------------------------------------
// File: policy/policy_ranks.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// The pieces of the ranking that compiling a policy set
// (src/policy/policy_set.cc) and explaining a resolution
// (src/policy/policy_explain.cc) must read the same way.

#ifndef MXLIMIT_POLICY_POLICY_RANKS_H_
#define MXLIMIT_POLICY_POLICY_RANKS_H_

#include <string>
#include <string_view>

#include "mxlimit/internal/canonical_path.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"

namespace mxlimit::internal {

inline constexpr MethodMask Bit(MethodClass m) {
  return static_cast<MethodMask>(1u << m);
}

// Specificity tiers, higher wins: exact > wildcard with a literal byte >
// `<fallback>` > wildcard without one.
inline int TierOf(std::string_view canonical) {
  if (canonical == kFallbackRouteKey) return 1;
  const PatternShape shape = ShapeOf(canonical);
  if (shape.kind == PatternKind::kExact) return 3;
  return shape.literal_bytes > 0 ? 2 : 0;
}

// Why a winner whose best pattern is `w` outranks a loser whose best is `l`
// (canonical forms): the first rule of the ranking that separates them.
inline RankReason RankReasonBetween(std::string_view w, std::string_view l,
                                    bool winner_builtin, bool loser_builtin) {
  const int wt = TierOf(w);
  const int lt = TierOf(l);
  if (wt != lt) {
    return wt == 3 || lt == 3 ? RankReason::kExact : RankReason::kMoreSpecific;
  }
  if (winner_builtin != loser_builtin) return RankReason::kOperatorOverBuiltin;
  if (ShapeOf(w).rank_bytes != ShapeOf(l).rank_bytes) {
    return RankReason::kMoreLiteralBytes;
  }
  return RankReason::kEarlier;
}

// The canonical form of a pattern: `<fallback>` stays itself.
inline std::string CanonicalPattern(std::string_view pattern) {
  if (pattern == kFallbackRouteKey) return std::string(pattern);
  return CanonicalPath(pattern);
}

// The same as a view: `pattern` itself when it is canonical already (most
// route keys), else CanonicalPattern's text kept in `scratch`.
inline std::string_view CanonicalPatternView(std::string_view pattern,
                                             std::string& scratch) {
  if (pattern == kFallbackRouteKey || CanonicalCursor(pattern).IsRaw()) {
    return pattern;
  }
  scratch = CanonicalPath(pattern);
  return scratch;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_POLICY_RANKS_H_
