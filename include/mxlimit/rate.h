// -----------------------------------------------------------------------------
// File: rate.h
// -----------------------------------------------------------------------------
//
// `mxlimit::Rate` says how fast one bucket may be used: `requests_per_unit`
// requests per second, minute, hour or day, with up to `burst` of them at once.
// `GcraState` is everything a bucket remembers: one 64-bit "theoretical arrival
// time" (TAT) in nanoseconds of the caller's monotonic clock. The functions at
// the bottom implement the Generic Cell Rate Algorithm (GCRA) over the two.
//
// Semantics (T = unit / requests_per_unit, the emission interval, in integer
// nanoseconds rounded down; tau = burst * T):
//
//   * A fresh bucket lets `burst` requests through at once, then one per T.
//   * A request of cost n passes at `now` iff max(TAT, now) + n*T - now <= tau;
//     passing sets TAT to max(TAT, now) + n*T. Cost > 1 is all-or-nothing.
//   * A denial changes nothing (see the clock note below for one exception)
//     and reports `retry_after`: the exact wait after which the same request
//     passes. One nanosecond earlier it is still denied.
//   * A cost larger than the burst can never pass: the result says `never`
//     instead of a bogus wait. A rate of 0 requests (`Rate::Blocked()`) denies
//     everything with `never`; `Rate::Unlimited()` allows everything.
//
// Time. `now` is an argument, never read from a clock. A `now` earlier than an
// earlier call grants nothing: the bucket keeps its TAT, so the client waits
// longer, not shorter. A TAT more than tau ahead of `now` (only a clock that
// stepped backwards can leave one) is pulled back to now + tau, the emptiest
// legitimate state, so a retry time never exceeds tau. Times within 2^62 ns
// (146 years) of the int64 maximum count as that ceiling, so the arithmetic
// has headroom and never overflows.
//
// Example:
//   void TooManyRequests(std::chrono::nanoseconds wait);  // the embedder's
//
//   // One bucket (a `GcraState{}` is a full one), 10 a minute, 3 at once.
//   bool Admit(mxlimit::GcraState& bucket, mxlimit::MonotonicTime now) {
//     static const absl::StatusOr<mxlimit::Rate> rate =
//         mxlimit::Rate::Create(10, mxlimit::TimeUnit::kMinute, /*burst=*/3);
//     mxlimit::GcraResult r = mxlimit::GcraCheck(*rate, bucket, now);
//     if (!r.allowed) TooManyRequests(r.retry_after);
//     return r.allowed;
//   }

#ifndef MXLIMIT_RATE_H_
#define MXLIMIT_RATE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/time.h"

namespace mxlimit {

// The unit of a rate. Operators write `second`, `minute`, `hour`, `day`.
enum class TimeUnit : uint8_t { kSecond, kMinute, kHour, kDay };

constexpr int64_t UnitNanoseconds(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return 1'000'000'000LL;
    case TimeUnit::kMinute:
      return 60LL * 1'000'000'000LL;
    case TimeUnit::kHour:
      return 3600LL * 1'000'000'000LL;
    case TimeUnit::kDay:
      return 86400LL * 1'000'000'000LL;
  }
  return 1'000'000'000LL;
}

constexpr std::string_view TimeUnitName(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond:
      return "second";
    case TimeUnit::kMinute:
      return "minute";
    case TimeUnit::kHour:
      return "hour";
    case TimeUnit::kDay:
      return "day";
  }
  return "second";
}

// Parses `second`, `minute`, `hour` or `day`.
inline std::optional<TimeUnit> ParseTimeUnit(std::string_view name) {
  for (TimeUnit u : {TimeUnit::kSecond, TimeUnit::kMinute, TimeUnit::kHour,
                     TimeUnit::kDay}) {
    if (name == TimeUnitName(u)) return u;
  }
  return std::nullopt;
}

