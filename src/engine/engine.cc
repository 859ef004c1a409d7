#include "src/engine/engine.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/user_id.h"
#include "src/policy/delay_queue.h"
#include "src/policy/idle_checks.h"

// `Check` inlines its whole call tree from this file (Evaluate, Resolve, the
// tables, Combine, Settle*), so the evaluation stays in registers rather than
// crossing five calls as a 240-byte struct; the out-of-line forms remain for
// ShardedLimiter and Peek. Needs -fno-semantic-interposition under -fPIC
// (CMakeLists.txt), else GCC may not inline exported functions at all.
// BM_Limiter_Check (bench/limiter_bench) guards both: keep them while it
// runs fewer instructions and no slower with them (CHANGELOG.md has the last
// measurement).
//
// The rare paths (a denial's delay, an exempt request) stay out of line:
// flattened into the checks they only make them larger. So does the key of
// an origin, room or target (MXLIMIT_NOINLINE: not rare for a federation
// or room request, but never on a client's path): inlined, its copies of
// the user ID check and the keyed digest spread the client path's code
// apart, and BM_Limiter_Check measured it slower.
#if defined(__GNUC__)
#define MXLIMIT_FLATTEN __attribute__((flatten))
#define MXLIMIT_COLD __attribute__((noinline, cold))
#define MXLIMIT_NOINLINE __attribute__((noinline))
#else
#define MXLIMIT_FLATTEN
#define MXLIMIT_COLD
#define MXLIMIT_NOINLINE
#endif

