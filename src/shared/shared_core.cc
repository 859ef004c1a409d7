#include "src/shared/shared_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/mutex.h"
#include "src/options/store_url.h"
#include "src/policy/delay_queue.h"
#include "src/shared/store_ops.h"

namespace mxlimit::internal {

namespace {

// A shared bucket the store can hold: a limited rate whose tau fits the
// script's exact arithmetic.
bool StoreCanHold(const Policy& p) {
  // Byte costs and charges on the response are kept in process: the store's
  // script charges one cost to every bucket of a check.
  return p.rate.kind() == Rate::Kind::kLimited &&
         p.cost == CostKind::kRequests && !ChargedOnResponse(p) &&
         MaxStoreLead(p.rate, p.sharing) <= kMaxSharedLeadNs;
}

// Whether `c` is decided by the store: an exact-shared bucket that can pass
// at all (`cost > burst` is answered here, with `never`).
bool DecidedByStore(const Engine::BucketCheck& c) {
  return c.has_bucket && c.spec->sharing == Sharing::kExact &&
         !c.verdict.never && StoreCanHold(*c.spec);
}

// The verdict of a bucket whose lead the store reported.
GcraVerdict VerdictFromLead(const Engine::BucketCheck& c, int64_t lead,
                            MonotonicTime now, int64_t cost) {
  GcraState state;
  state.tat = ClampNow(now) + lead;
  // A queue the store kept past tau stays, as the engine keeps it.
  return GcraEvaluateQueued(c.spec->rate, state, now, cost,
                            DelayQueueNs(*c.spec));
}

// The fallback's verdict for a shared bucket with its rate and burst both
// scaled by `share`: the same tau, each request draining cost * T / share
// (at most tau, so a burst scaled below one still lets one through).
GcraVerdict ScaledVerdict(const Rate& rate, const GcraVerdict& local,
                          int64_t cost, double share, int64_t& charge_ns) {
  const double exact = static_cast<double>(cost) *
                       static_cast<double>(rate.interval_ns()) / share;
  charge_ns = std::min<int64_t>(static_cast<int64_t>(std::ceil(exact)),
                                rate.tolerance_ns());
  return GcraVerdictFor(rate, local.lead, charge_ns);
}

// Approximate sharing: decided here, from a mirror that may carry debt.
bool Approximate(const Engine::BucketCheck& c) {
  return c.has_bucket && c.spec->sharing == Sharing::kApproximate &&
         !c.verdict.never && StoreCanHold(*c.spec);
}

// GcraEvaluate's verdict with the lead as the mirror holds it, past tau when
// the store reported debt: the wait then exceeds tau, and a denial keeps the
// lead (GcraApply persists a positive lead as it is).
GcraVerdict DebtVerdict(const Rate& rate, int64_t lead, int64_t cost) {
  return GcraVerdictFor(rate, lead,
                        std::max<int64_t>(cost, 0) * rate.interval_ns());
}

int64_t SteadyNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <typename F>
void ForEachCheck(Engine::Evaluation& ip_part, Engine::Evaluation& user_part,
                  bool split, F&& f) {
  for (uint8_t i = 0; i < ip_part.count; ++i)
    f(ip_part.checks.items[i], false, i);
  if (!split) return;
  for (uint8_t i = 0; i < user_part.count; ++i)
    f(user_part.checks.items[i], true, i);
}

}  // namespace

SharedCore::SharedCore(ShardSet& shards, std::unique_ptr<Store> store,
                       const StoreOptions& options)
    : set_(shards),
      store_(std::move(store)),
      options_(options),
      keyer_(options.key_secret, IsClusterStoreUrl(options.url)) {
  store_->SetLateReplyHandler(this);
  generation_seen_.store(store_->generation(), std::memory_order_relaxed);
  // Room for a busy sync interval's charges, allocated once: 65,536 over
  // all shards (at least 256 a shard), whatever the shard count, so the
  // default 256 shards hold what 2 did.
  const size_t shard_count = set_.size();
  pending_capacity_ = std::max<size_t>(256, size_t{1 << 16} / shard_count);
  pending_ = std::make_unique<PendingShard[]>(shard_count);
  for (size_t i = 0; i < shard_count; ++i) {
    pending_[i].charges.reserve(pending_capacity_);
  }
  batch_.reserve(pending_capacity_ * (shard_count + 1));
  watch_.reserve(pending_capacity_);
  sync_ops_ = std::make_unique<StoreOp[]>(kSyncOpsPerBatch);
  sync_results_ = std::make_unique<StoreResult[]>(kSyncOpsPerBatch);
  if (options_.clock == StoreOptions::Clock::kStore) {
    sync_thread_ = std::thread([this] { SyncLoop(); });
  }
}

SharedCore::~SharedCore() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  store_->SetLateReplyHandler(nullptr);
}

