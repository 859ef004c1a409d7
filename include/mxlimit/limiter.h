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
// Example:
//   absl::StatusOr<std::unique_ptr<mxlimit::Limiter>> limiter =
//       mxlimit::Limiter::Create(mxlimit::LimiterConfig{});
//   mxlimit::Request req{.method = "PUT", .target = path, .client = addr,
//                        .user_id = "@alice:example.org"};
//   mxlimit::Decision d = (*limiter)->Check(req, now);
//   if (!d.allowed) return TooManyRequests(d);

#ifndef MXLIMIT_LIMITER_H_
#define MXLIMIT_LIMITER_H_

#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/decision.h"
#include "mxlimit/internal/bucket_keys.h"
#include "mxlimit/internal/bucket_table.h"
#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/rate.h"
#include "mxlimit/route.h"
#include "mxlimit/stats.h"
#include "mxlimit/time.h"

namespace mxlimit {

// One HTTP request as the limiter sees it. Views only: nothing is copied.
struct Request {
  std::string_view method;
  // The raw request target as received: path, optional ?query and #fragment,
  // still percent-encoded.
  std::string_view target;
  // The client address (the socket peer, or a trusted X-Forwarded-For).
  IpAddress client;
  // The authenticated Matrix user ID; empty when anonymous.
  std::string_view user_id;
  // Set for requests the embedder trusts (application services, admins):
  // neither checked nor charged.
  bool exempt = false;
  // How many requests this one counts as. Must be >= 0 for Check/Peek; a
  // negative cost in Charge refunds.
  int64_t cost = 1;
};

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

  // Check
  //
  // Decides and, when allowed, charges `request.cost` to the bucket of every
  // limited policy that applies (each layer, each scope, shadow policies
  // included when they would allow). All-or-nothing: if any enforcing policy
  // denies, nothing is charged anywhere. Exempt requests return at once.
  Decision Check(const Request& request, MonotonicTime now);
  // Reads std::chrono::steady_clock.
  Decision Check(const Request& request) {
    return Check(request, MonotonicTime::FromSteadyClock());
  }

  // Peek
  //
  // What `Check` would answer, without charging, admitting or touching any
  // bucket.
  Decision Peek(const Request& request, MonotonicTime now) const;

  // Charge
  //
  // Charges `request.cost` to every applying policy's bucket without
  // checking, e.g. a failed login recorded after the response. Buckets drain
  // to empty, never past it; a negative cost refunds, up to a full bucket.
  // Exempt requests and unlimited or blocked policies are not charged.
  void Charge(const Request& request, MonotonicTime now);

  // Reload
  //
  // Replaces the policies and exemptions for the next `Check`. Buckets of
  // policies whose name, scope, rate and sharing are unchanged keep their
  // state; the rest are dropped. A config that does not compile, or that
  // changes the `tables` section (sizes and prefixes are fixed at start-up),
  // is rejected and the old policies stay in force.
  absl::Status Reload(const LimiterConfig& config);

  // Stats
  //
  // A snapshot of table and per-policy counters: O(number of policies), no
  // table walk. Call under the same lock as Check.
  LimiterStats Stats() const;

  const RouteNormalizer& normalizer() const { return *normalizer_; }
  const PolicySet& policies() const { return *policies_; }
  const TableOptions& table_options() const { return tables_; }

  // The bucket keys a request would charge, as text, for `mxlimit explain`.
  // Allocates; not for the hot path.
  std::vector<std::string> DescribeBuckets(const Request& request) const;

 private:
  // ShardedLimiter drives one request through two engines (the shard that
  // owns the client's address and the shard that owns the user) with the
  // seam below; nothing else may.
  friend class ShardedLimiter;

  // Which scopes of a request one engine evaluates: a lone Limiter does both;
  // a ShardedLimiter may ask one shard for the per-IP scope and another for
  // the per-user scope.
  enum ScopeMask : uint8_t { kIpScope = 1, kUserScope = 2, kBothScopes = 3 };

  // One resolved policy's part of a request: where its bucket is and what
  // that bucket alone answers.
  struct BucketCheck {
    PolicyId policy = kNoPolicy;
    const Policy* spec = nullptr;
    uint8_t layer = 0;
    Scope scope = Scope::kIp;
    bool shadow = false;
    // Whether the policy has a bucket (a limited rate), the hash of its key,
    // and the table slot `Locate` found (0: not in the table yet).
    bool has_bucket = false;
    uint32_t slot = 0;
    size_t hash = 0;
    // How far the bucket's TAT was ahead of `now`, in [0, tau].
    int64_t lead = 0;
    // Allowed with a limited rate: tau - (lead + cost * interval), so that
    // the requests left are slack / interval (see Combine).
    int64_t slack = 0;
    GcraResult verdict;
    union Key {
      Key() {}  // Written only for checks with a bucket.
      internal::IpBucketKey ip;
      internal::UserBucketKey user;
    } key;
  };

  // Storage for up to kMaxResolved checks, left unwritten until used (a
  // request usually has four; clearing all of them every time would cost
  // more than the evaluation).
  struct Checks {
    Checks() {}
    ~Checks() {}
    Checks(const Checks&) = delete;
    Checks& operator=(const Checks&) = delete;
    BucketCheck& Add(uint8_t& count) {
      return *new (&items[count++]) BucketCheck;
    }
    union {
      BucketCheck items[kMaxResolved];
    };
  };