namespace mxlimit::internal {
namespace {

// TryDelay's own first test, inline: a denial that cannot be delayed (a
// flood's, mostly) makes no call.
bool MayDelay(const Decision& d, const Request& request) {
  return !d.allowed && !d.never && request.may_delay;
}

// The bytes a `cost: request_bytes` policy charges: the body's length, or a
// whole burst when it is unknown (a chunked upload), so that no upload slips
// past a quota by hiding its length: one needs a full bucket and spends it.
int64_t RequestBytes(const Policy& p, int64_t request_bytes) {
  return request_bytes < 0 ? p.rate.burst() : request_bytes;
}

// What a response charges a policy charged on the response (`Settle`).
int64_t ResponseCost(const Policy& p, const Request& request,
                     const Completion& completion) {
  switch (p.cost) {
    case CostKind::kResponseBytes:
      return completion.body_bytes;
    case CostKind::kRequestBytes:
      return RequestBytes(p, request.request_bytes);
    case CostKind::kRequests:
      break;
  }
  return request.cost;
}

// a / b < c / d for non-negative a, c and positive b, d, without dividing.
bool LessRatio(int64_t a, int64_t b, int64_t c, int64_t d) {
#if defined(__SIZEOF_INT128__)
  __extension__ using I128 = __int128;  // not ISO C++: say so
  return static_cast<I128>(a) * d < static_cast<I128>(c) * b;
#else
  return a / b < c / d;
#endif
}

}  // namespace

RequestSubjects SubjectsOf(const Request& request) {
  return RequestSubjects{!request.user_id.empty(), !request.origin.empty(),
                         !request.target_user.empty(), request.target};
}

// What one bucket (null: a fresh one) says about a request: its GCRA verdict,
// which carries the bucket's lead (all that settling it needs, see
// Engine::SettleOne). Changes nothing. The `remaining` of a limited rate is
// left to Combine, which needs only the smallest over all checks: it compares
// the verdicts' slacks, so a request pays one division, not one per bucket.
void Engine::EvaluateCheck(BucketCheck& c, const GcraState* state,
                           MonotonicTime now, int64_t cost, int64_t queue_ns) {
  static constexpr GcraState kFreshBucket;
  const GcraState& bucket = state != nullptr ? *state : kFreshBucket;
  // With no queue, GcraEvaluateQueued is GcraEvaluate: one call, no branch.
  c.verdict = GcraEvaluateQueued(c.spec->rate, bucket, now, cost, queue_ns);
}

int64_t Engine::DecisionCost(const BucketCheck& c, int64_t cost,
                             int64_t request_bytes) {
  switch (c.spec->cost) {
    case CostKind::kRequests:
      return cost;
    case CostKind::kRequestBytes:
      // Even an empty body needs a byte of room: a spent quota denies every
      // request it covers.
      return std::max<int64_t>(RequestBytes(*c.spec, request_bytes), 1);
    case CostKind::kResponseBytes:
      break;
  }
  return 1;
}

int64_t Engine::SettleCost(const BucketCheck& c, int64_t cost,
                           int64_t request_bytes) {
  if (ChargedOnResponse(*c.spec)) return 0;
  return c.spec->cost == CostKind::kRequestBytes
             ? RequestBytes(*c.spec, request_bytes)
             : cost;
}

Engine::Engine(const TableOptions& tables,
               std::shared_ptr<const RouteNormalizer> normalizer,
               const SipKey& user_key_secret,
               std::shared_ptr<ScopeTables> scope_tables,
               std::shared_ptr<TierDirectory> tiers)
    : tables_(tables),
      client_mask_(tables.ipv4_prefix, tables.ipv6_prefix),
      normalizer_(std::move(normalizer)),
      route_keys_(normalizer_->keys()),
      route_denials_(std::make_unique<uint64_t[]>(route_keys_.size())),
      user_key_secret_(user_key_secret),
      owns_tier_directory_(tiers == nullptr),
      tier_directory_(tiers != nullptr ? std::move(tiers)
                                       : std::make_shared<TierDirectory>(
                                             /*synchronized=*/false)),
      ip_table_(tables.ip_capacity),
      user_table_(tables.user_capacity),
      scope_tables_(scope_tables != nullptr
                        ? std::move(scope_tables)
                        : std::make_shared<ScopeTables>(tables, *normalizer_,
                                                        /*shared=*/false)) {}

Engine::~Engine() = default;

MXLIMIT_COLD Decision Engine::ExemptDecision(const Route& route,
                                             std::string_view tier) {
  Decision d;
  d.exempt = true;
  d.remaining = kUnlimitedRemaining;
  d.route_id = route.id;
  d.route_key = route.key;
  d.tier = tier;
  return d;
}

RoomValue Engine::FindRoom(const Request& request,
                           std::array<char, kMaxRoomBytes>& buf) const {
  size_t path_size = 0;
  const RouteId id = normalizer_->Match(request.target, &path_size);
  return scope_tables_->rooms.Find(id, request.target.substr(0, path_size),
                                   buf);
}

bool Engine::IsExempt(const Request& request) const {
  if (request.exempt) return true;
  for (const Cidr& net : exempt_ips_) {
    if (net.Contains(request.client)) return true;
  }
  return !request.user_id.empty() && !exempt_users_.empty() &&
         exempt_users_.contains(internal::ToAbsl(request.user_id));
}

void Engine::Resolve(const Request& request, MonotonicTime now, ScopeMask mask,
                     Evaluation& e, PreparedRequest* prepared,
                     bool idle_checks) const {
  const RequestSubjects subjects = SubjectsOf(request);
  if (prepared != nullptr) {
    e.route = prepared->route;
    if (!tier_directory_->empty()) [[unlikely]] {
      if (LooksUpTier(request, now, e)) return;
    }
    if (prepared->resolved_on == policies_.get()) {
      AddChecks(request, mask, *prepared->resolution, e, prepared,
                prepared->path);
      return;
    }
    const PolicySet::Resolution r = policies_->Resolve(
        request.method, prepared->route.id, prepared->path, subjects);
    AddChecks(request, mask, r, e, prepared, prepared->path);
    return;
  }
  // RouteNormalizer::Normalize, plus the path end found by the same pass;
  // fields are stored one by one (a returned Route copied whole stalled
  // store-to-load forwarding on every request).
  size_t path_size = 0;
  const RouteId id = normalizer_->Match(request.target, &path_size);
  e.route.id = id;
  e.route.key = route_keys_[id];
  e.route.known = id != kFallbackRouteId;
  const std::string_view path = request.target.substr(0, path_size);
  const PolicySet::Resolution r =
      policies_->Resolve(request.method, e.route.id, path, subjects,
                         idle_checks && IdleChecks(now));
  if (!tier_directory_->empty()) [[unlikely]] {
    if (LooksUpTier(request, now, e)) return;
  }
  AddChecks(request, mask, r, e, nullptr, path);
}

// A request's origin, room and target, each found once (on its first check)
// however many policies of its scope apply.
struct Engine::Subjects {
  // The origin's key for the last network it was bound to (an unverified
  // origin's policies usually share one prefix, so it is hashed once).
  bool origin_found = false;
  bool origin_valid = false;
  IpAddress origin_network;
  internal::UserBucketKey origin_key;
  bool room_found = false;
  internal::UserBucketKey room_key;
  std::array<char, kMaxRoomBytes> room_buf;
  bool target_found = false;
  internal::UserBucketKey target_key;
};

MXLIMIT_NOINLINE void Engine::AssignSubjectKey(const Request& request,
                                               const ResolvedPolicy& a,
                                               std::string_view path,
                                               RouteId route, Subjects& s,
                                               BucketCheck& c) const {
  const PolicyId token = bucket_token_[a.policy];
  switch (a.scope) {
    case Scope::kOrigin: {
      if (!s.origin_found) {
        s.origin_valid = IsWellFormedOrigin(request.origin);
      }
      const IpAddress network = request.origin_verified
                                    ? IpAddress{}
                                    : ip_masks_[a.policy].Apply(request.client);
      if (!s.origin_found || network != s.origin_network) {
        s.origin_key.AssignValue(request.origin, s.origin_valid,
                                 request.origin_verified ? nullptr : &network,
                                 token, a.bucket_route, user_key_secret_);
        s.origin_network = network;
        s.origin_found = true;
      }
      c.key.user.AssignRekeyed(s.origin_key, token, a.bucket_route);
      return;
    }
    case Scope::kRoom:
      if (!s.room_found) {
        const RoomValue room =
            scope_tables_->rooms.Find(route, path, s.room_buf);
        s.room_key.AssignValue(room.value, room.valid, nullptr, token,
                               a.bucket_route, user_key_secret_);
        s.room_found = true;
      }
      c.key.user.AssignRekeyed(s.room_key, token, a.bucket_route);
      return;
    case Scope::kTarget:
      if (!s.target_found) {
        s.target_key.AssignValue(
            request.target_user, IsWellFormedUserId(request.target_user),
            nullptr, token, a.bucket_route, user_key_secret_);
        s.target_found = true;
      }
      c.key.user.AssignRekeyed(s.target_key, token, a.bucket_route);
      return;
    case Scope::kIp:
    case Scope::kUser:
      break;
  }
}

void Engine::AddChecks(const Request& request, ScopeMask mask,
                       const PolicySet::Resolution& r, Evaluation& e,
                       const PreparedRequest* prepared,
                       std::string_view path) const {
  e.ip_policy = r.ip;
  e.user_policy = r.user;
  e.plain = r.plain;
  // A check left out is still settled by the response.
  e.idled = r.idled;
  e.settles = r.idled != kNoPolicy;
  // The user part of every user key is built (and checked) once: by the
  // driver that prepared the request, else here.
  const internal::UserBucketKey* user_base =
      prepared != nullptr && prepared->has_user_key ? &prepared->user_key
                                                    : nullptr;
  if (r.plain) {
    AddChecksOf<true>(request, mask, r, e, user_base, path);
  } else {
    e.weighed = r.weighed;
    e.request_bytes = request.request_bytes;
    AddChecksOf<false>(request, mask, r, e, user_base, path);
  }
}

template <bool kPlain>
void Engine::AddChecksOf(const Request& request, ScopeMask mask,
                         const PolicySet::Resolution& r, Evaluation& e,
                         const internal::UserBucketKey* user_base,
                         std::string_view path) const {
  internal::UserBucketKey user_key;
  const IpAddress& client = request.client;
  struct NoSubjects {};
  [[maybe_unused]] std::conditional_t<kPlain, NoSubjects, Subjects> subjects;
  // A tier's copy of the policies differs only in its rates.
  const Policy* const specs = e.tier == nullptr ? policies_->policies().data()
                                                : e.tier->policies.data();
  // Kept here, not in `e`, while checks are written (byte stores into
  // them may alias it).
  uint8_t count = e.count;
  SubjectHashes hashes;
  for (const ResolvedPolicy& a : r.all()) {
    const ScopeMask scope = a.scope == Scope::kIp ? kIpScope : kUserScope;
    if ((mask & scope) == 0) continue;
    BucketCheck& c = e.checks.Add(count);
    const Policy& spec = specs[a.policy];
    // What PolicySet::Resolution::plain promises.
    assert(!kPlain ||
           ((a.scope == Scope::kIp || a.scope == Scope::kUser) &&
            !spec.concurrency.has_value() && spec.on_limit != OnLimit::kDelay));
    // policy, bucket_route, layer, scope and shadow, as one word (the
    // byte after them, in_flight, is written next).
    std::memcpy(static_cast<void*>(&c), &a, sizeof(ResolvedPolicy));
    c.in_flight = !kPlain && spec.concurrency.has_value();
    if constexpr (!kPlain) {
      e.settles = e.settles || (r.weighed && ChargedOnResponse(spec));
    }
    c.has_bucket = spec.rate.kind() == Rate::Kind::kLimited;
    c.slot = 0;
    c.spec = &spec;
    // An in-flight policy has no bucket.
    if (!c.has_bucket) [[unlikely]] {
      if (kPlain || !c.in_flight) continue;
      // Leases live in the shared tables, under their lock.
      e.in_flight = true;
      e.lock().Hold(*scope_tables_);
    }
    // Written in place: a returned key copied whole would stall
    // store-to-load forwarding (it is built a word at a time).
    if (a.scope == Scope::kIp) {
      const IpAddress masked = ip_masks_[a.policy].Apply(client);
      const PolicyId token = bucket_token_[a.policy];
      c.key.ip = internal::IpBucketKey::Make(masked, token, a.bucket_route);
      if (kPlain || c.has_bucket) {
        c.hash =
            hashes.Address(ip_table_.hasher(), masked, token, a.bucket_route);
        ip_table_.Prefetch({&c.key.ip, c.hash});
      }
      continue;
    }
    if (kPlain || a.scope == Scope::kUser) {
      if (user_base == nullptr) {
        user_key.Assign(request.user_id, 0, 0, user_key_secret_);
        user_base = &user_key;
      }
      c.key.user.AssignRekeyed(*user_base, bucket_token_[a.policy],
                               a.bucket_route);
      if (kPlain || c.has_bucket) {
        c.hash = hashes.User(user_table_.hasher(), *user_base, c.key.user);
        user_table_.Prefetch({&c.key.user, c.hash});
      }
      continue;
    }
    if constexpr (!kPlain) {
      // The shared tables are read and written under their lock from here
      // to the end of the request.
      e.lock().Hold(*scope_tables_);
      AssignSubjectKey(request, a, path, e.route.id, subjects, c);
      if (c.has_bucket) {
        const UserTable& table = NamedTable(c.scope);
        c.hash = table.Hashed(c.key.user).hash;
        table.Prefetch({&c.key.user, c.hash});
      }
    }
  }
  e.count = count;
}

MXLIMIT_COLD void Engine::FindTier(const Request& request, MonotonicTime now,
                                   Evaluation& e) const {
  const TierMatch m = tier_directory_->Find(request.user_id, request.client,
                                            now, &e.tier_probe);
  if (m.name.empty() || tiers_ == nullptr) return;
  // A set other than this engine's: a reload is being installed shard by
  // shard, and the tier is found by name (or is gone).
  const std::optional<uint16_t> index = m.set == tiers_.get()
                                            ? std::optional<uint16_t>(m.index)
                                            : tiers_->Find(m.name);
  if (!index.has_value()) return;
  e.tier = &tiers_->tier(*index);
  e.tier_name = m.name;
}

bool Engine::LooksUpTier(const Request& request, MonotonicTime now,
                         Evaluation& e) const {
  FindTier(request, now, e);
  if (e.tier == nullptr || !e.tier->exempt) return false;
  e.exempt = true;
  return true;
}

bool Engine::MarkExempt(const Request& request, const PreparedRequest* prepared,
                        Evaluation& e) const {
  // The tier is looked up once the route is matched (Resolve); its loads
  // start now.
  if (!tier_directory_->empty()) [[unlikely]] {
    tier_directory_->Prefetch(request.user_id, request.client, e.tier_probe);
  }
  if (!MaybeExempt(request) || !IsExempt(request)) return false;
  e.exempt = true;
  // Still normalized, so the decision and reports name the route.
  e.route = prepared != nullptr
                ? prepared->route
                : normalizer_->Normalize(request.method, request.target);
  return true;
}

void Engine::Evaluate(const Request& request, MonotonicTime now, ScopeMask mask,
                      Evaluation& e, PreparedRequest* prepared) {
  if (BeginEvaluate(request, now, mask, e, prepared)) {
    FinishEvaluate(request, now, e);
  }
}

bool Engine::BeginEvaluate(const Request& request, MonotonicTime now,
                           ScopeMask mask, Evaluation& e,
                           PreparedRequest* prepared) {
  if (MarkExempt(request, prepared, e)) {
    ++exempt_requests_;
    return false;
  }
  Resolve(request, now, mask, e, prepared, /*idle_checks=*/true);
  if (e.exempt) [[unlikely]] {  // an exempt tier
    ++exempt_requests_;
    return false;
  }
  return true;
}

void Engine::FinishEvaluate(const Request& request, MonotonicTime now,
                            Evaluation& e) {
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  if (e.plain) {
    EvaluateChecks<true>(e, now, cost);
  } else {
    EvaluateChecks<false>(e, now, cost);
  }
}

template <bool kPlain>
void Engine::EvaluateChecks(Evaluation& e, MonotonicTime now, int64_t cost) {
  // Find the records (prefetching what relinking will touch) so the misses
  // overlap.
  for (size_t i = 0; i < e.count; ++i) {
    BucketCheck& c = e.checks.items[i];
    const GcraState* state = nullptr;
    if (c.has_bucket) {
      if (c.scope == Scope::kIp) {
        c.slot = ip_table_.Locate({&c.key.ip, c.hash});
        state = ip_table_.StateAt(c.slot);
      } else {
        const UserTable& table = TableOf<kPlain>(c.scope);
        c.slot = table.Locate({&c.key.user, c.hash});
        state = table.StateAt(c.slot);
      }
    }
    if constexpr (kPlain) {
      // No queue: nothing delays.
      EvaluateCheck(c, state, now, cost, 0);
    } else {
      EvaluateCheck(c, state, now, DecisionCostIn(e, c, cost),
                    DelayQueueNs(*c.spec));
      if (c.in_flight) [[unlikely]]
        EvaluateInFlight(c, now);
    }
  }
}

bool Engine::EvaluateSplit(Engine& ip, Engine& user, const Request& request,
                           MonotonicTime now, Evaluation& ip_part,
                           Evaluation& user_part, PreparedRequest& prepared) {
  // Both engines start their table loads before either waits on one, as a
  // lone engine does for its two tables.
  if (!ip.BeginEvaluate(request, now, kIpScope, ip_part, &prepared)) {
    return false;
  }
  user_part.request_lock = &ip_part.scope_lock;
  const bool user_begun =
      user.BeginEvaluate(request, now, kUserScope, user_part, &prepared);
  ip.FinishEvaluate(request, now, ip_part);
  if (user_begun) user.FinishEvaluate(request, now, user_part);
  return true;
}

void Engine::Inspect(const Request& request, MonotonicTime now, ScopeMask mask,
                     Evaluation& e, PreparedRequest* prepared) const {
  if (MarkExempt(request, prepared, e)) return;
  Resolve(request, now, mask, e, prepared);
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  for (size_t i = 0; i < e.count; ++i) {
    BucketCheck& c = e.checks.items[i];
    EvaluateCheck(c, LocatedState(c), now, DecisionCostIn(e, c, cost),
                  DelayQueueNs(*c.spec));
    if (c.in_flight) [[unlikely]]
      EvaluateInFlight(c, now);
  }
}

Decision Engine::Combine(const Evaluation& ip_part,
                         const Evaluation& user_part) const {
  Decision d;
  d.route_id = ip_part.route.id;
  d.route_key = ip_part.route.key;
  d.ip_policy = ip_part.ip_policy;
  d.user_policy = user_part.user_policy;
  d.tier = ip_part.tier_name;
  d.remaining = kUnlimitedRemaining;
  d.settles = ip_part.settles || user_part.settles;

  // Two passes: the first, over every request, only finds the smallest
  // remaining and whether any check refused; the second, only for a
  // refusal, writes the denial. Kept apart, the first pass's minimum stays
  // in registers and off the path to Settle, which needs only `allowed`.
  const bool lone = &ip_part == &user_part;
  const bool weighed = ip_part.weighed || user_part.weighed;
  MinRemaining min;
  ScanOwn(ip_part, lone, /*user_side=*/false, weighed, min);
  if (!lone) ScanOwn(user_part, lone, /*user_side=*/true, weighed, min);
  if (min.refused) [[unlikely]] {
    const BucketCheck* denier = nullptr;
    AddRefusals(ip_part, lone, /*user_side=*/false, d, denier);
    if (!lone) AddRefusals(user_part, lone, /*user_side=*/true, d, denier);
    // A denial always sets `denier` (the first one is worse than allowed).
    if (denier != nullptr) {
      FillQuota(*denier, d.retry_after, d.quota);
      return d;
    }
  }
  if (min.check != nullptr) {
    d.remaining = min.slack / min.interval;
    // A request of cost 1 fits once the slack reaches one interval.
    FillQuota(*min.check,
              std::chrono::nanoseconds(
                  std::max<int64_t>(min.interval - min.slack, 0)),
              d.quota);
  }
  return d;
}

void Engine::ScanOwn(const Evaluation& part, bool lone, bool user_side,
                     bool weighed, MinRemaining& min) {
  for (const BucketCheck& c : part.all()) {
    if (!OwnCheck(c, lone, user_side)) continue;
    const GcraVerdict& r = c.verdict;
    if (!r.allowed) {
      min.refused = true;
      continue;
    }
    // Allowed without a bucket: an unlimited rate, or in flight. Requests
    // left are counted by buckets charged a request at the decision: not
    // bytes, nor what only a response charges. Only weighed resolutions
    // have other buckets.
    if (c.shadow || !c.has_bucket ||
        (weighed && (c.spec->cost != CostKind::kRequests ||
                     c.spec->charge != ChargeOn::kRequest))) {
      continue;
    }
    // Compared by cross-multiplying (one division at the end), from a
    // start every fraction is below (a slack is at most tau); the first of
    // equal fractions is kept.
    const int64_t t = c.spec->rate.interval_ns();
    if (LessRatio(r.slack, t, min.slack, min.interval)) {
      min.slack = r.slack;
      min.interval = t;
      min.check = &c;
    }
  }
}

void Engine::AddRefusals(const Evaluation& part, bool lone, bool user_side,
                         Decision& d, const BucketCheck*& denier) const {
  for (const BucketCheck& c : part.all()) {
    if (!OwnCheck(c, lone, user_side) || c.verdict.allowed) continue;
    const GcraVerdict& r = c.verdict;
    if (c.shadow) {
      if (!d.shadow_denied) {
        d.shadow_denied = true;
        d.shadow_policy = c.spec->name;
        d.shadow_layer = policies_->layer_name(c.layer);
        d.shadow_policy_id = c.policy;
      }
      continue;
    }
    // Report the policy with the longest wait; `never` is the longest.
    const bool worse = d.allowed || (r.never && !d.never) ||
                       (!d.never && r.retry_after > d.retry_after);
    d.allowed = false;
    d.remaining = 0;
    if (!worse) continue;
    d.never = r.never;
    d.retry_after = r.retry_after;
    d.limited_by = LimitScopeOf(c.scope);
    d.policy = c.spec->name;
    d.layer = policies_->layer_name(c.layer);
    d.denied_policy = c.policy;
    denier = &c;
    // The other engine's checks of a split request may be of another
    // policy set (a ShardedLimiter installs a reload shard by shard):
    // ShardSet::PinNames names their error from that engine's shard.
    d.error = OwnCheck(c, lone, /*user_side=*/false)
                  ? policies_->limit_error(c.policy)
                  : nullptr;
  }
}

void Engine::FillQuota(const BucketCheck& c, std::chrono::nanoseconds next,
                       DecisionQuota& quota) {
  const Policy& p = *c.spec;
  quota.policy = p.name;
  quota.policy_id = c.policy;
  quota.next = next;
  if (c.in_flight) {
    quota.unit = QuotaUnit::kConcurrentRequests;
    quota.burst = p.concurrency.has_value() ? p.concurrency->limit : 0;
    return;
  }
  quota.unit = p.cost == CostKind::kRequests ? QuotaUnit::kRequests
                                             : QuotaUnit::kContentBytes;
  quota.burst = p.rate.burst();
  quota.interval = std::chrono::nanoseconds(p.rate.interval_ns());
}

bool Engine::OwnCheck(const BucketCheck& c, bool lone, bool user_side) {
  return lone || (user_side ? c.scope != Scope::kIp : c.scope == Scope::kIp);
}

bool Engine::AddDelayWait(const Evaluation& part, bool lone, bool user_side,
                          std::chrono::nanoseconds& wait) {
  for (const BucketCheck& c : part.all()) {
    if (!OwnCheck(c, lone, user_side) || c.shadow || c.verdict.allowed) {
      continue;
    }
    // An in-flight group queues at most kMaxQueuedLeases behind its limit.
    if (c.spec->on_limit != OnLimit::kDelay || c.verdict.never ||
        c.verdict.retry_after > c.spec->max_delay ||
        (c.in_flight && c.queued > kMaxQueuedLeases)) {
      return false;
    }
    wait = std::max(wait, c.verdict.retry_after);
  }
  return true;
}

void Engine::ReevaluateOwn(Evaluation& part, bool lone, bool user_side,
                           MonotonicTime at, int64_t cost,
                           const std::chrono::nanoseconds* wait) const {
  for (uint8_t i = 0; i < part.count; ++i) {
    BucketCheck& c = part.checks.items[i];
    if (!OwnCheck(c, lone, user_side)) continue;
    if (c.in_flight && wait != nullptr) {
      // Its group has room by `at` (the wait covers its leases' ends), and
      // it takes its lease at once, so that later requests queue behind.
      c.verdict.allowed = c.verdict.allowed || c.verdict.retry_after <= *wait;
      continue;
    }
    EvaluateCheck(c, LocatedState(c), at, DecisionCostIn(part, c, cost),
                  DelayQueueNs(*c.spec));
    if (c.in_flight) EvaluateInFlight(c, at);
  }
}

MXLIMIT_COLD MonotonicTime
Engine::TryDelay(const Engine& ip, const Engine& user, const Request& request,
                 MonotonicTime now, Evaluation& ip_part, Evaluation& user_part,
                 Decision& d) {
  if (d.allowed || d.never || !request.may_delay) return now;
  const bool lone = &ip_part == &user_part;
  std::chrono::nanoseconds wait{0};
  if (!AddDelayWait(ip_part, lone, false, wait) ||
      (!lone && !AddDelayWait(user_part, lone, true, wait)) ||
      wait.count() <= 0) {
    return now;
  }
  const MonotonicTime later =
      MonotonicTime::FromNanoseconds(now.nanoseconds() + wait.count());
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  // The buckets are as Evaluate found them: nothing has been settled yet.
  ip.ReevaluateOwn(ip_part, lone, false, later, cost, &wait);
  if (!lone) user.ReevaluateOwn(user_part, lone, true, later, cost, &wait);
  Decision admitted = ip.Combine(ip_part, user_part);
  if (!admitted.allowed) {
    // Cannot happen for the delaying policies; if another check still
    // denies, the denial stands (re-evaluated at `now` again).
    ip.ReevaluateOwn(ip_part, lone, false, now, cost, nullptr);
    if (!lone) user.ReevaluateOwn(user_part, lone, true, now, cost, nullptr);
    return now;
  }
  admitted.delay = wait;
  admitted.limited_by = d.limited_by;
  admitted.policy = d.policy;
  admitted.layer = d.layer;
  admitted.denied_policy = d.denied_policy;
  d = admitted;
  return later;
}

void Engine::Settle(const Evaluation& e, const Decision& d, MonotonicTime now,
                    int64_t cost, bool admit_leads) {
  if (e.plain) {
    SettleChecks<true>(e, d, now, cost, admit_leads);
  } else {
    SettleChecks<false>(e, d, now, cost, admit_leads);
  }
  if (e.idled != kNoPolicy) CountIdled(e.idled, d);
}

template <bool kPlain>
void Engine::SettleChecks(const Evaluation& e, const Decision& d,
                          MonotonicTime now, int64_t cost, bool admit_leads) {
  const BucketCheck* checks = e.checks.items;
  const size_t n = e.count;
  // Located buckets first (relinked to the recent end), then admissions,
  // which evict from the other end. Only a charged bucket is admitted: an
  // uncharged fresh one would hold nothing a missing one does not, and
  // admitting it could evict the very bucket that denied the request (tables
  // smaller than a request's bucket count), breaking its retry time.
  // The checks whose bucket is not in a table yet, one bit each.
  static_assert(kMaxResolved <= 32);
  uint32_t fresh = 0;
  for (size_t i = 0; i < n; ++i) {
    const BucketCheck& c = checks[i];
    if (c.has_bucket && c.slot == 0) {
      fresh |= uint32_t{1} << i;
      continue;
    }
    GcraState* bucket = nullptr;
    if (c.has_bucket) {
      bucket =
          c.scope == Scope::kIp
              ? ip_table_.Acquire({&c.key.ip, c.hash}, c.slot)
              : TableOf<kPlain>(c.scope).Acquire({&c.key.user, c.hash}, c.slot);
    }
    SettleOne(c, bucket, d, now, CostOf<kPlain>(c, cost, e));
  }
  for (; fresh != 0; fresh &= fresh - 1) {
    const BucketCheck& c = checks[std::countr_zero(fresh)];
    const int64_t charge = CostOf<kPlain>(c, cost, e);
    // A bucket charged only on the response is admitted by Settle then.
    const bool charges =
        Charges(c, d) && (kPlain || !e.weighed || !ChargedOnResponse(*c.spec));
    if (!charges && !(admit_leads && c.verdict.lead > 0)) {
      SettleOne(c, nullptr, d, now, charge);
      continue;
    }
    GcraState* bucket =
        c.scope == Scope::kIp
            ? ip_table_.Acquire({&c.key.ip, c.hash}, 0)
            : TableOf<kPlain>(c.scope).Acquire({&c.key.user, c.hash}, 0);
    SettleOne(c, bucket, d, now, charge);
  }
}

void Engine::EvaluateInFlight(BucketCheck& c, MonotonicTime now) const {
  const int64_t at = internal::ClampNow(now);
  const LeaseGroupKey key = LeaseGroupOf(c);
  const LeaseTable& leases = scope_tables_->leases;
  // Hashed once: TakeLeases finds the group again by it.
  c.hash =
      c.scope == Scope::kIp ? leases.Hash(c.key.ip) : leases.Hash(c.key.user);
  const LeaseTable::HashedGroup group{&key, c.hash};
  const LeaseTable::Group g = leases.Find(group, at);
  const auto limit = static_cast<uint32_t>(c.spec->concurrency->limit);
  GcraVerdict& v = c.verdict;
  v = GcraVerdict{};
  c.queued = 0;
  v.allowed = g.in_flight < limit;
  if (v.allowed) return;
  // Requests admitted late (`on_limit: delay`) hold their leases from the
  // decision on, so the group may hold more than `limit`: this request
  // passes once all but limit - 1 of them have ended.
  const size_t ahead =
      std::min<size_t>(g.in_flight - limit + 1, LeaseTable::kMaxRanked);
  c.queued = static_cast<uint8_t>(ahead);
  const int64_t free_at =
      ahead == 1 ? g.earliest_expiry_ns : leases.NthExpiry(group, at, ahead);
  v.retry_after = std::chrono::nanoseconds(free_at - at);
}

void Engine::TakeLeases(const Evaluation& e, const Request& request,
                        MonotonicTime now, MonotonicTime at, Decision& d) {
  LeaseTable& leases = scope_tables_->leases;
  const int64_t start = internal::ClampNow(at);
  bool expired = false;
  for (const BucketCheck& c : e.all()) {
    if (!c.in_flight || !Charges(c, d) || d.leases.count == kMaxLeases) {
      continue;
    }
    if (!expired) {
      // Frees what is due before taking more (never what a delayed start
      // is queued behind).
      leases.Expire(internal::ClampNow(now));
      expired = true;
    }
    std::chrono::nanoseconds lease = c.spec->concurrency->lease;
    if (request.max_lease.count() > 0) {
      lease = std::min(lease, request.max_lease);
    }
    const LeaseGroupKey key = LeaseGroupOf(c);
    d.leases.ids[d.leases.count++] =
        leases.Acquire({&key, c.hash}, start + lease.count());
  }
}

void Engine::Release(std::span<const LeaseId> ids, MonotonicTime now) {
  ReleaseLeases(*scope_tables_, ids, now);
}

void Engine::SettleOne(const BucketCheck& c, GcraState* bucket,
                       const Decision& d, MonotonicTime now, int64_t cost) {
  const bool charged = Charges(c, d);
  if (bucket != nullptr) {
    // The bucket is as Evaluate found it (nothing touches a table between
    // Evaluate and Settle), so the verdict's lead is still its lead.
    GcraApply(c.spec->rate, *bucket, now, cost, c.verdict, charged);
  }
  // Exactly one result per check (stats.h).
  PolicyCounters& counters = policy_counters_[c.policy];
  if (charged) {
    ++counters.allowed;
  } else if (c.verdict.allowed || (c.shadow && !d.allowed)) {
    // Allowed here but denied elsewhere; or a shadow denial of a request an
    // enforcing policy denied for real, which is that policy's denial.
    ++counters.denied_by_other;
  } else if (c.shadow) {
    ++counters.shadow_denied;
  } else {
    ++counters.denied;
    if (c.verdict.never) ++counters.never;
  }
}

MXLIMIT_FLATTEN Decision Engine::Check(const Request& request,
                                       MonotonicTime now,
                                       PreparedRequest* prepared) {
  // Out of line (engine_early_loads.cc), so that the flattened checks are
  // laid out as without it.
  if (prepared == nullptr && WantsEarlyLoads()) [[unlikely]] {
    StartEarlyLoads(request);
  }
  Evaluation e;
  Evaluate(request, now, kBothScopes, e, prepared);
  // One named result, built in place: returning one of two objects (or a
  // copy of one) made the compiler copy a Decision written field by field
  // with wide loads, which stalls store-to-load forwarding.
  Decision d = e.exempt ? ExemptDecision(e.route, e.tier_name) : Combine(e, e);
  if (!e.exempt) {
    const MonotonicTime at = MayDelay(d, request)
                                 ? TryDelay(*this, *this, request, now, e, e, d)
                                 : now;
    Settle(e, d, at, std::max<int64_t>(request.cost, 0));
    if (e.in_flight && d.allowed) [[unlikely]] {
      TakeLeases(e, request, now, at, d);
    }
    CountDecision(d);
  }
  return d;
}

MXLIMIT_FLATTEN Decision Engine::CheckPair(Engine& ip, Engine& user,
                                           const Request& request,
                                           MonotonicTime now,
                                           PreparedRequest& prepared) {
  // Resolved once for both scopes when both engines hold the same policy
  // set (always, except while a ShardedLimiter installs a reload shard by
  // shard).
  const PolicySet& policies = *ip.policies_;
  const PolicySet::Resolution r = policies.Resolve(
      request.method, prepared.route.id, prepared.path, SubjectsOf(request));
  prepared.resolved_on = &policies;
  prepared.resolution = &r;
  Evaluation ip_part;
  Evaluation user_part;
  if (!EvaluateSplit(ip, user, request, now, ip_part, user_part, prepared)) {
    return ExemptDecision(ip_part.route, ip_part.tier_name);
  }
  // Nothing is charged until every policy has answered.
  Decision d = ip.Combine(ip_part, user_part);
  const MonotonicTime at =
      MayDelay(d, request)
          ? TryDelay(ip, user, request, now, ip_part, user_part, d)
          : now;
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  ip.Settle(ip_part, d, at, cost);
  user.Settle(user_part, d, at, cost);
  if (d.allowed && (ip_part.in_flight || user_part.in_flight)) [[unlikely]] {
    ip.TakeLeases(ip_part, request, now, at, d);
    user.TakeLeases(user_part, request, now, at, d);
  }
  ip.CountDecision(d);
  return d;
}

Decision Engine::Peek(const Request& request, MonotonicTime now) const {
  Evaluation e;
  Inspect(request, now, kBothScopes, e);
  if (e.exempt) return ExemptDecision(e.route, e.tier_name);
  Decision d = Combine(e, e);
  TryDelay(*this, *this, request, now, e, e, d);
  return d;
}

void Engine::ChargeScopes(const Request& request, MonotonicTime now,
                          ScopeMask mask, const Completion* completion) {
  Evaluation e;
  if (MarkExempt(request, nullptr, e)) return;
  Resolve(request, now, mask, e);
  if (e.exempt) return;
  for (const BucketCheck& c : e.all()) {
    if (!c.has_bucket) continue;
    int64_t cost = 0;
    int64_t debt_ns = 0;
    if (completion != nullptr) {
      if (!StatusCharges(*c.spec, completion->status)) continue;
      cost = ResponseCost(*c.spec, request, *completion);
      // A response may cost more than was left: the debt (DelayQueueNs)
      // holds the next requests back.
      debt_ns = DelayQueueNs(*c.spec);
    } else {
      // What only a response charges is Settle's.
      if (ChargedOnResponse(*c.spec)) continue;
      cost = c.spec->cost == CostKind::kRequestBytes
                 ? (request.cost < 0 ? -1 : 1) *
                       RequestBytes(*c.spec, request.request_bytes)
                 : request.cost;
    }
    if (cost == 0 || (completion != nullptr && cost < 0)) continue;
    GcraState* bucket =
        c.scope == Scope::kIp
            ? ip_table_.FindOrAdmit({&c.key.ip, c.hash})
            : NamedTable(c.scope).FindOrAdmit({&c.key.user, c.hash});
    GcraCharge(c.spec->rate, *bucket, now, cost, debt_ns);
    if (IdlesWhileRoomy(*c.spec)) NoteIdleTat(bucket->tat);
  }
}

}  // namespace mxlimit::internal
