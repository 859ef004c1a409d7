// -----------------------------------------------------------------------------
// File: engine/snapshot_format.h
// -----------------------------------------------------------------------------
//
// The bytes of a limiter snapshot (mxlimit/snapshot.h), little-endian:
//
//   "MXLSNAP\0"  u32 version  u32 0  i64 wall_ns  u64 route_fingerprint
//   u32 policies, then per policy: u16 bucket token, u64 fingerprint
//   sections, each: u8 table (SnapshotTable)  u64 count
//                   count x { key (20 bytes for kIp, else 48)  i64 lead_ns }
//   u8 0xFF (the end)  u64 FNV-1a of every byte before it
//
// A section's entries run from least to most recently used. Reading stages
// everything and checks the checksum before the caller applies any of it.
//
// Internal: not installed.

#ifndef MXLIMIT_ENGINE_SNAPSHOT_FORMAT_H_
#define MXLIMIT_ENGINE_SNAPSHOT_FORMAT_H_

#include <array>
#include <cstdint>
#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace mxlimit::internal {

enum class SnapshotTable : uint8_t {
  kIp = 0,
  kUser = 1,
  kOrigin = 2,
  kRoom = 3,
  kTarget = 4,
};
inline constexpr uint8_t kSnapshotEnd = 0xFF;

// A bucket token and the fingerprint of the policy it stands for.
using PolicyFingerprint = std::pair<uint16_t, uint64_t>;

struct SnapshotEntry {
  SnapshotTable table = SnapshotTable::kIp;
  // An IpBucketKey's 20 bytes (the rest zero) or a UserBucketKey's 48.
  std::array<uint8_t, 48> key{};
  // The bucket's TAT minus the snapshot's now; INT64_MIN: never charged.
  int64_t lead_ns = 0;
};

class SnapshotWriter {
 public:
  explicit SnapshotWriter(std::ostream& out) : out_(out) {}

  void Header(int64_t wall_ns, uint64_t route_fingerprint,
              std::span<const PolicyFingerprint> policies);
  void BeginSection(SnapshotTable table, uint64_t count);
  void Entry(const void* key, size_t key_bytes, int64_t lead_ns);
  // The end marker and the checksum; an error if any write failed.
  absl::Status Finish();

 private:
  void Put(const void* data, size_t n);
  template <typename T>
  void PutValue(T v) {
    Put(&v, sizeof(v));  // little-endian hosts only (static_assert in .cc)
  }
  void Flush();

  std::ostream& out_;
  std::string buffer_;
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

struct StagedSnapshot {
  int64_t wall_ns = 0;
  uint64_t route_fingerprint = 0;
  std::vector<PolicyFingerprint> policies;
  // Oldest first within each table.
  std::vector<SnapshotEntry> entries;
};

// Reads a whole snapshot. At most `max_entries` are staged (the limiter's
// total capacity: each section keeps its most recent ones). DataLoss for a
// truncated or corrupt stream (with what and where), FailedPrecondition for
// another version.
absl::StatusOr<StagedSnapshot> ReadSnapshot(std::istream& in,
                                            size_t max_entries);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_SNAPSHOT_FORMAT_H_