// -----------------------------------------------------------------------------
// Rate
// -----------------------------------------------------------------------------
//
// Immutable once built. Cheap to copy (a few integers); the per-key state is a
// separate `GcraState`, so one `Rate` serves every bucket of a policy.
class Rate {
 public:
  enum class Kind : uint8_t { kLimited, kUnlimited, kBlocked };

  // Largest accepted `requests_per_unit`: one per nanosecond per second.
  static constexpr int64_t kMaxRequestsPerUnit = 1'000'000'000;
  // Largest accepted burst. Bursts are counts of requests held back at once.
  static constexpr int64_t kMaxBurst = 1'000'000'000;
  // Largest accepted tau (burst * T): about 73 years, so that TAT arithmetic
  // has headroom on both sides of the int64 range.
  static constexpr int64_t kMaxToleranceNs = int64_t{1} << 61;

  // Builds a rate of `requests_per_unit` per `unit` with the given burst
  // (default: `requests_per_unit`). `requests_per_unit == 0` gives
  // `Blocked()`, which takes no burst (as an unlimited policy takes none: a
  // burst there would mean nothing). Errors name the field, the value and
  // what was expected.
  static absl::StatusOr<Rate> Create(int64_t requests_per_unit, TimeUnit unit,
                                     std::optional<int64_t> burst = {}) {
    if (requests_per_unit < 0 || requests_per_unit > kMaxRequestsPerUnit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "requests_per_unit: got ", requests_per_unit,
          ", expected an integer from 0 to ", kMaxRequestsPerUnit));
    }
    if (burst.has_value() && (*burst < 1 || *burst > kMaxBurst)) {
      return absl::InvalidArgumentError(
          absl::StrCat("burst: got ", *burst,
                       ", expected an integer from 1 to ", kMaxBurst));
    }
    if (requests_per_unit == 0) {
      if (burst.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "burst: got ", *burst,
            ", but requests_per_unit is 0, which blocks every request: a "
            "blocked policy has no burst; remove it"));
      }
      return Blocked();
    }
    Rate r;
    r.kind_ = Kind::kLimited;
    r.unit_ = unit;
    r.requests_per_unit_ = requests_per_unit;
    r.burst_ = burst.value_or(requests_per_unit);
    r.interval_ns_ = UnitNanoseconds(unit) / requests_per_unit;
    if (r.burst_ > kMaxToleranceNs / r.interval_ns_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "burst: got ", r.burst_, " at ", requests_per_unit, " per ",
          internal::ToAbsl(TimeUnitName(unit)),
          ", expected burst * (unit / requests_per_unit) under 73 years"));
    }
    r.tolerance_ns_ = r.burst_ * r.interval_ns_;
    return r;
  }

  static constexpr Rate Unlimited() {
    Rate r;
    r.kind_ = Kind::kUnlimited;
    return r;
  }
  static constexpr Rate Blocked() {
    Rate r;
    r.kind_ = Kind::kBlocked;
    return r;
  }

  constexpr Kind kind() const { return kind_; }
  constexpr bool unlimited() const { return kind_ == Kind::kUnlimited; }
  constexpr bool blocked() const { return kind_ == Kind::kBlocked; }
  constexpr int64_t requests_per_unit() const { return requests_per_unit_; }
  constexpr TimeUnit unit() const { return unit_; }
  constexpr int64_t burst() const { return burst_; }
  // T: nanoseconds between two requests at the steady rate.
  constexpr int64_t interval_ns() const { return interval_ns_; }
  // tau = burst * T: how far ahead of `now` a bucket's TAT may run.
  constexpr int64_t tolerance_ns() const { return tolerance_ns_; }

  // "10/minute burst 3", "unlimited", "blocked".
  std::string ToString() const {
    if (unlimited()) return "unlimited";
    if (blocked()) return "blocked";
    return absl::StrCat(requests_per_unit_, "/",
                        internal::ToAbsl(TimeUnitName(unit_)), " burst ",
                        burst_);
  }

  friend constexpr bool operator==(const Rate&, const Rate&) = default;

 private:
  constexpr Rate() = default;

  Kind kind_ = Kind::kBlocked;
  TimeUnit unit_ = TimeUnit::kSecond;
  int64_t requests_per_unit_ = 0;
  int64_t burst_ = 0;
  int64_t interval_ns_ = 0;
  int64_t tolerance_ns_ = 0;
};

