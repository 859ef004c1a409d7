// -----------------------------------------------------------------------------
// File: limiter.h
// -----------------------------------------------------------------------------
//
// `mxlimit::Limiter` decides whether one HTTP request may proceed. It owns the
// route normalizer, the compiled policies and two bounded tables of buckets:
// one keyed by client address (masked to a prefix: /32 for IPv4 and /64 for
// IPv6 by default), one keyed by Matrix user ID. When a table is full, the
// least recently used bucket is evicted to admit a new one, in O(1).
//
// For each request the limiter normalizes the route, resolves the policies of
// every layer and scope (per-IP, per-user; enforcing and shadow), and charges
// all their buckets all-or-nothing: a request denied by one policy consumes
// nothing anywhere.
//
// Thread safety: none. The core is single-threaded by contract: call every
// method under the embedder's lock, or use `ShardedLimiter`
// (sharded_limiter.h), which does the locking over several engines. Nothing
// on the `Check` path allocates or reads a clock.
//
// A Limiter is a thin owner of one engine (src/engine/engine.h, not
// installed): the tables, bucket keys and evaluation stay out of embedders'
// translation units.
//
// Example:
//   void SendTooManyRequests(const mxlimit::Decision& d);  // the embedder's
//
//   // At start-up: the built-in policies, default tables.
//   absl::StatusOr<std::unique_ptr<mxlimit::Limiter>> Start() {
//     return mxlimit::Limiter::Create(mxlimit::LimiterConfig{});
//   }
//
//   // Per request, under the embedder's lock.
//   void OnRequest(mxlimit::Limiter& limiter, std::string_view target,
//                  const mxlimit::IpAddress& peer,
//                  mxlimit::MonotonicTime now) {
//     mxlimit::Request req{.method = "PUT", .target = target, .client = peer,
//                          .user_id = "@alice:example.org"};
//     mxlimit::Decision d = limiter.Check(req, now);
//     if (!d.allowed) SendTooManyRequests(d);
//   }

#ifndef MXLIMIT_LIMITER_H_
#define MXLIMIT_LIMITER_H_

#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/decision.h"
#include "mxlimit/options.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/request.h"
#include "mxlimit/route.h"
#include "mxlimit/snapshot.h"
#include "mxlimit/stats.h"
#include "mxlimit/tiers.h"
#include "mxlimit/time.h"

namespace mxlimit {

namespace internal {
class Engine;
}  // namespace internal

class Limiter {
 public:
  // Compiles the policies (operator ones plus, unless switched off, the
  // built-ins) and allocates both tables at their full capacity. Errors name
  // the policy or option at fault.
  static absl::StatusOr<std::unique_ptr<Limiter>> Create(
      const LimiterConfig& config);

  // Neither copyable nor movable: table entries link into recency lists the
  // engine owns, and decisions hand out views into its policies and routes.
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;
  Limiter(Limiter&&) = delete;
  Limiter& operator=(Limiter&&) = delete;
  ~Limiter();

  // Limiter::Check()
  //
  // Decides and, when allowed, charges `request.cost` to the bucket of every
  // limited policy that applies (each layer, each scope, shadow policies
  // included when none of them would deny). All-or-nothing: if any enforcing
  // policy denies, nothing is charged anywhere; if a shadow policy would
  // deny, no shadow bucket is charged (so observe-only predicts enforcement
  // exactly). Exempt requests return at once.
  Decision Check(const Request& request, MonotonicTime now);
  // Reads std::chrono::steady_clock.
  Decision Check(const Request& request) {
    return Check(request, MonotonicTime::FromSteadyClock());
  }

  // Limiter::Peek()
  //
  // What `Check` would answer, without charging, admitting or touching any
  // bucket.
  Decision Peek(const Request& request, MonotonicTime now) const;

  // Limiter::Charge()
  //
  // Charges `request.cost` to every applying policy's bucket without
  // checking (`request.request_bytes` to a `cost: request_bytes` policy's,
  // with the sign of `request.cost`). Buckets drain to empty, never past it;
  // a negative cost refunds, up to a full bucket. Exempt requests, unlimited
  // or blocked policies and policies charged on the response (`Settle`'s)
  // are not charged.
  void Charge(const Request& request, MonotonicTime now);

  // Limiter::Settle()
  //
  // Charges what the response of an admitted request costs: the policies
  // charged on the response (`charge: response`, `cost: response_bytes`)
  // that apply to `request` and list `completion.status` (or list none), each
  // by its cost (`request.cost`, `request.request_bytes` or
  // `completion.body_bytes`). A response may cost more than its bucket
  // held: the bucket then goes into debt, by at most one more burst, and
  // denies until it has refilled past it. `Check` only
  // checked that their buckets had room. Call it once per admitted request,
  // with the request as it was checked. Never allocates.
  void Settle(const Request& request, const Completion& completion,
              MonotonicTime now);

  // Limiter::Release()
  //
  // Gives back the leases an admitted request took (`Decision::leases`, for
  // its in-flight policies) once it is done, so that the next request of
  // the same bucket may start. A lease that already ended (by its `lease`
  // time, or released before) is skipped, so releasing twice is harmless.
  // Also ends every lease whose time is up. Never allocates.
  void Release(const Leases& leases, MonotonicTime now);
  void Release(const Leases& leases) {
    Release(leases, MonotonicTime::FromSteadyClock());
  }

