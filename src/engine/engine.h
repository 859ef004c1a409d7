// The engine behind `Limiter` and every `ShardedLimiter` shard: route
// normalization and policy resolution for one request, its bucket keys, the
// two bounded bucket tables, and the evaluate -> combine -> settle protocol
// that charges all of a request's buckets or none.
//
// Internal: not installed, not part of the public API. `Limiter` owns one
// engine and forwards to it; `ShardedLimiter` drives several through the
// protocol below. Single-threaded: callers hold the engine's lock.

#ifndef MXLIMIT_ENGINE_ENGINE_H_
#define MXLIMIT_ENGINE_ENGINE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
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
#include "mxlimit/ip.h"
#include "mxlimit/options.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/rate.h"
#include "mxlimit/request.h"
#include "mxlimit/route.h"
#include "mxlimit/stats.h"
#include "mxlimit/time.h"
#include "src/engine/bucket_keys.h"
#include "src/engine/bucket_table.h"
#include "src/engine/prepared_request.h"
#include "src/engine/scope_tables.h"
#include "src/engine/snapshot_format.h"
#include "src/engine/tier_directory.h"
#include "src/engine/tier_set.h"
#include "src/util/siphash.h"

namespace mxlimit::internal {

// Which of the subjects policies key by `request` carries.
RequestSubjects SubjectsOf(const Request& request);

// Drops the origin, room and target buckets and the leases whose bucket
// token is not `kept` (indexed by token), under the tables' lock.
void EraseStaleShared(ScopeTables& tables, const std::vector<bool>& kept);

class Engine {
 public:
  // Which scopes of a request one engine evaluates: a lone Limiter does both;
  // a ShardedLimiter asks one shard for the per-IP scope and another for
  // the named scopes (user, and origin, room and target, whose tables the
  // shards share: see ScopeTables).
  enum ScopeMask : uint8_t { kIpScope = 1, kUserScope = 2, kBothScopes = 3 };

  // One resolved policy's part of a request: where its bucket is and what
  // that bucket alone answers.
  // Built only by AddChecks, which writes every field before anything reads
  // it, except `verdict` (the evaluation's) and, for a check with neither a
  // bucket nor a lease group, `key` and `hash`, which nothing reads then;
  // EvaluateInFlight hashes a lease group. No initializers here: a request
  // builds several checks, so fields written twice cost every request.
  struct BucketCheck {
    BucketCheck() {}
    // The ResolvedPolicy's fields, laid out as it lays them out, so that
    // AddChecks copies them as one word.
    PolicyId policy;
    RouteId bucket_route;
    uint8_t layer;
    Scope scope;
    bool shadow;
    // An in-flight policy: its key names a lease group (in ScopeTables'
    // LeaseTable); `has_bucket` is false. Denied, `queued` is how many of
    // the group's leases must end before it passes (1: the earliest), as
    // EvaluateInFlight sets it.
    bool in_flight;
    const Policy* spec;
    uint8_t queued;
    // Whether the policy has a bucket (a limited rate), the hash of its key
    // (in flight: of its lease group; set by Resolve and EvaluateInFlight),
    // and the table slot `Locate` found (0: not in the table yet).
    bool has_bucket;
    uint32_t slot;
    size_t hash;
    // What the bucket alone answers, with its lead and slack (see Combine).
    union {
      GcraVerdict verdict;
    };
    union Key {
      Key() {}  // Written only for checks with a bucket.
      internal::IpBucketKey ip;
      // Every scope but kIp: the user's, origin's, room's or target's key.
      internal::UserBucketKey user;
    } key;
  };