// -----------------------------------------------------------------------------
// GcraState and the algorithm
// -----------------------------------------------------------------------------
//
// A check is two steps: `GcraEvaluate` reads a bucket and says what it thinks
// of a request, `GcraApply` writes the bucket's new TAT once the caller has
// decided. `GcraCheck` is the two back to back; an engine that charges several
// buckets all or nothing evaluates every bucket first and applies each once
// the whole request is decided.
//
// A bucket's "lead" is how far its TAT lies ahead of `now`, in [0, tau]: 0 for
// a full bucket, tau for an empty one. It is all of the state that a decision
// at `now` depends on.

// The whole memory of one bucket. A default-constructed state is a full
// (never used) bucket.
struct GcraState {
  static constexpr int64_t kFresh = std::numeric_limits<int64_t>::min();
  int64_t tat = kFresh;
};

struct GcraResult {
  bool allowed = false;
  // Denied and no wait helps: cost > burst, or a blocked rate.
  bool never = false;
  // Exact wait until the same request passes; 0 when allowed or `never`.
  std::chrono::nanoseconds retry_after{0};
  // Requests of cost 1 that would pass right after this call.
  // `kUnlimitedRemaining` for an unlimited rate.
  int64_t remaining = 0;
};

inline constexpr int64_t kUnlimitedRemaining =
    std::numeric_limits<int64_t>::max();

// GcraVerdict
//
// What one bucket says about one request, before anything is written: the
// answer of `GcraResult` without `remaining` (which costs a division; see
// `GcraRemaining`), plus what `GcraApply` needs to write the bucket back.
struct GcraVerdict {
  bool allowed = false;
  // Denied and no wait helps: cost > burst, or a blocked rate.
  bool never = false;
  // Exact wait until the same request passes; 0 when allowed or `never`.
  std::chrono::nanoseconds retry_after{0};
  // The bucket's lead at `now`, in [0, tau]; 0 for an unlimited or blocked
  // rate.
  int64_t lead = 0;
  // Allowed with a limited rate: tau - (lead + cost * T), the room left after
  // charging, so that slack / T requests of cost 1 remain. An engine that
  // needs only the smallest `remaining` of several buckets compares slacks
  // and divides once.
  int64_t slack = 0;
};

namespace internal {

// TAT arithmetic needs up to 2 * kMaxToleranceNs of headroom above `now`.
// Times closer than that to the int64 maximum are treated as that ceiling:
// time stands still there, which grants nothing.
inline constexpr int64_t kLatestNow =
    std::numeric_limits<int64_t>::max() - 2 * Rate::kMaxToleranceNs;

constexpr int64_t ClampNow(MonotonicTime now) {
  return std::min(now.nanoseconds(), kLatestNow);
}

// The bucket's lead at `now` (a clamped time): max(TAT, now) - now, pulled
// back to tau (plus a queue of `max_queue_ns`, see GcraEvaluateQueued) if a
// backwards clock left the TAT further ahead.
constexpr int64_t GcraLead(const Rate& rate, const GcraState& state,
                           int64_t now, int64_t max_queue_ns = 0) {
  if (state.tat <= now) return 0;  // Also covers kFresh.
  // tat > now, so the unsigned difference is exact even across the range.
  const uint64_t lead =
      static_cast<uint64_t>(state.tat) - static_cast<uint64_t>(now);
  const uint64_t cap =
      static_cast<uint64_t>(rate.tolerance_ns()) +
      static_cast<uint64_t>(std::max<int64_t>(max_queue_ns, 0));
  return static_cast<int64_t>(std::min(lead, cap));
}

// The GCRA rule, the one definition every bucket decision uses (the engine's
// tables, the shared store's mirror and its fake store; the Redis script is
// its documented mirror, docs/shared-state.md): a bucket `lead` ahead takes a
// charge of `charge_ns` when lead + charge <= tau.
constexpr bool GcraHasRoom(int64_t lead, int64_t charge_ns, int64_t tau) {
  return lead + charge_ns <= tau;
}

// The verdict of that rule for a limited `rate`, `lead` as the caller holds
// it (past tau when a shared store reported debt) and any charge (a scaled
// one, too): the wait when there is no room, else the slack left.
constexpr GcraVerdict GcraVerdictFor(const Rate& rate, int64_t lead,
                                     int64_t charge_ns) {
  GcraVerdict v;
  v.lead = lead;
  const int64_t tau = rate.tolerance_ns();
  if (!GcraHasRoom(lead, charge_ns, tau)) {
    v.retry_after = std::chrono::nanoseconds(lead + charge_ns - tau);
    return v;
  }
  v.allowed = true;
  v.slack = tau - (lead + charge_ns);
  return v;
}

}  // namespace internal

