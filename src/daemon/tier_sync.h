// -----------------------------------------------------------------------------
// File: daemon/tier_sync.h
// -----------------------------------------------------------------------------
//
// Runtime tier assignments shared by every mxlimitd on one store. The admin
// API publishes each change to the store; every process (the publisher
// too) reconciles its own assignments with the store's once a second, so
// a change made through any process's admin API holds on all of them
// within about a second. Key layout (protocol mxl:1, docs/shared-state.md):
//   mxl:1:tiers:<d>     a hash: field the subject as ListTiers writes it
//                       ("@bot:example.org", "2001:db8:bad::/48"), value
//                       "TIER EXPIRES_AT_MS" (wall clock, 0: never)
//   mxl:1:tiers:<d>:v   a counter, incremented with every change, so a
//                       process reads the hash only when it changed
// where <d> is 22 base64url digits of a digest of `store.key_secret`:
// deployments on one Redis with different secrets do not see each other's.
// The subjects are in clear: they are the operator's, not clients' traffic.
// Expired entries are skipped by readers and removed by the next change.
//
// Its own blocking connection (RedisConnection, over TLS for rediss://),
// never the request path's: a store that is down costs each call at most
// `timeout`, the admin API
// answers 503 and nothing changes, and reconciling waits for the store.
//
// Example:
//   absl::StatusOr<std::unique_ptr<TierSync>> sync =
//       TierSync::Create(config.store, std::chrono::milliseconds(1000));
//   (*sync)->Reconcile(limiter);  // once a second

#ifndef MXLIMIT_DAEMON_TIER_SYNC_H_
#define MXLIMIT_DAEMON_TIER_SYNC_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/options.h"
#include "mxlimit/shared_limiter.h"
#include "src/options/store_url.h"
#include "src/shared/redis/redis_connection.h"
#include "src/shared/redis/tls_client.h"

namespace mxlimit::daemon {

class TierSync {
 public:
  static absl::StatusOr<std::unique_ptr<TierSync>> Create(
      const StoreOptions& store, std::chrono::milliseconds timeout);
  ~TierSync();

  // Publishes an assignment (`expires_at_ms` on the wall clock; nullopt:
  // never), or its end. Unavailable when the store cannot be reached.
  absl::Status Publish(std::string_view subject, std::string_view tier,
                       std::optional<int64_t> expires_at_ms);
  absl::Status Unpublish(std::string_view subject);

  // Makes `limiter`'s runtime assignments the store's, when the store's
  // changed since the last call (or `force`). Logs what it changed, and a
  // warning when the store cannot be read (at most once a minute).
  void Reconcile(SharedLimiter& limiter, bool force = false);

  const std::string& key() const { return key_; }

  // Held by Reconcile throughout, and by the admin API across a change and
  // its publication, so that a reconcile never sees one without the other.
  // Lock order: before the connection's.
  internal::Mutex& change_mu() { return change_mu_; }

 private:
  struct Wanted {
    std::string tier;
    int64_t expires_at_ms = 0;  // 0: never
  };
  using WantedMap = absl::flat_hash_map<std::string, Wanted>;

  TierSync() = default;
  // The store's assignments, when they changed since the last read (or
  // `force`); false (logged at most once a minute when it is an error)
  // otherwise.
  bool ReadWanted(bool force, WantedMap& wanted) ABSL_LOCKS_EXCLUDED(mu_);
  // A connection, or null with `why` set.
  internal::RedisConnection* Connection(
      std::string& why, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // HSET `value` (or HDEL, when null) and INCR the version, atomically.
  absl::Status Change(std::string_view subject, const std::string* value)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Logs that the store cannot be read, at most once a minute; false.
  bool Warn(std::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string key_;
  std::string version_key_;
  internal::StoreEndpoint endpoint_;
  // For rediss://, else null.
  std::shared_ptr<const internal::TlsContext> tls_;
  std::chrono::milliseconds timeout_{1000};

  internal::Mutex change_mu_;
  internal::Mutex mu_;
  std::unique_ptr<internal::RedisConnection> connection_ ABSL_GUARDED_BY(mu_);
  // The version last reconciled; -1: never.
  int64_t seen_version_ ABSL_GUARDED_BY(mu_) = -1;
  std::chrono::steady_clock::time_point last_warning_ ABSL_GUARDED_BY(mu_){};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_TIER_SYNC_H_
