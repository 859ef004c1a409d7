// -----------------------------------------------------------------------------
// File: daemon/state_dir.h
// -----------------------------------------------------------------------------
//
// mxlimitd's `--state-dir`: what it keeps across restarts.
//   tiers.jsonl       the runtime tier assignments, one JSON object a line
//                     ({"kind", "subject", "tier", "expires_at_ms"?}, the
//                     expiry on the wall clock), rewritten on every change
//   buckets.snapshot  the bucket tables (mxlimit/snapshot.h), written on
//                     SIGTERM after the last request is answered, and every
//                     --snapshot-interval when set
// Both are written to a temporary file, fsync'd, renamed over the old one
// and the directory fsync'd: a crash leaves the old file or the new one,
// never half of either. At start both are read back; a file that is
// missing, stale, truncated or corrupt is a logged warning and a fresh
// start for what it held, never a refused start.
//
// Example:
//   absl::StatusOr<std::unique_ptr<StateDir>> dir =
//       StateDir::Open("/var/lib/mxlimitd");
//   (*dir)->Load(limiter);               // at start, before serving
//   (void)(*dir)->SaveTiers(limiter);    // after each admin change
//   (void)(*dir)->SaveBuckets(limiter);  // at SIGTERM

#ifndef MXLIMIT_DAEMON_STATE_DIR_H_
#define MXLIMIT_DAEMON_STATE_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/shared_limiter.h"

namespace mxlimit::daemon {

class StateDir {
 public:
  // Creates the directory (mode 0700) when missing. An error when it cannot
  // be made or is not a writable directory.
  static absl::StatusOr<std::unique_ptr<StateDir>> Open(
      const std::string& path);

  // Restores the tier assignments and the buckets, logging what came back
  // and warning about what could not.
  void Load(SharedLimiter& limiter) const;

  // Writes the runtime tier assignments. Thread-safe.
  absl::Status SaveTiers(const SharedLimiter& limiter) const;
  // Writes the buckets; logs the count and how long it took.
  absl::Status SaveBuckets(const SharedLimiter& limiter) const;

  const std::string& path() const { return path_; }

 private:
  explicit StateDir(std::string path) : path_(std::move(path)) {}
  void LoadTiers(SharedLimiter& limiter) const;
  void LoadBuckets(SharedLimiter& limiter) const;

  std::string path_;
  // One writer of tiers.jsonl at a time (the admin thread, and the start).
  mutable internal::Mutex tiers_mu_;
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_STATE_DIR_H_