// GcraEvaluateQueued()
//
// GcraEvaluate for a bucket that admissions may have charged ahead of time
// (`on_limit: delay`: a request admitted `d` late is charged as of now + d):
// the lead is kept up to tau + `max_queue_ns` instead of being pulled back to
// tau, so the queue of delayed admissions survives every later evaluation
// and GcraApply. The admission rule is GcraEvaluate's.
constexpr GcraVerdict GcraEvaluateQueued(const Rate& rate,
                                         const GcraState& state,
                                         MonotonicTime now, int64_t cost,
                                         int64_t max_queue_ns) {
  GcraVerdict v;
  if (rate.unlimited()) {
    v.allowed = true;
    return v;
  }
  if (rate.blocked()) {
    v.never = true;
    return v;
  }
  // Even a request that can never pass reports the lead, so that applying
  // its denial persists a pull-back (see GcraApply).
  v.lead =
      internal::GcraLead(rate, state, internal::ClampNow(now), max_queue_ns);
  if (cost > rate.burst()) {
    v.never = true;
    return v;
  }
  // All terms are within [0, 2^62]: no overflow.
  return internal::GcraVerdictFor(
      rate, v.lead, std::max<int64_t>(cost, 0) * rate.interval_ns());
}

// GcraEvaluate()
//
// Would a request of `cost` pass now? Reads `state` and changes nothing.
// Negative costs count as 0.
constexpr GcraVerdict GcraEvaluate(const Rate& rate, const GcraState& state,
                                   MonotonicTime now, int64_t cost = 1) {
  return GcraEvaluateQueued(rate, state, now, cost, 0);
}

// GcraRemaining()
//
// `GcraResult::remaining` for a verdict of `GcraEvaluate` with the same rate
// and cost: requests of cost 1 that would pass right after charging it.
constexpr int64_t GcraRemaining(const Rate& rate, const GcraVerdict& verdict,
                                int64_t cost = 1) {
  if (rate.unlimited()) return kUnlimitedRemaining;
  if (!verdict.allowed) return 0;
  // An idle (full) bucket, the common case, needs no division: tau is
  // burst * T, so the quotient is burst - cost.
  return verdict.lead == 0 ? rate.burst() - std::max<int64_t>(cost, 0)
                           : verdict.slack / rate.interval_ns();
}