  // A request resolved and evaluated, nothing charged and no table changed
  // yet. `Check` is Evaluate, then Combine, then Settle: charges happen only
  // once every policy has answered, which is what makes a check
  // all-or-nothing; and the buckets are relinked (or admitted) only then, so
  // the memory loads that relinking needs, started by Evaluate, overlap with
  // the evaluation instead of stalling it.
  struct Evaluation {
    bool exempt = false;
    Route route;
    // The default layer's enforcing policies (Decision::ip_policy/user_policy).
    PolicyId ip_policy = kNoPolicy;
    PolicyId user_policy = kNoPolicy;
    uint8_t count = 0;
    Checks checks;
    std::span<const BucketCheck> all() const { return {checks.items, count}; }
  };

  using IpTable =
      internal::BucketTable<internal::IpBucketKey, internal::BucketKeyHash>;
  using UserTable =
      internal::BucketTable<internal::UserBucketKey, internal::BucketKeyHash>;

  // `normalizer` is read-only, so engines may share one (ShardedLimiter's
  // shards do).
  Limiter(const TableOptions& tables,
          std::shared_ptr<const RouteNormalizer> normalizer);

  // Normalizes (unless `route` is given: a route the same normalizer already
  // produced for this request) and resolves `request`: fills in `e.route`
  // and one check, with its bucket key, per resolved policy of the scopes in
  // `mask`. Touches no table.
  void Resolve(const Request& request, ScopeMask mask, Evaluation& e,
               const Route* route = nullptr) const;
  // Locates the buckets of the scopes in `mask` and evaluates them; changes
  // no table (Settle does). Counts and stops at exempt requests.
  // REQUIRES: the engine's tables do not change until `e` is settled.
  void Evaluate(const Request& request, MonotonicTime now, ScopeMask mask,
                Evaluation& e, const Route* route = nullptr);
  // The same without admitting a bucket or counting anything (for Peek).
  void Inspect(const Request& request, MonotonicTime now, ScopeMask mask,
               Evaluation& e, const Route* route = nullptr) const;
  // Fills in `c.verdict`, `c.lead` and `c.slack` from its bucket (null: a
  // fresh one). Changes nothing.
  static void EvaluateCheck(BucketCheck& c, const GcraState* state,
                            MonotonicTime now, int64_t cost);
  // The decision from the per-IP checks of `ip_part` and the per-user checks
  // of `user_part` (the same evaluation, for a lone engine).
  Decision Combine(const Evaluation& ip_part,
                   const Evaluation& user_part) const;
  // Settles every check of a decided request: touches (or admits) its
  // bucket, counts the outcome and, when `d` allows the request and the
  // check's own bucket would, charges the bucket. Buckets already in a table
  // are settled before new ones are admitted, so an admission can never
  // evict a bucket this request still has to write.
  void Settle(const Evaluation& e, const Decision& d, MonotonicTime now,
              int64_t cost);
  void SettleOne(const BucketCheck& c, GcraState* bucket, const Decision& d,
                 MonotonicTime now, int64_t cost);
  void ChargeScopes(const Request& request, MonotonicTime now, ScopeMask mask);
  bool IsExempt(const Request& request) const;
  // When `request` is exempt: marks `e` so, with its route, and returns true.
  bool MarkExempt(const Request& request, const Route* route,
                  Evaluation& e) const;
  static Decision ExemptDecision(const Route& route);

  // Reload in two steps, so that a ShardedLimiter compiles a config once and
  // installs the result in every shard. Only the first step can fail.
  static absl::Status CheckTablesUnchanged(const TableOptions& current,
                                           const TableOptions& next);
  static absl::StatusOr<std::shared_ptr<const PolicySet>> CompilePolicies(
      const LimiterConfig& config, const RouteNormalizer& normalizer);
  void Install(std::shared_ptr<const PolicySet> next,
               const ExemptOptions& exempt);

  // IsExempt for a request without the flag needs no work when no address
  // or user is exempt.
  bool MaybeExempt(const Request& request) const {
    return request.exempt || has_exemptions_;
  }

  TableOptions tables_;
  // The tables' client prefixes (MaskAddress), precomputed.
  AddressMasker client_mask_;
  std::shared_ptr<const RouteNormalizer> normalizer_;
  // Immutable; ShardedLimiter shares one set among its shards.
  std::shared_ptr<const PolicySet> policies_;
  // Bucket keys carry a "bucket token" per policy rather than its PolicyId,
  // so that a reload which keeps a policy unchanged keeps its buckets even if
  // the policy's position in the set moved. Indexed by PolicyId.
  std::vector<uint16_t> bucket_token_;
  // The client prefixes each ip-scope policy's keys mask addresses to (its
  // `client_prefix`, else the tables'). Indexed by PolicyId.
  std::vector<AddressMasker> ip_masks_;
  std::vector<Cidr> exempt_ips_;
  absl::flat_hash_set<std::string> exempt_users_;
  bool has_exemptions_ = false;
  std::vector<PolicyCounters> policy_counters_;
  uint64_t exempt_requests_ = 0;
  // Keys the digest that identifies long user IDs (see bucket_keys.h), drawn
  // at random per engine so users cannot aim at each other's buckets.
  internal::SipKey user_key_secret_;
  IpTable ip_table_;
  UserTable user_table_;
};

}  // namespace mxlimit

#endif  // MXLIMIT_LIMITER_H_
