// -----------------------------------------------------------------------------
// File: mxlimit/snapshot.h
// -----------------------------------------------------------------------------
//
// What `Limiter::Snapshot` and `Limiter::Restore` (and ShardedLimiter's and
// SharedLimiter's) report, and the rules they follow, so that an embedder,
// like mxlimitd's `--state-dir`, can keep buckets across a restart.
//
// A snapshot holds every bucket of the rate tables (per address, user,
// origin, room and target) with its lead over the snapshot's clock, the
// wall-clock time it was taken, and a fingerprint of each policy (name,
// scope, rate, burst and what else keeps a bucket across a reload,
// `KeepsBuckets`). The format is versioned and checksummed
// (docs/embedding.md, "Snapshots"). Restoring it:
//   - moves every lead forward by the wall-clock time since the snapshot
//     (never back: a clock that went back leaves the buckets as drained as
//     they were), and drops the buckets that are full again by then;
//   - keeps only buckets whose policy fingerprint still exists (the reload
//     rule), and per-route buckets only when the route table is the same;
//   - drops buckets keyed by a digest (user IDs over 40 bytes, unverified
//     origins): the digest key is drawn per process;
//   - never grows a table past its capacity (the least recently used go
//     first, as always), keeps the more drained state where a bucket
//     exists already, and changes nothing at all when the snapshot is
//     truncated, corrupt, of another version, or larger than the tables.
// In-flight leases, delay queues and tier assignments are not part of it.
//
// Example:
//   #include <fstream>
//   #include "mxlimit/limiter.h"
//
//   // At shutdown, and again at start.
//   absl::Status Keep(const mxlimit::Limiter& limiter, const char* path) {
//     std::ofstream out(path, std::ios::binary | std::ios::trunc);
//     return limiter.Snapshot(out);
//   }
//   absl::Status Bring(mxlimit::Limiter& limiter, const char* path) {
//     std::ifstream in(path, std::ios::binary);
//     return limiter.Restore(in).status();
//   }

#ifndef MXLIMIT_SNAPSHOT_H_
#define MXLIMIT_SNAPSHOT_H_

#include <chrono>
#include <cstdint>

namespace mxlimit {

// The format's version; a snapshot of another one is refused
// (FailedPrecondition).
inline constexpr uint32_t kSnapshotVersion = 1;

using WallTime = std::chrono::system_clock::time_point;

struct RestoreStats {
  // Buckets put back.
  uint64_t restored = 0;
  // Full again by the time of the restore: dropped, as a fresh bucket is
  // the same.
  uint64_t refilled = 0;
  // Of a policy that no longer exists or changed (rate, scope, ...).
  uint64_t unknown_policy = 0;
  // Keys that cannot carry over: per-route buckets of another route table,
  // digest keys of another process.
  uint64_t unmatched = 0;
};

}  // namespace mxlimit

#endif  // MXLIMIT_SNAPSHOT_H_