// GcraApply()
//
// Writes back a bucket that `GcraEvaluate` judged `verdict` for a request of
// `cost` at `now`, with nothing written to it in between. When `charge`, the
// request went through and its cost is charged: TAT = now + lead + cost * T.
// Otherwise nothing is charged, and TAT = now + lead only if the lead is
// positive: a no-op unless a backwards clock left TAT beyond now + tau, where
// the pull-back is kept so that the reported retry time is honoured (the
// client is not told to retry in one interval and then denied until the
// clock catches up). Unlimited and blocked rates keep no state.
//
// `charge` may be false for an allowed verdict (another bucket of the same
// request denied it), never true for a denied one.
// REQUIRES: !charge || verdict.allowed.
constexpr void GcraApply(const Rate& rate, GcraState& state, MonotonicTime now,
                         int64_t cost, const GcraVerdict& verdict,
                         bool charge) {
  if (rate.unlimited() || rate.blocked()) return;
  const int64_t base = internal::ClampNow(now) + verdict.lead;
  if (charge) {
    // The verdict proved base + cost * T within now + tau.
    state.tat = base + std::max<int64_t>(cost, 0) * rate.interval_ns();
  } else if (verdict.lead > 0) {
    state.tat = base;
  }
}

namespace internal {

// The answer to the caller of GcraPeek or GcraCheck.
constexpr GcraResult ToGcraResult(const Rate& rate, const GcraVerdict& verdict,
                                  int64_t cost) {
  GcraResult r;
  r.allowed = verdict.allowed;
  r.never = verdict.never;
  r.retry_after = verdict.retry_after;
  r.remaining = GcraRemaining(rate, verdict, cost);
  return r;
}

}  // namespace internal

// GcraPeek()
//
// Would a request of `cost` pass now? Changes nothing.
constexpr GcraResult GcraPeek(const Rate& rate, const GcraState& state,
                              MonotonicTime now, int64_t cost = 1) {
  return internal::ToGcraResult(rate, GcraEvaluate(rate, state, now, cost),
                                cost);
}

// GcraCheck()
//
// Checks and, when allowed, charges `cost` (all or nothing): `GcraEvaluate`,
// then `GcraApply`. Negative costs count as 0; use `GcraCharge` to refund.
constexpr GcraResult GcraCheck(const Rate& rate, GcraState& state,
                               MonotonicTime now, int64_t cost = 1) {
  const GcraVerdict v = GcraEvaluate(rate, state, now, cost);
  GcraApply(rate, state, now, cost, v, /*charge=*/v.allowed);
  return internal::ToGcraResult(rate, v, cost);
}

// Charges `cost` without checking: the bucket is drained by that much, down
// to empty, or past it by at most `max_debt_ns` (0 <= max_debt_ns <= tau):
// a bucket in debt denies until its lead is back within tau, so a charge
// known only after the fact (a response's bytes) that exceeds what was left
// still holds the next requests back. A negative cost refunds, up to a full
// bucket. Used for actions recorded after the fact, e.g. a failed login.
constexpr void GcraCharge(const Rate& rate, GcraState& state, MonotonicTime now,
                          int64_t cost, int64_t max_debt_ns = 0) {
  if (rate.unlimited() || rate.blocked() || cost == 0) return;
  const int64_t t = rate.interval_ns();
  const int64_t cap = rate.tolerance_ns() +
                      std::clamp<int64_t>(max_debt_ns, 0, rate.tolerance_ns());
  const int64_t lead = internal::GcraLead(rate, state, internal::ClampNow(now),
                                          cap - rate.tolerance_ns());
  // At most two bursts either way: n * t stays within 2 * tau <= 2^62.
  const int64_t n =
      std::clamp<int64_t>(cost, -2 * rate.burst(), 2 * rate.burst());
  const int64_t next = std::clamp<int64_t>(lead + n * t, 0, cap);
  state.tat = internal::ClampNow(now) + next;
}

// True when the bucket is full again, so forgetting it loses nothing: a new
// bucket would behave the same. Tables may reuse such entries first.
constexpr bool GcraIsDrained(const Rate& rate, const GcraState& state,
                             MonotonicTime now) {
  return rate.unlimited() || rate.blocked() ||
         internal::GcraLead(rate, state, internal::ClampNow(now)) == 0;
}

}  // namespace mxlimit

#endif  // MXLIMIT_RATE_H_
