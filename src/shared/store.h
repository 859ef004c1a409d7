// The seam between `SharedLimiter` and the place shared buckets live: one
// `StoreOp` carries every shared bucket of one request (all layers, both
// scopes) and the store decides them atomically, all or nothing, with the
// GCRA of rate.h. The protocol, its key and value formats and the script
// that implements it on Redis are docs/shared-state.md's "Protocol mxl:1";
// store_ops.h is its reference implementation in C++.
//
// Internal: not installed. Two implementations: `RedisStore`
// (src/shared/redis/) and `FakeStore` (fake_store.h), which tests and the
// accuracy harness use.

#ifndef MXLIMIT_SHARED_STORE_H_
#define MXLIMIT_SHARED_STORE_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>

#include "mxlimit/policy_set.h"

namespace mxlimit::internal {

// A request never has more buckets than it resolves policies.
inline constexpr size_t kMaxStoreBuckets = kMaxResolved;

// The latest StoreOp::at_ns: a delay never exceeds a policy's max_delay
// (at most 60 s, config.md); leads plus this stay below 2^53 ns.
inline constexpr int64_t kMaxStoreAtNs = (int64_t{1} << 40) - 1;

// Approximate sharing keeps debt: a synced bucket may lead by up to
// (1 + kDebtTaus) * tau. Enough to repay what N processes can over-admit in
// a sync window, (N-1) * (burst + S/T + 1) intervals, for the fleets this is
// meant for (a burst-1 policy at N = 8 needs 14 tau); part of protocol mxl:1.
inline constexpr int64_t kDebtTaus = 16;

// `mxl:1:<scope>:<22 characters of base64url>`: 30 bytes, and 36 with the
// hash tag a Redis Cluster store adds (store_keys.h).
struct StoreKey {
  static constexpr size_t kCapacity = 40;
  std::array<char, kCapacity> bytes{};
  uint8_t size = 0;
  std::string_view view() const { return {bytes.data(), size}; }
  friend bool operator==(const StoreKey& a, const StoreKey& b) {
    return a.view() == b.view();
  }
  template <typename H>
  friend H AbslHashValue(H h, const StoreKey& k) {
    return H::combine_contiguous(std::move(h), k.bytes.data(), k.size);
  }
};

enum class StoreOpKind : uint8_t {
  // Decide and charge every bucket, all or nothing.
  kCheck,
  // What kCheck would answer; writes nothing.
  kPeek,
  // GcraCharge on every bucket: drain by cost (refund when negative), no
  // decision.
  kCharge,
  // Approximate sharing: adds each bucket's `delta_ns` (the charges one
  // process allowed since its last sync) to its TAT, keeping debt: the lead
  // may grow past tau, up to (1 + kDebtTaus) * tau, and is not pulled back.
  // Answers each bucket's lead after the op.
  kSync,
};

// What a bucket of a kCheck or kPeek does to the decision and when a kCheck
// charges it (docs/shared-state.md, `mode_i`; the values are the wire's).
enum class BucketMode : uint8_t {
  // A shadow policy's bucket: never denies; charged only when the request
  // is allowed and every kShadow bucket of the op has room, so that shadow
  // buckets fill exactly as they would if their policies enforced.
  kShadow = 0,
  // Denies the op when it has no room; charged when the op is allowed.
  kEnforcing = 1,
  // A shadow policy's bucket of a request that a shadow bucket outside the
  // op (one this process decides) already shadow-denies: its lead is
  // answered, it is never charged.
  kObserved = 2,
};

// One bucket of an op: its key and its policy's rate. The store needs the
// rate because it keeps only TATs, never policies.
struct StoreBucket {
  StoreKey key;
  // T in nanoseconds (Rate::interval_ns) and the burst; tau = burst * T.
  int64_t interval_ns = 0;
  int64_t burst = 0;
  BucketMode mode = BucketMode::kEnforcing;
  // Not for kSync: how far past tau the lead is kept (an `on_limit: delay`
  // policy's max_delay; 0 otherwise), so that the queue of late admissions
  // survives every op, as GcraEvaluateQueued keeps it in a process.
  int64_t queue_ns = 0;
  // kSync only: the charge to add, in nanoseconds (cost * T summed).
  int64_t delta_ns = 0;
};

struct StoreOp {
  StoreOpKind kind = StoreOpKind::kCheck;
  // The request's cost; for kCharge, negative refunds.
  int64_t cost = 1;
  // When true the store uses `now_ns` (the caller's clock: deterministic
  // replays and tests); otherwise its own clock (Redis `TIME`).
  bool caller_clock = false;
  int64_t now_ns = 0;
  // kCheck, kPeek, kCharge: applied as of this many nanoseconds after now
  // (0 to kMaxStoreAtNs): a request admitted late (Decision::delay) is read
  // and charged as if it arrived then, as Engine::TryDelay does locally,
  // and refunded likewise.
  int64_t at_ns = 0;
  // Distinct keys: every key is read before any is written.
  uint8_t count = 0;
  std::array<StoreBucket, kMaxStoreBuckets> buckets;
};

enum class StoreStatus : uint8_t {
  kOk,
  // No answer by the deadline (the op may still be applied later).
  kTimeout,
  // The store answered with an error, or the connection failed.
  kError,
  // Not connected, or the queue was full: the op was not sent.
  kUnavailable,
};

struct StoreResult {
  StoreStatus status = StoreStatus::kUnavailable;
  // kCheck: every enforcing bucket had room (and the enforcing buckets were
  // charged; see BucketMode for the others). kPeek: what kCheck would have
  // answered. kCharge, kSync: true.
  bool allowed = false;
  // Each bucket's lead before the op, in nanoseconds of the store's clock,
  // clamped to [0, tau] (rate.h's lead). With the bucket's rate and the
  // op's cost the caller derives the same verdict the store reached. For
  // kSync: the lead after the op, in [0, (1 + kDebtTaus) * tau].
  std::array<int64_t, kMaxStoreBuckets> lead{};
};

// Told about ops that the store answered after their caller had given up
// (kTimeout): the store did apply them. Called on the store's own thread.
class LateReplyHandler {
 public:
  virtual ~LateReplyHandler() = default;
  virtual void OnLateReply(const StoreOp& op, const StoreResult& result) = 0;
};

// What a store has done, for metrics. Monotonic counters except the gauges.
struct StoreCounters {
  uint64_t ops_ok = 0;
  uint64_t ops_timeout = 0;
  uint64_t ops_error = 0;
  uint64_t ops_unavailable = 0;
  uint64_t late_replies = 0;
  // Scripts loaded again after the store forgot them (NOSCRIPT).
  uint64_t script_reloads = 0;
  uint64_t reconnects = 0;
  // Gauges: whether a connection is up, and ops sent but not answered.
  bool connected = false;
  uint64_t in_flight = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Runs `op` and waits for its answer until `deadline` (steady clock), and
  // never longer: kTimeout then. Never throws; safe from any thread. Must
  // not allocate in steady state.
  virtual StoreResult Execute(
      const StoreOp& op, std::chrono::steady_clock::time_point deadline) = 0;

  // `Execute` for each of `ops`, all sent before waiting for any (one
  // pipelined write on a network store), each answered by the deadline or
  // timed out. `results` has ops.size() elements.
  virtual void ExecuteBatch(std::span<const StoreOp> ops,
                            std::chrono::steady_clock::time_point deadline,
                            std::span<StoreResult> results) {
    for (size_t i = 0; i < ops.size(); ++i) {
      results[i] = Execute(ops[i], deadline);
    }
  }

  // Queues `op` without waiting (refunds, approximate-mode syncs). False
  // when it could not be queued (queue full, not connected): the op is
  // dropped.
  virtual bool Post(const StoreOp& op) = 0;

  // Goes up by one each time the store is found to have lost its state
  // (restart, failover, flush), so that callers drop what they mirrored.
  virtual uint64_t generation() const = 0;

  virtual StoreCounters counters() const = 0;

  // Set once, before the first op.
  virtual void SetLateReplyHandler(LateReplyHandler* handler) = 0;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_STORE_H_