int64_t SharedCore::SteadyNow() const { return SteadyNanoseconds(); }

StoreKey SharedCore::KeyOf(const Engine& engine, const BucketCheck& c,
                           const Request& request) const {
  const RouteId route =
      c.scope == Scope::kIp ? c.key.ip.route : c.key.user.route();
  const std::string_view route_text = route == kSharedBucketRoute
                                          ? std::string_view("*")
                                          : engine.normalizer().key(route);
  // The policy as the file defines it, not a tier's copy (which differs in
  // its rate only): a bucket keeps its key whatever tier charges it.
  const Policy& spec = engine.policies().policy(c.policy);
  if (c.scope == Scope::kIp) {
    IpAddress masked;
    masked.bytes = c.key.ip.address;
    return keyer_.IpKey(spec, route_text, masked);
  }
  const bool overflow = c.key.user.kind() == UserBucketKey::Kind::kOverflow;
  switch (c.scope) {
    case Scope::kOrigin: {
      if (request.origin_verified || overflow) {
        return keyer_.SubjectKey('o', spec, route_text, request.origin,
                                 overflow);
      }
      // The name bound to the sender's network, as the tables key it.
      const ClientPrefix prefix =
          spec.client_prefix.value_or(kOriginNetworkPrefix);
      const IpAddress network =
          MaskAddress(request.client, prefix.ipv4, prefix.ipv6);
      std::array<char, 16 + kMaxServerNameBytes> buf;
      std::memcpy(buf.data(), network.bytes.data(), 16);
      std::memcpy(buf.data() + 16, request.origin.data(),
                  request.origin.size());
      return keyer_.SubjectKey(
          'o', spec, route_text,
          std::string_view(buf.data(), 16 + request.origin.size()), false);
    }
    case Scope::kRoom: {
      std::array<char, kMaxRoomBytes> buf;
      const RoomValue room = engine.FindRoom(request, buf);
      return keyer_.SubjectKey('r', spec, route_text, room.value, overflow);
    }
    case Scope::kTarget:
      return keyer_.SubjectKey('t', spec, route_text, request.target_user,
                               overflow);
    case Scope::kIp:
    case Scope::kUser:
      break;
  }
  return keyer_.UserKey(spec, route_text, request.user_id, overflow);
}

void SharedCore::ApplyDebt(const Shard& a, const Shard& b, Pass& pass,
                           MonotonicTime now, int64_t cost) const {
  // Read here, under the locks; a lambda is analysed on its own.
  const Engine* ip_engine = a.engine.get();
  const Engine* user_engine = b.engine.get();
  ForEachCheck(pass.ip_part, pass.user_part, pass.split,
               [&](BucketCheck& c, bool user_part, uint8_t) {
                 if (!Approximate(c)) return;
                 const Engine& engine = user_part ? *user_engine : *ip_engine;
                 c.verdict = DebtVerdict(c.spec->rate,
                                         engine.UnclampedLead(c, now), cost);
               });
}