  static_assert(
      offsetof(BucketCheck, policy) == offsetof(ResolvedPolicy, policy) &&
      offsetof(BucketCheck, bucket_route) ==
          offsetof(ResolvedPolicy, bucket_route) &&
      offsetof(BucketCheck, layer) == offsetof(ResolvedPolicy, layer) &&
      offsetof(BucketCheck, scope) == offsetof(ResolvedPolicy, scope) &&
      offsetof(BucketCheck, shadow) == offsetof(ResolvedPolicy, shadow) &&
      offsetof(BucketCheck, in_flight) == sizeof(ResolvedPolicy) - 1);

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
    // Whether a check is in flight: only then are leases taken.
    bool in_flight = false;
    // PolicySet::Resolution::plain: only ip and user rate checks, none
    // delaying (the short path: no subject tables, leases or queues).
    bool plain = false;
    // PolicySet::Resolution::weighed, and Request::request_bytes for its
    // byte-cost checks (both set only when not plain).
    bool weighed = false;
    int64_t request_bytes = -1;
    // A check's policy is charged on the response (Decision::settles); only
    // a weighed resolution can have one.
    bool settles = false;
    // PolicySet::Resolution::idled: a check left out, counted by Settle.
    PolicyId idled = kNoPolicy;
    Checks checks;
    // Held from the first origin, room, target or in-flight check to the end
    // of the request (see ScopeTables). The user half of a request split over
    // two engines holds the IP half's (`request_lock`), so that a request
    // takes the lock once.
    ScopeTablesLock scope_lock;
    ScopeTablesLock* request_lock = nullptr;
    // The request's tier (Decision::tier), whose copies of the policies its
    // checks read; null: none.
    const CompiledTier* tier = nullptr;
    std::string_view tier_name;
    // The directory's hashes of the request, when its tier is looked up.
    TierProbe tier_probe;
    ScopeTablesLock& lock() {
      return request_lock != nullptr ? *request_lock : scope_lock;
    }
    std::span<const BucketCheck> all() const { return {checks.items, count}; }
  };

