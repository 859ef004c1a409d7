// Who is in which tier: the policy file's `tiers.assign` and the
// assignments made while running (Limiter::SetTier), looked up once per
// request. A user ID is one hash probe; a client address one probe per
// prefix length in use, longest first.
//
// Internal: not installed. A lone Limiter's directory is unsynchronized (the
// Limiter's contract is the caller's lock); the one a ShardedLimiter's
// shards share takes a reader lock per lookup, and none at all while it is
// empty.

#ifndef MXLIMIT_ENGINE_TIER_DIRECTORY_H_
#define MXLIMIT_ENGINE_TIER_DIRECTORY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_set.h"
#include "absl/status/status.h"
#include "mxlimit/ip.h"
#include "mxlimit/tiers.h"
#include "mxlimit/time.h"
#include "src/engine/tier_set.h"

namespace mxlimit::internal {

inline constexpr uint16_t kNoTier = 0xFFFF;

// A request's tier. `index` is into `set`, the tiers the directory held when
// it answered: an engine holding another set (a reload under way) finds the
// tier by `name` instead.
struct TierMatch {
  // Interned: valid as long as the directory. Empty: no tier.
  std::string_view name;
  uint16_t index = kNoTier;
  const TierSet* set = nullptr;
};

// A request's subjects hashed once (by Prefetch) for Find: the user's
// hash and its address's under each prefix length in use, longest first.
struct TierProbe {
  static constexpr size_t kMaxLengths = 4;
  bool ready = false;
  // No assigned network shares the address's first 16 bits: no network
  // probe.
  bool gated;
  uint8_t lengths;
  uint64_t user;
  uint64_t net[kMaxLengths];
};

class TierDirectory {
 public:
  explicit TierDirectory(bool synchronized) : synchronized_(synchronized) {}
  TierDirectory(const TierDirectory&) = delete;
  TierDirectory& operator=(const TierDirectory&) = delete;

  // Replaces the tiers and the file's assignments; runtime assignments keep
  // their tier by name, and those whose tier `tiers` no longer defines are
  // dropped.
  void Install(std::shared_ptr<const TierSet> tiers);

  // True while nobody is assigned a tier: a request then needs no lookup.
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }

  // Starts loading what Find will read for this request, so that the loads
  // overlap with the caller's work in between. No allocation.
  // `probe` keeps the hashes for Find (a lone directory's only: a shared
  // one's lengths may change in between).
  void Prefetch(std::string_view user_id, const IpAddress& client,
                TierProbe& probe) const;
  // The tier of a request by `user_id` (may be empty) from `client` at
  // `now`. No allocation.
  TierMatch Find(std::string_view user_id, const IpAddress& client,
                 MonotonicTime now, const TierProbe* probe = nullptr) const;
  // Which assignment Find follows, for `explain`; allocates.
  std::optional<TierAssignment> Describe(std::string_view user_id,
                                         const IpAddress& client,
                                         MonotonicTime now) const;

  // Limiter::SetTier, ClearTier and ListTiers.
  absl::Status Set(const TierSubject& subject, std::string_view tier,
                   std::optional<MonotonicTime> expires, MonotonicTime now);
  absl::Status Clear(const TierSubject& subject);
  std::vector<TierAssignment> List(MonotonicTime now) const;

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  struct Entry {
    uint16_t file = kNoTier;
    uint16_t runtime = kNoTier;
    int64_t expires_ns = kNever;
    // The tier in force at `now_ns`, or kNoTier.
    uint16_t Effective(int64_t now_ns) const {
      return runtime != kNoTier && expires_ns > now_ns ? runtime : file;
    }
  };
  // A network: its first `bits` bits (of 128; IPv4 as v4-mapped) read as
  // two big-endian words, the rest zero.
  struct NetKey {
    uint64_t high = 0;
    uint64_t low = 0;
    uint8_t bits = 0;
    friend bool operator==(const NetKey&, const NetKey&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const NetKey& k) {
      return H::combine(std::move(h), k.high, k.low, k.bits);
    }
  };
  static NetKey KeyOf(const IpAddress& ip, int bits);
  static NetKey KeyOf(const Cidr& network);
  static Cidr CidrOf(const NetKey& key);

  class ReadLock;
  class WriteLock;

  // A bit per hash of every subject assigned (set on insertion, rebuilt
  // when erasures have left as many stale bits as live ones): most requests
  // are nobody's, and a miss here costs one read of a table small enough
  // for the cache instead of a probe of each map.
  static constexpr size_t kFilterBits = size_t{1} << 20;
  static uint64_t UserHash(std::string_view user_id);
  static uint64_t NetHash(const NetKey& key);
  // Two bits of one word per hash (a blocked filter: one load a probe).
  static size_t WordOf(uint64_t hash) {
    return (hash >> 32) & (kFilterBits / 64 - 1);
  }
  static uint64_t BitsOf(uint64_t hash) {
    return (uint64_t{1} << (hash & 63)) | (uint64_t{1} << ((hash >> 6) & 63));
  }
  bool MayHold(uint64_t hash) const {
    const uint64_t bits = BitsOf(hash);
    return (filter_[WordOf(hash)] & bits) == bits;
  }
  void Mark(uint64_t hash);
  void MarkNetwork(const NetKey& key);
  void Unmarked();
  void RebuildFilter();
  // The gate before the network probes: a bit per first 16 bits of an
  // address (IPv6, and IPv4 apart) some assigned network covers, unless one
  // shorter than /16 covers them all. Small enough to stay in the first
  // level cache.
  bool GateOpen(const IpAddress& client) const;

  // Find's steps, under the lock: the entry in force and where it is.
  const Entry* FindEntry(std::string_view user_id, const IpAddress& client,
                         int64_t now_ns, const TierProbe* probe,
                         const NetKey** network, bool* user) const;
  // The per-length counts kept as networks come and go (a rebuild of the
  // lengths only when a length appears or disappears), or recounted whole.
  void AddNetwork(const NetKey& key);
  void EraseNetwork(const NetKey& key);
  void RebuildLengths();
  void Recount();
  void Count();
  // Drops expired runtime assignments (entries left with no file
  // assignment go).
  void PruneExpired(int64_t now_ns);
  TierAssignment Report(TierSubjectKind kind, std::string subject,
                        uint16_t tier, bool runtime, int64_t expires_ns) const;

  const bool synchronized_;
  // A pthread read-write lock (std::shared_mutex), not an absl::Mutex:
  // Debian's libabsl runs its deadlock detector on every lock and is not
  // built for ThreadSanitizer (see internal/mutex.h).
  mutable std::shared_mutex mu_;
  std::shared_ptr<const TierSet> tiers_;
  // Tier names by index of tiers_, interned in names_, which never shrinks
  // (a Decision may hold one past a reload).
  std::vector<std::string_view> tier_names_;
  absl::node_hash_set<std::string> names_;
  absl::flat_hash_map<std::string, Entry> users_;
  absl::flat_hash_map<NetKey, Entry> networks_;
  // Networks per prefix length, and the lengths in use, longest first.
  std::array<uint32_t, 129> per_length_{};
  std::vector<uint8_t> lengths_;
  size_t runtime_count_ = 0;
  std::vector<uint64_t> filter_ = std::vector<uint64_t>(kFilterBits / 64, 0);
  size_t filter_stale_ = 0;
  std::vector<uint64_t> gate_ = std::vector<uint64_t>(2 * 65536 / 64, 0);
  bool gate_v4_all_ = false;
  bool gate_v6_all_ = false;
  std::atomic<size_t> count_{0};
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_TIER_DIRECTORY_H_