void SharedCore::QueueCharges(const Shard& a, const Shard& b, const Owners& o,
                              const Pass& pass, const Decision& d,
                              const Request& request, MonotonicTime now,
                              int64_t cost) {
  if (cost == 0) return;
  bool queued = false;
  auto queue = [&](const BucketCheck& c, size_t shard, const Engine& engine) {
    if (!Approximate(c) || !Engine::Charges(c, d)) return;
    std::vector<PendingCharge>& charges = pending_[shard].charges;
    if (charges.size() == pending_capacity_) {
      // Full until the next sync: this charge stays local (under-counted).
      sync_dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    PendingCharge& p = charges.emplace_back();
    p.key = KeyOf(engine, c, request);
    p.delta_ns = cost * c.spec->rate.interval_ns();
    p.interval_ns = c.spec->rate.interval_ns();
    p.burst = c.spec->rate.burst();
    p.shard = static_cast<uint32_t>(shard);
    p.scope = c.scope;
    p.engine_key = c.key;
    any_pending_.store(true, std::memory_order_relaxed);
    queued = true;
  };
  const Engine& ip_engine = *a.engine;
  const Engine& user_engine = *b.engine;
  for (const BucketCheck& c : pass.ip_part.all()) {
    if (pass.split || c.scope == Scope::kIp) {
      queue(c, o.ip, ip_engine);
    } else {
      queue(c, o.user, user_engine);  // One shard: user == ip.
    }
  }
  if (pass.split) {
    for (const BucketCheck& c : pass.user_part.all()) {
      queue(c, o.user, user_engine);
    }
  }
  if (queued && options_.clock == StoreOptions::Clock::kStore) {
    // The sync thread maps its own clock onto the caller's with these.
    last_now_ns_.store(now.nanoseconds(), std::memory_order_relaxed);
    last_now_steady_ns_.store(SteadyNow(), std::memory_order_relaxed);
  }
}

void SharedCore::Evaluate(Shard& a, Shard& b, const Request& request,
                          PreparedRequest& prepared, MonotonicTime now,
                          bool inspect, Pass& pass) const {
  // Resolved afresh by each engine in each pass: a reload may come between
  // passes.
  prepared.resolved_on = nullptr;
  pass.split = &a != &b;
  const Engine::ScopeMask first =
      pass.split ? Engine::kIpScope : Engine::kBothScopes;
  if (inspect) {
    a.engine->Inspect(request, now, first, pass.ip_part, &prepared);
    if (pass.ip_part.exempt) return;
    if (pass.split) {
      pass.user_part.request_lock = &pass.ip_part.scope_lock;
      b.engine->Inspect(request, now, Engine::kUserScope, pass.user_part,
                        &prepared);
    }
  } else if (!pass.split) {
    a.engine->Evaluate(request, now, first, pass.ip_part, &prepared);
    if (pass.ip_part.exempt) return;
  } else if (!Engine::EvaluateSplit(*a.engine, *b.engine, request, now,
                                    pass.ip_part, pass.user_part, prepared)) {
    return;
  }
  ApplyDebt(a, b, pass, now, std::max<int64_t>(request.cost, 0));
}

void SharedCore::PlanOp(const Shard& a, const Shard& b, const Request& request,
                        const Pass& pass, StoreOpKind kind, MonotonicTime now,
                        Plan& plan) const {
  StoreOp& op = plan.op;
  op.kind = kind;
  op.cost = kind == StoreOpKind::kCharge ? request.cost
                                         : std::max<int64_t>(request.cost, 0);
  op.caller_clock = options_.clock == StoreOptions::Clock::kCaller;
  op.now_ns = now.nanoseconds();
  op.count = 0;
  // A shadow check decided here that denies already keeps every shadow
  // bucket of the request from being charged (Engine::Charges): the store
  // must not charge its shadow buckets either.
  const BucketMode shadow_mode =
      kind == StoreOpKind::kCheck && ShadowDeniedLocally(pass)
          ? BucketMode::kObserved
          : BucketMode::kShadow;
  plan.ip_policies = &a.engine->policies();
  plan.user_policies = &b.engine->policies();
  const Engine* ip_engine = a.engine.get();
  const Engine* user_engine = b.engine.get();
  auto add = [&](const BucketCheck& c, bool user_part, uint8_t index) {
    if (kind == StoreOpKind::kCharge
            ? !(c.has_bucket && c.spec->sharing == Sharing::kExact &&
                StoreCanHold(*c.spec))
            : !DecidedByStore(c)) {
      return;
    }
    const Engine& engine = user_part ? *user_engine : *ip_engine;
    StoreBucket& out = op.buckets[op.count];
    out.key = KeyOf(engine, c, request);
    out.interval_ns = c.spec->rate.interval_ns();
    out.burst = c.spec->rate.burst();
    out.mode = c.shadow ? shadow_mode : BucketMode::kEnforcing;
    out.queue_ns = DelayQueueNs(*c.spec);
    plan.from[op.count] = OpSource{user_part, index};
    ++op.count;
  };
  for (uint8_t i = 0; i < pass.ip_part.count; ++i) {
    const BucketCheck& c = pass.ip_part.checks.items[i];
    if (pass.split && c.scope != Scope::kIp) continue;
    add(c, false, i);
  }
  if (pass.split) {
    for (uint8_t i = 0; i < pass.user_part.count; ++i) {
      const BucketCheck& c = pass.user_part.checks.items[i];
      if (c.scope != Scope::kIp) add(c, true, i);
    }
  }
}

bool SharedCore::DeniedLocally(const Pass& pass) {
  auto final_denial = [](const BucketCheck& c) {
    return !c.shadow && !c.verdict.allowed && !DecidedByStore(c);
  };
  for (const BucketCheck& c : pass.ip_part.all()) {
    if (final_denial(c)) return true;
  }
  if (pass.split) {
    for (const BucketCheck& c : pass.user_part.all()) {
      if (final_denial(c)) return true;
    }
  }
  return false;
}

bool SharedCore::ShadowDeniedLocally(const Pass& pass) {
  auto local_shadow_denial = [](const BucketCheck& c) {
    return c.shadow && !c.verdict.allowed && !DecidedByStore(c);
  };
  for (const BucketCheck& c : pass.ip_part.all()) {
    if ((!pass.split || c.scope == Scope::kIp) && local_shadow_denial(c)) {
      return true;
    }
  }
  if (pass.split) {
    for (const BucketCheck& c : pass.user_part.all()) {
      if (c.scope != Scope::kIp && local_shadow_denial(c)) return true;
    }
  }
  return false;
}

void SharedCore::Finish(Shard& a, Shard& b, const Owners& o, Pass& pass,
                        Decision& d, const Request& request, MonotonicTime now,
                        MonotonicTime at, int64_t cost, bool from_store) {
  a.engine->Settle(pass.ip_part, d, at, cost, from_store);
  if (pass.split) b.engine->Settle(pass.user_part, d, at, cost, from_store);
  if (d.allowed && (pass.ip_part.in_flight ||
                    (pass.split && pass.user_part.in_flight))) [[unlikely]] {
    // In-flight limits are kept in process: their leases are this
    // process's (docs/shared-state.md).
    a.engine->TakeLeases(pass.ip_part, request, now, at, d);
    if (pass.split) {
      b.engine->TakeLeases(pass.user_part, request, now, at, d);
    }
  }
  a.engine->CountDecision(d);
  if (d.allowed) QueueCharges(a, b, o, pass, d, request, now, cost);
  ShardSet::PinNames(a, b, d);
}

MonotonicTime SharedCore::DelayOnMirror(const Shard& a, const Shard& b,
                                        const Request& request,
                                        MonotonicTime now, Pass& pass,
                                        Decision& d) {
  if (d.allowed || d.never || !request.may_delay) return now;
  bool approximate = false;
  ForEachCheck(pass.ip_part, pass.user_part, pass.split,
               [&](const BucketCheck& c, bool, uint8_t) {
                 approximate = approximate || Approximate(c);
               });
  if (approximate) return now;
  return Engine::TryDelay(*a.engine, *b.engine, request, now, pass.ip_part,
                          pass.split ? pass.user_part : pass.ip_part, d);
}

void SharedCore::PlanLate(const Decision& d, MonotonicTime now,
                          MonotonicTime at, Plan& plan) {
  plan.op.at_ns = at.nanoseconds() - now.nanoseconds();
  plan.late = Late{d.limited_by, d.policy, d.layer, d.denied_policy};
}

void SharedCore::TellFromNow(const Plan& plan, Decision& d) {
  const std::chrono::nanoseconds wait(plan.op.at_ns);
  if (wait.count() == 0) return;
  if (d.allowed) {
    d.delay = wait;
    d.limited_by = plan.late.limited_by;
    d.policy = plan.late.policy;
    d.layer = plan.late.layer;
    d.denied_policy = plan.late.denied_policy;
  } else if (!d.never) {
    d.retry_after += wait;
  }
}

Decision SharedCore::Check(const Request& request, MonotonicTime now) {
  SyncGeneration();
  if (options_.clock == StoreOptions::Clock::kCaller) {
    // Syncs run at the caller's time: one checking thread does it when due.
    int64_t due = next_sync_ns_.load(std::memory_order_relaxed);
    if (due == kNoSyncYet) {
      // The first sync window starts with the first check.
      next_sync_ns_.compare_exchange_strong(
          due,
          now.nanoseconds() +
              std::chrono::nanoseconds(options_.sync_interval).count(),
          std::memory_order_relaxed);
    } else if (now.nanoseconds() >= due &&
               any_pending_.load(std::memory_order_relaxed) &&
               next_sync_ns_.compare_exchange_strong(
                   due,
                   now.nanoseconds() +
                       std::chrono::nanoseconds(options_.sync_interval).count(),
                   std::memory_order_relaxed)) {
      Sync(now);
    }
  }
  PreparedRequest p;
  const Owners o = set_.Prepare(request, p);
  Shard& a = set_.shard(o.ip);
  Shard& b = set_.shard(o.user);
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  Plan plan;
  {
    LockedPair lock(a, b, o.ip_first());
    Pass pass;
    Evaluate(a, b, request, p, now, /*inspect=*/false, pass);
    if (pass.ip_part.exempt)
      return Engine::ExemptDecision(pass.ip_part.route, pass.ip_part.tier_name);
    Decision d = a.engine->Combine(pass.ip_part, pass.user());
    // Admitted late if the mirror can wait for every denying bucket; the
    // store then decides its buckets as of that time.
    const MonotonicTime at = DelayOnMirror(a, b, request, now, pass, d);
    bool shared = false;
    ForEachCheck(pass.ip_part, pass.user_part, pass.split,
                 [&](const BucketCheck& c, bool, uint8_t) {
                   shared = shared || DecidedByStore(c);
                 });
    const bool local_denial =
        !d.allowed && (options_.local_denial || DeniedLocally(pass));
    if (!shared || local_denial) {
      Finish(a, b, o, pass, d, request, now, at, cost, /*from_store=*/false);
      if (shared) local_denials_.fetch_add(1, std::memory_order_relaxed);
      return d;
    }
    if (!breaker_.Allow(SteadyNow())) {
      // Decided right here, under the locks already held.
      fallbacks_[static_cast<int>(Fallback::kBreaker)].fetch_add(
          1, std::memory_order_relaxed);
    } else {
      PlanOp(a, b, request, pass, StoreOpKind::kCheck, now, plan);
      PlanLate(d, now, at, plan);
    }
    if (plan.op.count == 0) {
      // Breaker open: the fallback decision.
      if (options_.fallback_share < 1.0) {
        // Re-decided below with scaled rates, outside this scope.
      } else {
        Finish(a, b, o, pass, d, request, now, at, cost, /*from_store=*/false);
        return d;
      }
    }
  }
  if (plan.op.count == 0) {
    return DecideLocally(o, request, p, now, Fallback::kBreaker);
  }
  const auto start = std::chrono::steady_clock::now();
  const StoreResult result = store_->Execute(
      plan.op,
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  options_.timeout));
  breaker_.Record(result.status == StoreStatus::kOk, SteadyNow());
  switch (result.status) {
    case StoreStatus::kOk:
      break;
    case StoreStatus::kTimeout:
      return DecideLocally(o, request, p, now, Fallback::kTimeout);
    case StoreStatus::kError:
      return DecideLocally(o, request, p, now, Fallback::kError);
    case StoreStatus::kUnavailable:
      return DecideLocally(o, request, p, now, Fallback::kUnavailable);
  }
  SyncGeneration();
  return Install(o, request, p, now, plan, result);
}