  // Builds an engine the way `Limiter::Create` documents.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(
      const LimiterConfig& config);

  // `normalizer` is read-only, so engines may share one (ShardedLimiter's
  // shards do). `user_key_secret` keys the digest of long user IDs in bucket
  // keys: random, and shared by engines whose driver builds a request's user
  // key once for all of them (PreparedRequest). No policies until `Install`.
  // `scope_tables`: the origin, room and target tables, shared by the
  // engines of one driver; null builds this engine's own. `tiers`: who is
  // in which tier, likewise shared (its driver installs it); null builds an
  // unsynchronized one this engine installs.
  Engine(const TableOptions& tables,
         std::shared_ptr<const RouteNormalizer> normalizer,
         const SipKey& user_key_secret,
         std::shared_ptr<ScopeTables> scope_tables = nullptr,
         std::shared_ptr<TierDirectory> tiers = nullptr);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // --- Whole requests: what `Limiter`'s methods of the same names do. ------

  // `prepared`, when given, is as for `Resolve`: a caller driving several
  // engines (a ShardedLimiter) prepares the request once, before taking any
  // lock.
  Decision Check(const Request& request, MonotonicTime now,
                 PreparedRequest* prepared = nullptr);
  Decision Peek(const Request& request, MonotonicTime now) const;
  void Charge(const Request& request, MonotonicTime now) {
    ChargeScopes(request, now, kBothScopes);
  }
  absl::Status Reload(const LimiterConfig& config);
  LimiterStats Stats() const;
  // Stats().policies' counters, in place (indexed by PolicyId).
  std::span<const PolicyCounters> policy_counters() const {
    return policy_counters_;
  }
  std::vector<std::string> DescribeBuckets(const Request& request) const;

  const RouteNormalizer& normalizer() const { return *normalizer_; }
  // The room `request` addresses (see RoomLocator), decoded into `buf`.
  RoomValue FindRoom(const Request& request,
                     std::array<char, kMaxRoomBytes>& buf) const;
  const PolicySet& policies() const { return *policies_; }
  const TableOptions& table_options() const { return tables_; }

  // --- The protocol: one request over one or two engines. ------------------
  //
  // `Check` is Resolve + Evaluate, Combine, Settle on this engine. A
  // ShardedLimiter runs the same steps with the per-IP scope on one engine
  // and the per-user scope on another, both locked, in this order:
  // BeginEvaluate (IP engine), BeginEvaluate (user engine, given the route
  // the first produced), FinishEvaluate on each (together: EvaluateSplit),
  // Combine, Settle on each.
  // Between an engine's BeginEvaluate and its Settle nothing else may touch
  // that engine.
  //
  // The bucket store is reached only from Evaluate/Inspect (read a bucket's
  // state), Settle (write it back, admit it) and ChargeScopes: a store other
  // than the in-process tables stands behind exactly those calls.

  // Normalizes and resolves `request`, or, with `prepared` (filled by the
  // caller from the normalizer and user key secret this engine shares), takes
  // the route and user key from it, and the resolution too when the caller
  // resolved on this engine's PolicySet: fills in
  // `e.route` and one check, with its bucket key, per resolved policy of the
  // scopes in `mask`; hashes each key and starts its bucket's load, so that
  // every load is under way before any is waited on. Changes no table.
  // Finds the request's tier too (at `now`); a member of an exempt tier is
  // marked exempt (`e.exempt`) with no checks. With `idle_checks` (a
  // decision's own resolution, not a look or a charge), a request resolved
  // here leaves out a check that cannot deny (IdleChecks).
  void Resolve(const Request& request, MonotonicTime now, ScopeMask mask,
               Evaluation& e, PreparedRequest* prepared = nullptr,
               bool idle_checks = false) const;
  // Locates the buckets of the scopes in `mask` and evaluates them; changes
  // no table (Settle does). Counts and stops at exempt requests.
  // REQUIRES: the engine's tables do not change until `e` is settled.
  void Evaluate(const Request& request, MonotonicTime now, ScopeMask mask,
                Evaluation& e, PreparedRequest* prepared = nullptr);
  // Evaluate in two halves, for a caller driving two engines (CheckPair):
  // begin on both, so that every table load is under way before either
  // waits on one, then finish each. `BeginEvaluate` counts and marks an
  // exempt request and returns false (there is nothing to finish); else it
  // resolves and starts the loads. `FinishEvaluate` locates and evaluates.
  bool BeginEvaluate(const Request& request, MonotonicTime now, ScopeMask mask,
                     Evaluation& e, PreparedRequest* prepared = nullptr);
  void FinishEvaluate(const Request& request, MonotonicTime now, Evaluation& e);
  // Evaluate with the per-IP scope on `ip` and the per-user scope on `user`:
  // both begin, then both finish. False when the request is exempt
  // (`ip_part.exempt`): there is nothing to combine.
  static bool EvaluateSplit(Engine& ip, Engine& user, const Request& request,
                            MonotonicTime now, Evaluation& ip_part,
                            Evaluation& user_part, PreparedRequest& prepared);
  // The same without admitting a bucket or counting anything (for Peek).
  void Inspect(const Request& request, MonotonicTime now, ScopeMask mask,
               Evaluation& e, PreparedRequest* prepared = nullptr) const;
  // Fills in `c.verdict` from its bucket (null: a fresh one), which keeps a
  // queue of `queue_ns` past tau (DelayQueueNs of its policy). Changes
  // nothing.
  static void EvaluateCheck(BucketCheck& c, const GcraState* state,
                            MonotonicTime now, int64_t cost, int64_t queue_ns);
  // For a request of `cost` and `request_bytes`: the cost check `c` is
  // evaluated with (its bytes, or one byte of room for a response's), and
  // the charge settling it takes at the decision (0 for a policy charged on
  // the response, which Settle(request, completion) charges).
  static int64_t DecisionCost(const BucketCheck& c, int64_t cost,
                              int64_t request_bytes);
  static int64_t SettleCost(const BucketCheck& c, int64_t cost,
                            int64_t request_bytes);
  // DecisionCost and SettleCost for a check of `e`: `cost` unless `e` is
  // weighed (never on the short path).
  static int64_t DecisionCostIn(const Evaluation& e, const BucketCheck& c,
                                int64_t cost) {
    return e.weighed ? DecisionCost(c, cost, e.request_bytes) : cost;
  }
  template <bool kPlain>
  static int64_t CostOf(const BucketCheck& c, int64_t cost,
                        const Evaluation& e) {
    if constexpr (kPlain) {
      return cost;
    } else {
      return e.weighed ? SettleCost(c, cost, e.request_bytes) : cost;
    }
  }
  // The decision from the per-IP checks of `ip_part` and the per-user checks
  // of `user_part` (the same evaluation, for a lone engine).
  Decision Combine(const Evaluation& ip_part,
                   const Evaluation& user_part) const;
  // The whole protocol for a request whose per-IP scope lives in `ip` and
  // per-user scope in `user` (two different engines, both locked by the
  // caller): `Check` over two engines, with the request `prepared` by the
  // caller; the policies are resolved once when both engines hold the same
  // set. The decision is counted by `ip`.
  static Decision CheckPair(Engine& ip, Engine& user, const Request& request,
                            MonotonicTime now, PreparedRequest& prepared);
  // Counts a decided, non-exempt request in the per-route and fallback
  // counters. `Check` calls it; a ShardedLimiter calls it on the engine that
  // evaluated the per-IP scope, so each request is counted once. Fixed
  // arrays indexed by route id: nothing is allocated.
  void CountDecision(const Decision& d) {
    if (!d.allowed) ++route_denials_[d.route_id];
    if (d.route_id == kFallbackRouteId)
      ++fallback_decisions_[d.allowed ? 0 : 1];
  }
  // Whether settling `c` for the decision `d` charges its bucket: the
  // request went through, the check's own bucket allows it and, for a shadow
  // check, no shadow policy of the request would have denied it. Shadow
  // policies are charged all-or-nothing among themselves, as enforcing ones
  // are, so that they fill exactly as they would if they enforced: under a
  // top-level `shadow_mode: true` the shadow buckets evolve as the enforcing
  // buckets of the same config would.
  static bool Charges(const BucketCheck& c, const Decision& d) {
    return c.verdict.allowed && d.allowed && !(c.shadow && d.shadow_denied);
  }
  // For a decision `d` that denied `request`: when every enforcing check
  // that denied has `on_limit: delay` and a wait within its `max_delay`, and
  // the request `may_delay`, re-evaluates every check of `ip_part` (on `ip`)
  // and `user_part` (on `user`; the same evaluation and engine for a lone
  // engine) at now + the longest such wait. If everything allows there, `d`
  // becomes that admission, with `delay` set and the delaying policy named,
  // and the time to settle at is returned; otherwise `now`, `d` unchanged.
  static MonotonicTime TryDelay(const Engine& ip, const Engine& user,
                                const Request& request, MonotonicTime now,
                                Evaluation& ip_part, Evaluation& user_part,
                                Decision& d);
  // Settles every check of a decided request: touches its bucket, counts
  // the outcome and, when `Charges`, charges the bucket (admitting it if
  // new: an uncharged bucket is never admitted). Buckets already in a table are
  // settled before new ones are admitted, so an admission can never evict a
  // bucket this request still has to write.
  //
  // `admit_leads` (a SharedLimiter installing what the store reported):
  // also admits a bucket the request was not charged to when its verdict
  // carries a lead, so the mirror learns of buckets other processes drained.
  void Settle(const Evaluation& e, const Decision& d, MonotonicTime now,
              int64_t cost, bool admit_leads = false);
  // After Settle, for an allowed decision made at `now`: takes a lease for
  // every in-flight check of `e` that `Charges`, ending at `at` (now, or
  // now + the delay) + the policy's lease (or `request.max_lease` if
  // shorter), into `d.leases`.
  void TakeLeases(const Evaluation& e, const Request& request,
                  MonotonicTime now, MonotonicTime at, Decision& d);
  // Ends the leases `ids` (Limiter::Release); those already ended are
  // skipped. Takes the scope tables' lock when shared.
  void Release(std::span<const LeaseId> ids, MonotonicTime now);
  // --- For a SharedLimiter's mirror (cold paths). ---------------------------
  // Drops the buckets of every policy that is not `Sharing::kLocal`: the
  // store they mirrored lost its state.
  void EraseSharedBuckets();
  // Drains the bucket of `c` (settled, so in a table if charged) by a
  // further `extra_ns`, up to empty: a charge larger than cost * T.
  void AddLead(const BucketCheck& c, int64_t extra_ns, MonotonicTime now);
  // The lead of the (evaluated or inspected) bucket of `c` without rate.h's
  // pull-back to tau: approximate sharing keeps debt there.
  int64_t UnclampedLead(const BucketCheck& c, MonotonicTime now) const;
  // Raises the bucket of `key` (admitting it if absent) to at least
  // `lead` ahead of `now`, unclamped: what the store reported after a sync.
  void RaiseLead(Scope scope, const BucketCheck::Key& key, int64_t lead,
                 MonotonicTime now);
  // `Charge` for the scopes in `mask`: charges (or refunds, cost < 0) every
  // applying limited policy's bucket without checking. With `completion`
  // (`Settle`): only the policies charged on the response whose `status`
  // lists the completion's, each by its cost (bytes: the body's).
  void ChargeScopes(const Request& request, MonotonicTime now, ScopeMask mask,
                    const Completion* completion = nullptr);

  // Reload in two steps, so that a ShardedLimiter compiles a config once and
  // installs the result in every shard. Only the first step can fail.
  static absl::Status CheckTablesUnchanged(const TableOptions& current,
                                           const TableOptions& next);
  // Refuses a change to `routes:`: the route ids that key the buckets would
  // change meaning.
  static absl::Status CheckRoutesUnchanged(const RouteNormalizer& current,
                                           const RouteOptions& next);
  static absl::StatusOr<std::shared_ptr<const PolicySet>> CompilePolicies(
      const LimiterConfig& config, const RouteNormalizer& normalizer);
  // `config.tiers` against the set CompilePolicies built from `config`.
  static absl::StatusOr<std::shared_ptr<const TierSet>> CompileTiers(
      const LimiterConfig& config, const PolicySet& policies);
  // `kept_tokens` null (a lone engine): also drops the buckets and leases
  // of the shared tables whose tokens the install freed or handed out
  // again. Else the caller driving several engines over one ScopeTables
  // gets the kept tokens and calls EraseStaleShared once, after every
  // engine installed (each computes the same set).
  // `tiers` (compiled against `next`) replaces the engine's; the driver of
  // a shared TierDirectory installs them there too, a lone engine does.
  void Install(std::shared_ptr<const PolicySet> next,
               const ExemptOptions& exempt,
               std::shared_ptr<const TierSet> tiers,
               std::vector<bool>* kept_tokens = nullptr);

  // The decision for an exempt request (Evaluation::exempt) on `route`, of
  // the tier named `tier` (empty: none).
  static Decision ExemptDecision(const Route& route,
                                 std::string_view tier = {});

  // --- Early loads (StartEarlyLoads; public for tests). --------------------
  // Buckets in the ip and user tables from which a check starts its
  // aggregate buckets' loads first.
  static constexpr size_t kEarlyLoadEntries = size_t{1} << 15;
  // The aggregate policies whose buckets a request's loads start with, if
  // any (kNoPolicy: none of that scope): per scope, the first policy of
  // `policies` that every request of the scope checks in one shared bucket.
  struct EarlyLoads {
    PolicyId ip = kNoPolicy;
    PolicyId user = kNoPolicy;
  };
  static EarlyLoads FindEarlyLoads(const PolicySet& policies);
  // Those buckets' keys for `request`, hashed as the tables hash them
  // (has_ip, has_user: whether it has that bucket).
  struct EarlyKeys {
    bool has_ip = false;
    internal::IpBucketKey ip;
    size_t ip_hash = 0;
    bool has_user = false;
    internal::UserBucketKey user;
    size_t user_hash = 0;
  };
  EarlyKeys EarlyLoadKeys(const Request& request) const;

  // --- Tiers (Limiter::SetTier and friends; cold paths). -------------------
  TierDirectory& tier_directory() const { return *tier_directory_; }
  // --- Snapshots (mxlimit/snapshot.h; engine_snapshot.cc) -----------------
  // This engine's bucket tokens and their policies' fingerprints.
  std::vector<PolicyFingerprint> PolicyFingerprints() const;
  // Of the route table, whose ids per-route bucket keys carry.
  uint64_t RouteFingerprint() const;
  // The ip and user tables, and with `scope_tables` the origin, room and
  // target ones (under their lock), leads taken at `now`.
  void WriteBuckets(SnapshotWriter& w, MonotonicTime now,
                    bool scope_tables) const;
  // Puts one staged bucket back under `token` with `tat_ns`, keeping the
  // later TAT where its key is in the table already.
  void RestoreBucket(const SnapshotEntry& e, uint16_t token, int64_t tat_ns);
  // The capacity of every table WriteBuckets writes.
  size_t SnapshotCapacity(bool scope_tables) const;

  // Limiter::ResetBuckets: drops the user-scope buckets of `subject`'s
  // user, or the ip-scope buckets that hold any address of its network.
  // Returns how many. O(table size).
  size_t ResetBuckets(const TierSubject& subject);
  // Which assignment puts `request` in a tier, if one does.
  std::optional<TierAssignment> DescribeTier(const Request& request,
                                             MonotonicTime now) const {
    return tier_directory_->Describe(request.user_id, request.client, now);
  }

 private:
  using IpTable =
      internal::BucketTable<internal::IpBucketKey, internal::BucketKeyHash>;
  using UserTable =
      internal::BucketTable<internal::UserBucketKey, internal::BucketKeyHash>;

  // Resolve's second half: `e.ip_policy`, `e.user_policy` and a check, with
  // its bucket key (hashed, its load started), for each policy of `r` in the
  // scopes of `mask`.
  // The user key comes from `prepared` when it has one.
  void AddChecks(const Request& request, ScopeMask mask,
                 const PolicySet::Resolution& r, Evaluation& e,
                 const PreparedRequest* prepared, std::string_view path) const;
  // AddChecks, Evaluate's table steps and Settle for the general case, and
  // (kPlain) for a plain resolution, which needs none of the branches for
  // subject scopes, leases and queues.
  template <bool kPlain>
  void AddChecksOf(const Request& request, ScopeMask mask,
                   const PolicySet::Resolution& r, Evaluation& e,
                   const internal::UserBucketKey* user_base,
                   std::string_view path) const;
  template <bool kPlain>
  void EvaluateChecks(Evaluation& e, MonotonicTime now, int64_t cost);
  template <bool kPlain>
  void SettleChecks(const Evaluation& e, const Decision& d, MonotonicTime now,
                    int64_t cost, bool admit_leads);
  template <bool kPlain>
  UserTable& TableOf(Scope scope) {
    if constexpr (kPlain) {
      return user_table_;
    } else {
      return NamedTable(scope);
    }
  }
  template <bool kPlain>
  const UserTable& TableOf(Scope scope) const {
    if constexpr (kPlain) {
      return user_table_;
    } else {
      return NamedTable(scope);
    }
  }
  // The key of an origin, room or target check `c` of `request` (its
  // subject, found once per request into `subject`).
  struct Subjects;
  void AssignSubjectKey(const Request& request, const ResolvedPolicy& a,
                        std::string_view path, RouteId route, Subjects& s,
                        BucketCheck& c) const;
  // The table of a scope's buckets: the user table, or a shared one.
  UserTable& NamedTable(Scope scope) {
    return scope == Scope::kUser ? user_table_ : scope_tables_->of(scope);
  }
  const UserTable& NamedTable(Scope scope) const {
    return scope == Scope::kUser ? user_table_ : scope_tables_->of(scope);
  }
  // The state `c` was evaluated (or inspected) on; null: a fresh bucket.
  const GcraState* LocatedState(const BucketCheck& c) const {
    if (!c.has_bucket) return nullptr;
    if (c.slot != 0) {
      return c.scope == Scope::kIp ? ip_table_.StateAt(c.slot)
                                   : NamedTable(c.scope).StateAt(c.slot);
    }
    // Found by the hash Resolve stored.
    return c.scope == Scope::kIp
               ? ip_table_.Peek({&c.key.ip, c.hash})
               : NamedTable(c.scope).Peek({&c.key.user, c.hash});
  }
  void SettleOne(const BucketCheck& c, GcraState* bucket, const Decision& d,
                 MonotonicTime now, int64_t cost);
  // Combine's first pass: the smallest remaining over the allowed
  // enforcing checks that count requests, as the fraction slack / interval,
  // with the check that has it; and whether any check refused.
  struct MinRemaining {
    int64_t slack = std::numeric_limits<int64_t>::max();
    int64_t interval = 1;
    const BucketCheck* check = nullptr;
    bool refused = false;
  };
  // Adds the part's own checks (OwnCheck) to `min`.
  static void ScanOwn(const Evaluation& part, bool lone, bool user_side,
                      bool weighed, MinRemaining& min);
  // Combine's second pass, for a refused request: the part's own refusing
  // checks written into `d` (the enforcing one with the longest wait as
  // `denier`, the first shadow one as the shadow denial).
  void AddRefusals(const Evaluation& part, bool lone, bool user_side,
                   Decision& d, const BucketCheck*& denier) const;
  // Combine's last step: the quota of `c`'s policy, with `next` the wait
  // until a request of cost 1 fits its bucket (Decision::quota).
  static void FillQuota(const BucketCheck& c, std::chrono::nanoseconds next,
                        DecisionQuota& quota);
  // TryDelay's steps. Whether `c` is the part's own check (as Combine reads
  // them: all of a lone engine's; a split request's IP-scope checks on the
  // IP side, the others on the user side).
  static bool OwnCheck(const BucketCheck& c, bool lone, bool user_side);
  // Raises `wait` to the longest wait of the part's own denying checks;
  // false when one of them cannot be delayed.
  static bool AddDelayWait(const Evaluation& part, bool lone, bool user_side,
                           std::chrono::nanoseconds& wait);
  // Evaluates the part's own checks again at `at`. With `wait` (a delayed
  // admission), an in-flight check whose wait is within it is allowed
  // instead; without, in-flight checks are evaluated at `at` too.
  void ReevaluateOwn(Evaluation& part, bool lone, bool user_side,
                     MonotonicTime at, int64_t cost,
                     const std::chrono::nanoseconds* wait) const;
  // An in-flight check's verdict: allowed while its group holds fewer
  // leases than the limit, else denied until the earliest one ends.
  void EvaluateInFlight(BucketCheck& c, MonotonicTime now) const;
  static LeaseGroupKey LeaseGroupOf(const BucketCheck& c) {
    return c.scope == Scope::kIp
               ? LeaseGroupKey::Of(static_cast<uint8_t>(c.scope), c.key.ip)
               : LeaseGroupKey::Of(static_cast<uint8_t>(c.scope), c.key.user);
  }
  bool IsExempt(const Request& request) const;
  // Sets `e.tier` from the directory (called only when it is not empty).
  void FindTier(const Request& request, MonotonicTime now, Evaluation& e) const;
  // FindTier; true (and `e.exempt`) when the tier is an exempt one.
  bool LooksUpTier(const Request& request, MonotonicTime now,
                   Evaluation& e) const;
  // When `request` is exempt (flag, address or user): marks `e` so, with
  // its route, and returns true. Starts loading the tier directory's lines
  // (Resolve looks the tier up).
  bool MarkExempt(const Request& request, const PreparedRequest* prepared,
                  Evaluation& e) const;

  // Large tables: the loads of a request's aggregate buckets (EarlyLoads)
  // start before its route is matched, so that their misses overlap the
  // match instead of following it. The keys are built twice (here and in
  // AddChecks); below kEarlyLoadEntries buckets the tables sit in cache,
  // nothing would be waited for, and a request skips the step
  // (BM_Limiter_Check's two sizes measure both sides).
  bool WantsEarlyLoads() const {
    return early_loads_ &&
           ip_table_.size() + user_table_.size() >= kEarlyLoadEntries;
  }
  void StartEarlyLoads(const Request& request) const;
  // The horizon of the checks an idle resolution leaves out
  // (src/policy/idle_checks.h): from `idle_from_` on, every bucket of a
  // policy IdlesWhileRoomy has a byte of room. A bucket's TAT is at most
  // `idle_tat_` (raised by every charge, sync and restore of one; found
  // again by Install's sweep), and it has the byte once now >= TAT - (tau -
  // T), so idle_from_ = idle_tat_ - `idle_slack_`, the smallest tau - T of
  // those policies and their tiers' copies.
  bool IdleChecks(MonotonicTime now) const {
    return now.nanoseconds() >= idle_from_;
  }
  // A bucket of such a policy now has `tat` (a policy's test is the
  // caller's).
  void NoteIdleTat(int64_t tat) {
    if (tat <= idle_tat_) return;
    idle_tat_ = tat;
    UpdateIdleFrom();
  }
  void UpdateIdleFrom();
  bool IdleToken(uint16_t token) const;
  // The smallest tau - T of the policies of `policies` that idle and of
  // their copies in `tiers` (may be null).
  static int64_t IdleSlack(const PolicySet& policies, const TierSet* tiers);
  // The count a left-out check would have made (SettleOne's, for an
  // allowed verdict).
  void CountIdled(PolicyId policy, const Decision& d) {
    PolicyCounters& counters = policy_counters_[policy];
    if (d.allowed) {
      ++counters.allowed;
    } else {
      ++counters.denied_by_other;
    }
  }
  // IsExempt for a request without the flag needs no work when no address
  // or user is exempt.
  bool MaybeExempt(const Request& request) const {
    return request.exempt || has_exemptions_;
  }

  TableOptions tables_;
  // The tables' client prefixes (MaskAddress), precomputed.
  AddressMasker client_mask_;
  std::shared_ptr<const RouteNormalizer> normalizer_;
  // normalizer_->keys(), read on every request.
  std::span<const std::string_view> route_keys_;
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
  // Denied requests by route id, sized to the route table once: route ids
  // are fixed by the build, so the counters outlive reloads.
  std::unique_ptr<uint64_t[]> route_denials_;
  // Decisions on the fallback route: [0] allowed, [1] denied.
  uint64_t fallback_decisions_[2] = {0, 0};
  // Keys the digest that identifies long user IDs (see bucket_keys.h), drawn
  // at random per engine so users cannot aim at each other's buckets.
  internal::SipKey user_key_secret_;
  // Who is in which tier (installed by this engine when it owns it, else
  // by its driver), and this engine's compiled tiers (which may lag the
  // directory's while a ShardedLimiter reloads shard by shard).
  bool owns_tier_directory_;
  std::shared_ptr<TierDirectory> tier_directory_;
  std::shared_ptr<const TierSet> tiers_;
  // Set by Install (FindEarlyLoads); `early_loads_`: either scope has one,
  // the one test a request makes before the table sizes.
  EarlyLoads early_;
  bool early_loads_ = false;
  // See IdleChecks. No policy idles: idle_from_ is never reached.
  int64_t idle_from_ = std::numeric_limits<int64_t>::max();
  int64_t idle_tat_ = std::numeric_limits<int64_t>::min();
  int64_t idle_slack_ = 0;
  // The bucket tokens of the policies that idle (Install's sweep,
  // RestoreBucket, RaiseLead); none: idle_from_ stays out of reach.
  std::vector<uint16_t> idle_tokens_;
  IpTable ip_table_;
  UserTable user_table_;
  std::shared_ptr<ScopeTables> scope_tables_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_ENGINE_H_
