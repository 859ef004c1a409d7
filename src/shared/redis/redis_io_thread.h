// `RedisStore`'s I/O thread: one epoll loop that owns every connection to
// Redis, sends the ops callers queued in the `SlotQueue`, and completes them
// with their replies.
//
// Batching without a timer ("flush when drained"): each turn of the loop
// takes everything callers submitted, then writes each connection's pending
// commands in one writev; replies match requests FIFO per connection.
//
// A `rediss://` connection runs its TLS handshake first (tls_client.h), then
// reads and writes through the session, with the same batching.
//
// `redis-sentinel://`: connections go to the primary a SentinelResolver
// names, and are ready only once `INFO replication` says `role:master`. When
// the Sentinels name another primary (a failover) every connection is
// dropped and reconnects to it; a connection that fails, or a `READONLY`
// reply (the primary was demoted under us), makes the resolver ask again at
// once. A replica is never written to.
//
// Every connection, on connect: AUTH and SELECT when configured, SCRIPT LOAD
// of the mxl:1 script, INFO server for the run_id (a new run_id means Redis
// lost its state: the store's generation goes up). A NOSCRIPT reply loads
// the script again and resends that op once. A connection that fails, or
// has replies outstanding for more than a second, is dropped: its ops fail
// (kError if sent, kUnavailable if not) and it reconnects after a capped,
// jittered exponential backoff (10 ms doubling to 1 s).
//
// Deadlines are the callers' business (SlotQueue::Wait): this thread never
// blocks on a caller and never needs to wake one up for a timeout.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_REDIS_IO_THREAD_H_
#define MXLIMIT_SHARED_REDIS_REDIS_IO_THREAD_H_

#include <sys/epoll.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "mxlimit/internal/mutex.h"
#include "src/options/store_url.h"
#include "src/shared/redis/sentinel_resolver.h"
#include "src/shared/redis/slot_queue.h"
#include "src/shared/redis/tls_client.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

// What the I/O thread and the callers of a `RedisStore` share: counters,
// gauges, the generation and the late-reply handler.
struct RedisStoreShared {
  std::atomic<bool> connected{false};
  std::atomic<uint64_t> generation{0};
  std::atomic<uint64_t> ok{0}, timeout{0}, error{0}, unavailable{0};
  std::atomic<uint64_t> late_replies{0}, script_reloads{0}, reconnects{0};
  std::atomic<LateReplyHandler*> late_handler{nullptr};

  // Why the last connection attempt or connection failed, for diagnostics.
  std::string last_error() const;
  void set_last_error(std::string error);

 private:
  mutable Mutex mu_;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
};

class RedisIoThread {
 public:
  // REQUIRES: `slots` and `shared` outlive this object; 1 <= connections;
  // `tls` set exactly when `endpoint.tls`.
  RedisIoThread(StoreEndpoint endpoint, int connections, SlotQueue& slots,
                RedisStoreShared& shared,
                std::shared_ptr<const TlsContext> tls = nullptr);
  // Stops the thread and joins it; ops still queued or in flight fail.
  ~RedisIoThread();
  RedisIoThread(const RedisIoThread&) = delete;
  RedisIoThread& operator=(const RedisIoThread&) = delete;

  // Creates the epoll and wake-up descriptors and starts the thread, which
  // starts connecting. Redis being down is not an error.
  absl::Status Start();

  // Tells the thread that slots were submitted. Any thread.
  void Wake();

 private:
  struct Connection;

  void Run();
  void TakeSubmissions(std::chrono::steady_clock::time_point now);
  void RunTimers(std::chrono::steady_clock::time_point now);
  int NextTimeoutMs(std::chrono::steady_clock::time_point now) const;

  void Connect(Connection& c, std::chrono::steady_clock::time_point now);
  void StartHandshake(Connection& c, std::chrono::steady_clock::time_point now);
  // TLS: the session's handshake, one step per socket event.
  void StartTls(Connection& c, std::chrono::steady_clock::time_point now);
  void ContinueTls(Connection& c, std::chrono::steady_clock::time_point now);
  void ReadTls(Connection& c, std::chrono::steady_clock::time_point now);
  void FlushTls(Connection& c, std::chrono::steady_clock::time_point now);
  // Feeds received bytes to the reader and handles every whole reply; false
  // when the connection had to be dropped.
  bool Consume(Connection& c, const char* data, size_t size,
               std::chrono::steady_clock::time_point now);
  // Advances `c`'s send position over `n` bytes of the `count` gathered
  // requests in `iov`.
  static void Advance(Connection& c, const iovec* iov, size_t count, size_t n);
  void Drop(Connection& c, std::string_view why,
            std::chrono::steady_clock::time_point now);
  void OnReadable(Connection& c, std::chrono::steady_clock::time_point now);
  void Flush(Connection& c, std::chrono::steady_clock::time_point now);
  // The unsent requests of `c` as iovecs, at most `max`; returns how many.
  size_t GatherUnsent(const Connection& c, iovec* iov, size_t max) const;
  // One epoll event: the wake-up eventfd's, or a connection's.
  void HandleEvent(const epoll_event& event,
                   std::chrono::steady_clock::time_point now);
  // Whether any connection has requests sent and not yet answered.
  bool AwaitingReplies() const;
  void Push(Connection& c, uint32_t entry,
            std::chrono::steady_clock::time_point now);
  void WatchWritable(Connection& c, bool writable);
  // False when the connection had to be dropped.
  bool OnReply(Connection& c, std::chrono::steady_clock::time_point now);
  bool OnSetupReply(Connection& c, uint32_t control,
                    std::chrono::steady_clock::time_point now);
  void MakeReady(Connection& c);
  // False when the connection had to be dropped.
  bool OnOpReply(Connection& c, uint32_t slot,
                 std::chrono::steady_clock::time_point now);
  // Sentinel: reconnects every connection when the primary changed.
  void FollowPrimary(std::chrono::steady_clock::time_point now);
  // Hands a slot whose body().result is written back to its caller, or
  // reports it as a late reply, or releases a posted op.
  void Finish(uint32_t slot);
  void UpdateConnected();
  std::chrono::nanoseconds Jitter(std::chrono::nanoseconds backoff);

  const StoreEndpoint endpoint_;
  const std::shared_ptr<const TlsContext> tls_;
  SlotQueue& slots_;
  RedisStoreShared& shared_;
  std::vector<std::unique_ptr<Connection>> connections_;
  size_t next_connection_ = 0;
  // The setup commands, formatted once.
  std::string auth_command_, select_command_, script_load_command_,
      info_command_, role_command_;
  // redis-sentinel:// only; the version of its answer the connections use.
  std::unique_ptr<SentinelResolver> resolver_;
  uint64_t primary_version_ = 0;
  // The run_id of the Redis the last connection found.
  std::string run_id_;
  uint64_t random_state_;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_REDIS_IO_THREAD_H_