Decision SharedCore::Install(const Owners& o, const Request& request,
                             PreparedRequest& p, MonotonicTime now,
                             const Plan& plan, const StoreResult& result) {
  Shard& a = set_.shard(o.ip);
  Shard& b = set_.shard(o.user);
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  LockedPair lock(a, b, o.ip_first());
  if (&a.engine->policies() != plan.ip_policies ||
      &b.engine->policies() != plan.user_policies) {
    // A reload came in between: the buckets the store charged may belong
    // to policies that are gone. Give the charge back; this one request is
    // decided by the new policies locally.
    Refund(plan.op, result);
    return DecideHeld(a, b, o, request, p, now, /*share=*/1.0);
  }
  // A late admission is evaluated at its later time, as the store did.
  const MonotonicTime at =
      MonotonicTime::FromNanoseconds(now.nanoseconds() + plan.op.at_ns);
  Pass pass;
  Evaluate(a, b, request, p, at, /*inspect=*/false, pass);
  ApplyStoreLeads(plan, result, pass, at, cost);
  Decision d = a.engine->Combine(pass.ip_part, pass.user());
  // A local bucket of the same request may have run out meanwhile (another
  // thread, same shard): the store charged a request that is denied, or
  // shadow buckets of a request that a local shadow bucket now
  // shadow-denies.
  if (result.allowed && !d.allowed) {
    Refund(plan.op, result);
  } else if (result.allowed && d.shadow_denied) {
    Refund(plan.op, result, /*shadow_only=*/true);
  }
  TellFromNow(plan, d);
  Finish(a, b, o, pass, d, request, now, at, cost, /*from_store=*/true);
  store_decisions_.fetch_add(1, std::memory_order_relaxed);
  return d;
}

