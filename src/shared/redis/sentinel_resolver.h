// Which Redis is the primary, as Redis Sentinel says (`redis-sentinel://`):
// a thread of its own asks the Sentinels `SENTINEL get-master-addr-by-name`
// every `poll` (and at once when the store asks), trying each Sentinel in
// turn until one answers, and tells the store's I/O thread when the answer
// changes (a failover). Blocking connections with short deadlines, never on
// the request path; the I/O thread only reads the answer when it connects.
//
//   SentinelResolver resolver(endpoint, [&] { io.Wake(); });
//   resolver.Start();
//   if (auto primary = resolver.Primary()) Connect(primary->host, ...);
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_SENTINEL_RESOLVER_H_
#define MXLIMIT_SHARED_REDIS_SENTINEL_RESOLVER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "src/options/store_url.h"
#include "src/shared/redis/redis_connection.h"

namespace mxlimit::internal {

class SentinelResolver {
 public:
  // `on_change` runs on the resolver's thread whenever the primary changes
  // (the first answer included). REQUIRES: endpoint.sentinels non-empty.
  SentinelResolver(
      StoreEndpoint endpoint, std::function<void()> on_change,
      std::chrono::milliseconds poll = std::chrono::milliseconds(200));
  // Stops and joins the thread.
  ~SentinelResolver();
  SentinelResolver(const SentinelResolver&) = delete;
  SentinelResolver& operator=(const SentinelResolver&) = delete;

  void Start();

  // One question to each Sentinel in turn until one names the primary, all
  // by `deadline`: for a caller that connects rarely (mxlimitd's runtime
  // tiers).
  static absl::StatusOr<StoreEndpoint::HostPort> AskOnce(
      const StoreEndpoint& endpoint,
      std::chrono::steady_clock::time_point deadline);

  // The primary the Sentinels named last; nullopt before any answered.
  std::optional<StoreEndpoint::HostPort> Primary() const;
  // Counts changes of Primary(): cheap to compare every loop turn.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Ask again now: a connection to the primary failed, or it said it is a
  // replica. Any thread.
  void RefreshSoon();
  // Why the last round found no primary, for the store's last_error.
  std::string last_error() const;

 private:
  static absl::StatusOr<StoreEndpoint::HostPort> QueryPrimary(
      RedisConnection& sentinel, const std::string& name,
      std::chrono::steady_clock::time_point deadline);
  bool stopping() const;
  void Run();
  // One round: the first Sentinel that answers; false when none did.
  bool Ask();

  const StoreEndpoint endpoint_;
  const std::function<void()> on_change_;
  const std::chrono::milliseconds poll_;
  // The Sentinel that answered last is asked first.
  size_t next_ = 0;
  std::unique_ptr<RedisConnection> connection_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool refresh_ = false;
  bool stop_ = false;
  std::optional<StoreEndpoint::HostPort> primary_;
  std::string last_error_;
  std::atomic<uint64_t> version_{0};
  std::thread thread_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_SENTINEL_RESOLVER_H_
