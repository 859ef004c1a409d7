// Snapshot and Restore of Limiter and ShardedLimiter (mxlimit/snapshot.h):
// the engines write and take the buckets; this decides which buckets a
// restore keeps and where each goes. Cold paths: they allocate.

#include <algorithm>
#include <cstring>
#include <istream>
#include <ostream>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "mxlimit/internal/mutex.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "src/engine/engine.h"
#include "src/engine/shard_set.h"
#include "src/engine/snapshot_format.h"

namespace mxlimit {
namespace {

using internal::Engine;
using internal::SnapshotEntry;
using internal::SnapshotTable;

int64_t WallNs(WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

void WriteHeader(internal::SnapshotWriter& w, const Engine& engine,
                 WallTime wall) {
  const std::vector<internal::PolicyFingerprint> policies =
      engine.PolicyFingerprints();
  w.Header(WallNs(wall), engine.RouteFingerprint(), policies);
}

struct Placement {
  const SnapshotEntry* entry;
  uint16_t token;
  int64_t tat_ns;
};

// Which staged buckets come back and with what TAT, judged against
// `engine`'s policies and routes.
RestoreStats Plan(const internal::StagedSnapshot& s, const Engine& engine,
                  MonotonicTime now, WallTime wall,
                  std::vector<Placement>& out) {
  absl::flat_hash_map<uint64_t, uint16_t> token_of_fingerprint;
  for (const internal::PolicyFingerprint& p : engine.PolicyFingerprints()) {
    token_of_fingerprint.emplace(p.second, p.first);
  }
  absl::flat_hash_map<uint16_t, uint16_t> token_now;
  for (const internal::PolicyFingerprint& p : s.policies) {
    auto it = token_of_fingerprint.find(p.second);
    if (it != token_of_fingerprint.end())
      token_now.emplace(p.first, it->second);
  }
  const bool same_routes = s.route_fingerprint == engine.RouteFingerprint();
  // Leads run on from the snapshot by the wall clock, never backwards. A
  // file's times are not trusted to keep the arithmetic in range.
  int64_t since = 0;
  const bool overflow = __builtin_sub_overflow(WallNs(wall), s.wall_ns, &since);
  const int64_t elapsed =
      overflow ? (s.wall_ns < 0 ? INT64_MAX : 0) : std::max<int64_t>(0, since);
  RestoreStats stats;
  out.reserve(s.entries.size());
  for (const SnapshotEntry& e : s.entries) {
    uint16_t token = 0;
    RouteId route = 0;
    if (e.table == SnapshotTable::kIp) {
      internal::IpBucketKey key;
      std::memcpy(&key, e.key.data(), sizeof(key));
      token = key.policy;
      route = key.route;
    } else {
      internal::UserBucketKey key;
      std::memcpy(&key, e.key.data(), sizeof(key));
      token = key.policy();
      route = key.route();
      using Kind = internal::UserBucketKey::Kind;
      if (key.kind() == Kind::kDigest || key.kind() == Kind::kBound) {
        ++stats.unmatched;
        continue;
      }
    }
    auto it = token_now.find(token);
    if (it == token_now.end()) {
      ++stats.unknown_policy;
      continue;
    }
    if (!same_routes && route != kSharedBucketRoute) {
      ++stats.unmatched;
      continue;
    }
    if (e.lead_ns == INT64_MIN || e.lead_ns <= elapsed) {
      ++stats.refilled;
      continue;
    }
    // No bucket leads by more than a policy's tau plus its debt, far below
    // this; a larger lead is a broken file's and is capped.
    constexpr int64_t kMaxLeadNs = int64_t{1} << 60;
    const int64_t lead = std::min(e.lead_ns - elapsed, kMaxLeadNs);
    out.push_back({&e, it->second, now.nanoseconds() + lead});
    ++stats.restored;
  }
  return stats;
}

}  // namespace

absl::Status Limiter::Snapshot(std::ostream& out, MonotonicTime now,
                               WallTime wall) const {
  internal::SnapshotWriter w(out);
  WriteHeader(w, *engine_, wall);
  engine_->WriteBuckets(w, now, /*scope_tables=*/true);
  return w.Finish();
}

absl::StatusOr<RestoreStats> Limiter::Restore(std::istream& in,
                                              MonotonicTime now,
                                              WallTime wall) {
  absl::StatusOr<internal::StagedSnapshot> s =
      internal::ReadSnapshot(in, engine_->SnapshotCapacity(true));
  if (!s.ok()) return s.status();
  std::vector<Placement> placements;
  const RestoreStats stats = Plan(*s, *engine_, now, wall, placements);
  for (const Placement& p : placements) {
    engine_->RestoreBucket(*p.entry, p.token, p.tat_ns);
  }
  return stats;
}

absl::Status ShardedLimiter::Snapshot(std::ostream& out, MonotonicTime now,
                                      WallTime wall) const {
  internal::SnapshotWriter w(out);
  for (size_t i = 0; i < shard_count(); ++i) {
    internal::Shard& shard = set_->shard(i);
    internal::MutexLock lock(shard.mu);
    if (i == 0) WriteHeader(w, *shard.engine, wall);
    // The origin, room and target tables are one set for all shards.
    shard.engine->WriteBuckets(w, now, /*scope_tables=*/i == 0);
  }
  return w.Finish();
}

absl::StatusOr<RestoreStats> ShardedLimiter::Restore(std::istream& in,
                                                     MonotonicTime now,
                                                     WallTime wall) {
  size_t capacity = 0;
  for (size_t i = 0; i < shard_count(); ++i) {
    internal::Shard& shard = set_->shard(i);
    internal::MutexLock lock(shard.mu);
    capacity += shard.engine->SnapshotCapacity(i == 0);
  }
  absl::StatusOr<internal::StagedSnapshot> s =
      internal::ReadSnapshot(in, capacity);
  if (!s.ok()) return s.status();
  std::vector<Placement> placements;
  RestoreStats stats;
  {
    internal::Shard& first = set_->shard(0);
    internal::MutexLock lock(first.mu);
    stats = Plan(*s, *first.engine, now, wall, placements);
  }
  for (const Placement& p : placements) {
    size_t index = 0;
    if (p.entry->table == SnapshotTable::kIp) {
      IpAddress address;
      std::memcpy(address.bytes.data(), p.entry->key.data(), 16);
      index = set_->IpShard(address);
    } else if (p.entry->table == SnapshotTable::kUser) {
      internal::UserBucketKey key;
      std::memcpy(&key, p.entry->key.data(), sizeof(key));
      index = set_->ShardOfUserKey(key);
    }
    internal::Shard& shard = set_->shard(index);
    internal::MutexLock lock(shard.mu);
    shard.engine->RestoreBucket(*p.entry, p.token, p.tat_ns);
  }
  return stats;
}

}  // namespace mxlimit