Decision SharedCore::DecideLocally(const Owners& o, const Request& request,
                                   PreparedRequest& p, MonotonicTime now,
                                   Fallback why) {
  if (why != Fallback::kBreaker) {
    fallbacks_[static_cast<int>(why)].fetch_add(1, std::memory_order_relaxed);
  }
  Shard& a = set_.shard(o.ip);
  Shard& b = set_.shard(o.user);
  LockedPair lock(a, b, o.ip_first());
  return DecideHeld(a, b, o, request, p, now, options_.fallback_share);
}

void SharedCore::ApplyStoreLeads(const Plan& plan, const StoreResult& result,
                                 Pass& pass, MonotonicTime now, int64_t cost) {
  for (uint8_t i = 0; i < plan.op.count; ++i) {
    const OpSource& from = plan.from[i];
    BucketCheck& c = (from.user_part ? pass.user_part : pass.ip_part)
                         .checks.items[from.index];
    c.verdict = VerdictFromLead(c, result.lead[i], now, cost);
  }
}

Decision SharedCore::DecideHeld(Shard& a, Shard& b, const Owners& o,
                                const Request& request, PreparedRequest& p,
                                MonotonicTime now, double share) {
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  Pass pass;
  Evaluate(a, b, request, p, now, /*inspect=*/false, pass);
  if (pass.ip_part.exempt)
    return Engine::ExemptDecision(pass.ip_part.route, pass.ip_part.tier_name);
  // Charges beyond cost * T that the scaled rates ask for, per check.
  std::array<int64_t, kMaxResolved> extra_ip{}, extra_user{};
  if (share < 1.0) {
    ForEachCheck(pass.ip_part, pass.user_part, pass.split,
                 [&](BucketCheck& c, bool user_part, uint8_t i) {
                   if (!DecidedByStore(c)) return;
                   int64_t charge_ns = 0;
                   c.verdict = ScaledVerdict(c.spec->rate, c.verdict, cost,
                                             share, charge_ns);
                   (user_part ? extra_user : extra_ip)[i] =
                       charge_ns - cost * c.spec->rate.interval_ns();
                 });
  }
  Decision d = a.engine->Combine(pass.ip_part, pass.user());
  // Scaled verdicts are of now only: no delay then.
  const MonotonicTime at =
      share < 1.0 ? now : DelayOnMirror(a, b, request, now, pass, d);
  Finish(a, b, o, pass, d, request, now, at, cost, /*from_store=*/false);
  if (share < 1.0 && d.allowed) {
    // Read under the locks; a lambda is analysed on its own.
    Engine& ip_engine = *a.engine;
    Engine& user_engine = *b.engine;
    ForEachCheck(pass.ip_part, pass.user_part, pass.split,
                 [&](BucketCheck& c, bool user_part, uint8_t i) {
                   const int64_t extra = (user_part ? extra_user : extra_ip)[i];
                   if (extra <= 0 || !Engine::Charges(c, d)) return;
                   (user_part ? user_engine : ip_engine).AddLead(c, extra, now);
                 });
  }
  return d;
}

