// `RedisStore`: the `Store` that keeps shared buckets in Redis, one
// EVALSHA of the mxl:1 script (mxl1.lua, embedded at build time) per op.
//
// Callers' ops go into a bounded queue of `store.max_in_flight` slots
// allocated up front; one I/O thread per store sends them over
// `store.connections` non-blocking connections and completes them with the
// replies (redis_io_thread.h). `Execute` waits on its slot until the reply
// or its deadline, whichever is first, and never longer; a reply that comes
// after its caller gave up goes to the LateReplyHandler. Nothing allocates
// per op, on either side, once the store is warm.
//
// A `rediss://` URL runs every connection over TLS (tls_client.h), with the
// CA and client certificate of `store.tls` loaded once at Create.
//
// Redis may be down when the store is created, and may go away and come
// back at any time: the store keeps reconnecting, and meanwhile every op
// returns kUnavailable at once so that the caller falls back.
//
// Example:
//   absl::StatusOr<std::unique_ptr<RedisStore>> store =
//       RedisStore::Create(config.store);
//   if (!store.ok()) return store.status();  // A bad store.url or TLS file.
//   StoreResult r = (*store)->Execute(op, steady_clock::now() + 5ms);
//
// Thread safety: Execute, Post, generation and counters from any number of
// threads.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_REDIS_STORE_H_
#define MXLIMIT_SHARED_REDIS_REDIS_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mxlimit/options.h"
#include "src/shared/redis/redis_io_thread.h"
#include "src/shared/redis/slot_queue.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

class RedisStore final : public Store {
 public:
  // Parses `options.url` and starts connecting; reads `connections` and
  // `max_in_flight` too. InvalidArgument naming the field for a bad value;
  // Redis being unreachable is not an error.
  static absl::StatusOr<std::unique_ptr<RedisStore>> Create(
      const StoreOptions& options);

  // A store for one given node (a Redis Cluster primary, cluster_store.h):
  // `endpoint` is used as it is; `options` gives connections and
  // max_in_flight, which CheckLimits has accepted.
  static absl::StatusOr<std::unique_ptr<RedisStore>> CreateAt(
      StoreEndpoint endpoint, const StoreOptions& options,
      std::shared_ptr<const TlsContext> tls);
  // InvalidArgument naming `store.connections` or `store.max_in_flight`
  // when out of range.
  static absl::Status CheckLimits(const StoreOptions& options);

  // Stops the I/O thread. REQUIRES: no Execute or Post running.
  ~RedisStore() override = default;
  RedisStore(const RedisStore&) = delete;
  RedisStore& operator=(const RedisStore&) = delete;

  StoreResult Execute(const StoreOp& op,
                      std::chrono::steady_clock::time_point deadline) override;
  void ExecuteBatch(std::span<const StoreOp> ops,
                    std::chrono::steady_clock::time_point deadline,
                    std::span<StoreResult> results) override;
  bool Post(const StoreOp& op) override { return Post(op, false); }
  // Post behind ASKING when `asking` (a refund to the node an ASK named).
  bool Post(const StoreOp& op, bool asking);
  uint64_t generation() const override {
    return shared_.generation.load(std::memory_order_acquire);
  }
  StoreCounters counters() const override;
  void SetLateReplyHandler(LateReplyHandler* handler) override {
    shared_.late_handler.store(handler, std::memory_order_release);
  }

  // An op in two steps, for a store over several of these (Redis Cluster,
  // cluster_store.h): Start queues `op` (after ASKING when `asking`) and
  // returns its ticket, or kNoTicket when not connected or the queue is
  // full; Await waits for it until `deadline` and must be called once per
  // ticket. Await copies the text of a MOVED or ASK reply (the result is
  // then kError) into `redirect`, which has room for 128 bytes, and sets
  // `*redirect_size` (0 for any other reply). Neither counts the op in
  // counters(): the caller counts what it returns.
  static constexpr uint32_t kNoTicket = SlotQueue::kNone;
  uint32_t Start(const StoreOp& op, bool asking);
  StoreResult Await(uint32_t ticket,
                    std::chrono::steady_clock::time_point deadline,
                    char* redirect, size_t* redirect_size);

  // Why the last connection attempt or connection failed ("" if none did).
  std::string last_error() const { return shared_.last_error(); }

  // The mxl:1 script and its SHA-1, as EVALSHA names it.
  static std::string_view Script();
  static std::string_view ScriptSha1();

  // Ops queued or in flight at most (store.max_in_flight) are bounded by
  // this, each slot costing about 6 KiB once used.
  static constexpr size_t kMaxInFlightLimit = size_t{1} << 20;

 private:
  RedisStore(StoreEndpoint endpoint, const StoreOptions& options,
             std::shared_ptr<const TlsContext> tls);

  // Fills a slot and hands it to the I/O thread; kNone when not connected
  // or the queue is full (counted as unavailable).
  uint32_t Submit(const StoreOp& op, bool posted, bool asking = false);

  RedisStoreShared shared_;
  SlotQueue slots_;
  // Last: stopped and joined before the slots it uses go away.
  RedisIoThread io_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_REDIS_STORE_H_