  // Limiter::Reload()
  //
  // Replaces the policies and exemptions for the next `Check`. Buckets of
  // policies whose name, scope, rate and sharing are unchanged keep their
  // state; the rest are dropped. A config that does not compile, or that
  // changes the `tables` section (sizes and prefixes are fixed at start-up),
  // is rejected and the old policies stay in force.
  absl::Status Reload(const LimiterConfig& config);

  // --- Tiers (tiers.h): assignments made while running. -------------------

  // Limiter::SetTier()
  //
  // Puts `subject` (a user ID "@bridge:example.org", or a network
  // "2001:db8:bad::/48" or an address) in `tier`, one of the policy file's
  // `tiers:`, until `expires` (unset: until cleared), beside the file's
  // `tiers.assign` (and before it, for the same subject). The client's next
  // request is judged by it; its buckets are kept. Errors:
  // InvalidArgument (subject, or `expires` not after `now`), NotFound (no
  // such tier), ResourceExhausted (kMaxTierOverrides held).
  absl::Status SetTier(std::string_view subject, std::string_view tier,
                       std::optional<MonotonicTime> expires, MonotonicTime now);
  absl::Status SetTier(std::string_view subject, std::string_view tier,
                       std::optional<MonotonicTime> expires = std::nullopt) {
    return SetTier(subject, tier, expires, MonotonicTime::FromSteadyClock());
  }
  // Limiter::ClearTier()
  //
  // Ends the runtime assignment of `subject` (NotFound if it has none; the
  // file's stay).
  absl::Status ClearTier(std::string_view subject);
  // Limiter::ListTiers()
  //
  // Every assignment in force at `now`, the file's and the runtime ones,
  // sorted by kind and subject. Allocates; not for the hot path.
  std::vector<TierAssignment> ListTiers(MonotonicTime now) const;
  // Limiter::TierFor()
  //
  // The assignment that puts `request` in a tier at `now`, if any (for
  // `mxlimit explain`).
  std::optional<TierAssignment> TierFor(const Request& request,
                                        MonotonicTime now) const;

  // Limiter::ResetBuckets()
  //
  // Forgets the buckets of `subject`, written as for `SetTier`: a user ID's
  // user-scope buckets, or the ip-scope buckets that hold any address of a
  // network or address (a /24 bucket for "192.0.2.7", every /24 inside
  // "10.0.0.0/8"), so its next requests start with full buckets: an
  // operator unblocks someone now. Returns how many buckets were dropped.
  // InvalidArgument for a subject `SetTier` would refuse. Walks the table:
  // O(capacity), an operator's call, not for the request path.
  absl::StatusOr<size_t> ResetBuckets(std::string_view subject);

  // Limiter::Snapshot()
  //
  // Writes every bucket of the rate tables to `out` with its lead over
  // `now`, stamped with `wall` (mxlimit/snapshot.h has the rules). Walks the
  // tables: O(size), an operator's call. An error only when `out` fails.
  absl::Status Snapshot(std::ostream& out, MonotonicTime now,
                        WallTime wall) const;
  absl::Status Snapshot(std::ostream& out) const {
    return Snapshot(out, MonotonicTime::FromSteadyClock(),
                    std::chrono::system_clock::now());
  }

  // Limiter::Restore()
  //
  // Puts back the buckets of a snapshot that still mean something at `now`
  // (`wall` on the wall clock): see mxlimit/snapshot.h. Reads the whole
  // stream before changing anything: DataLoss for a truncated or corrupt
  // one, FailedPrecondition for another format version, and then nothing is
  // changed. Memory while it runs: the staged buckets, at most the tables'
  // total capacity.
  absl::StatusOr<RestoreStats> Restore(std::istream& in, MonotonicTime now,
                                       WallTime wall);
  absl::StatusOr<RestoreStats> Restore(std::istream& in) {
    return Restore(in, MonotonicTime::FromSteadyClock(),
                   std::chrono::system_clock::now());
  }

  // Limiter::Stats()
  //
  // A snapshot of table and per-policy counters: O(number of policies), no
  // table walk. Call under the same lock as Check.
  LimiterStats Stats() const;

  // Limiter::PolicyCounts()
  //
  // The per-policy counters of `Stats()` alone, indexed by `PolicyId` (the
  // ids of `policies()`), read in place: no copy, no allocation. For a
  // caller that follows them request by request (`mxlimit replay --report`
  // draws each policy's results over time from the difference). Valid, and
  // updated by every `Check`, until the next `Reload`.
  std::span<const PolicyCounters> PolicyCounts() const;

  const RouteNormalizer& normalizer() const;
  const PolicySet& policies() const;
  const TableOptions& table_options() const;

  // The bucket keys a request would charge, as text, for `mxlimit explain`.
  // Allocates; not for the hot path.
  std::vector<std::string> DescribeBuckets(const Request& request) const;

 private:
  explicit Limiter(std::unique_ptr<internal::Engine> engine);

  const std::unique_ptr<internal::Engine> engine_;
};

}  // namespace mxlimit

#endif  // MXLIMIT_LIMITER_H_