Decision SharedCore::Peek(const Request& request, MonotonicTime now) const {
  PreparedRequest p;
  const Owners o = set_.Prepare(request, p);
  Shard& a = set_.shard(o.ip);
  Shard& b = set_.shard(o.user);
  const int64_t cost = std::max<int64_t>(request.cost, 0);
  Plan plan;
  {
    LockedPair lock(a, b, o.ip_first());
    Pass pass;
    Evaluate(a, b, request, p, now, /*inspect=*/true, pass);
    if (pass.ip_part.exempt)
      return Engine::ExemptDecision(pass.ip_part.route, pass.ip_part.tier_name);
    Decision d = a.engine->Combine(pass.ip_part, pass.user());
    const MonotonicTime at = DelayOnMirror(a, b, request, now, pass, d);
    if (!d.allowed && DeniedLocally(pass)) {
      ShardSet::PinNames(a, b, d);
      return d;
    }
    PlanOp(a, b, request, pass, StoreOpKind::kPeek, now, plan);
    PlanLate(d, now, at, plan);
    if (plan.op.count == 0 || breaker_.open()) {
      ShardSet::PinNames(a, b, d);
      return d;
    }
  }
  const StoreResult result = store_->Execute(
      plan.op,
      std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              options_.timeout));
  LockedPair lock(a, b, o.ip_first());
  // A reload in between: the new policies answer, as of now.
  const bool same = &a.engine->policies() == plan.ip_policies &&
                    &b.engine->policies() == plan.user_policies;
  const MonotonicTime at =
      same ? MonotonicTime::FromNanoseconds(now.nanoseconds() + plan.op.at_ns)
           : now;
  Pass pass;
  Evaluate(a, b, request, p, at, /*inspect=*/true, pass);
  if (pass.ip_part.exempt)
    return Engine::ExemptDecision(pass.ip_part.route, pass.ip_part.tier_name);
  if (result.status == StoreStatus::kOk && same) {
    ApplyStoreLeads(plan, result, pass, at, cost);
  }
  Decision d = a.engine->Combine(pass.ip_part, pass.user());
  if (same) {
    TellFromNow(plan, d);
  } else {
    DelayOnMirror(a, b, request, now, pass, d);
  }
  ShardSet::PinNames(a, b, d);
  return d;
}

SharedStoreStats SharedCore::Stats() const {
  const StoreCounters c = store_->counters();
  SharedStoreStats s;
  s.store_decisions = store_decisions_.load(std::memory_order_relaxed);
  s.local_denials = local_denials_.load(std::memory_order_relaxed);
  s.fallback_timeout = fallbacks_[0].load(std::memory_order_relaxed);
  s.fallback_error = fallbacks_[1].load(std::memory_order_relaxed);
  s.fallback_unavailable = fallbacks_[2].load(std::memory_order_relaxed);
  s.fallback_breaker_open = fallbacks_[3].load(std::memory_order_relaxed);
  s.late_replies = c.late_replies;
  s.refunds = refunds_.load(std::memory_order_relaxed);
  s.mirror_resets = mirror_resets_.load(std::memory_order_relaxed);
  s.sync_batches = sync_batches_.load(std::memory_order_relaxed);
  s.sync_dropped = sync_dropped_.load(std::memory_order_relaxed);
  s.script_reloads = c.script_reloads;
  s.reconnects = c.reconnects;
  s.connected = c.connected;
  s.breaker_open = breaker_.open();
  s.in_flight = c.in_flight;
  return s;
}

std::vector<std::string> SharedCore::DescribeStoreKeys(
    const Request& request) const {
  std::vector<std::string> out;
  PreparedRequest p;
  const Owners o = set_.Prepare(request, p);
  Shard& a = set_.shard(o.ip);
  Shard& b = set_.shard(o.user);
  LockedPair lock(a, b, o.ip_first());
  Pass pass;
  Evaluate(a, b, request, p, MonotonicTime(), /*inspect=*/true, pass);
  if (pass.ip_part.exempt) return out;
  // Read under the locks; a lambda is analysed on its own.
  const Engine& ip_engine = *a.engine;
  const Engine& user_engine = *b.engine;
  ForEachCheck(
      pass.ip_part, pass.user_part, pass.split,
      [&](const BucketCheck& c, bool user_part, uint8_t) {
        if (!c.has_bucket) return;
        if (c.spec->sharing == Sharing::kLocal || !StoreCanHold(*c.spec)) {
          out.push_back(absl::StrCat(c.spec->name, " local"));
          return;
        }
        const Engine& engine = user_part ? user_engine : ip_engine;
        out.push_back(absl::StrCat(c.spec->name, " ",
                                   ToAbsl(SharingName(c.spec->sharing)), " ",
                                   ToAbsl(KeyOf(engine, c, request).view())));
      });
  return out;
}

}  // namespace mxlimit::internal
