// -----------------------------------------------------------------------------
// File: engine/lease_table.h
// -----------------------------------------------------------------------------
//
// `LeaseTable` holds the leases of in-flight limits (`Policy::concurrency`):
// for each concurrency bucket (a group), the requests admitted and not yet
// released, each with the time its lease ends on its own.
//
// Layout. Every record is allocated at construction, so nothing on the
// request path allocates and memory is fixed by the capacity:
//   - a slab of `capacity + 1` leases (record 0 unused, so a `LeaseId` is
//     never 0): expiry, generation, the group, links to the group's other
//     leases, and the lease's position in the heap;
//   - a slab of `capacity + 1` groups: the bucket's key and its hash, its
//     first lease and how many it holds; found through an
//     `absl::flat_hash_set<uint32_t>` of slab indices sized, as
//     BucketTable's index is, so that churn rehashes in place. A group that
//     has lost its last lease stays indexed, on a least-recently-emptied
//     list, until its record is needed for another group: a bucket whose
//     requests come and go (one federation request at a time, say) finds
//     its group again instead of erasing and inserting it each time;
//   - a binary min-heap of (expiry, lease) pairs, so that the leases due end
//     in O(log n) each, without a scan.
//
// When every lease is taken, `Acquire` ends the one nearest its expiry first
// (counted in `evictions()`): a flood of distinct buckets costs evictions,
// never memory, and never blocks another bucket's requests.
//
// A `LeaseId` carries the lease's generation: releasing a lease that already
// ended (expired, evicted or released) does nothing, even once its record
// holds another lease.
//
// Thread safety: none; the owner serializes access.

#ifndef MXLIMIT_ENGINE_LEASE_TABLE_H_
#define MXLIMIT_ENGINE_LEASE_TABLE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "mxlimit/decision.h"
#include "src/engine/bucket_keys.h"

namespace mxlimit::internal {

// A concurrency bucket's identity: the scope and the bytes of its bucket key
// (which carries the policy's bucket token and route), zero padded.
struct LeaseGroupKey {
  std::array<uint64_t, 7> words{};

  // `key` is an IpBucketKey or UserBucketKey (at most 48 bytes).
  template <typename Key>
  static LeaseGroupKey Of(uint8_t scope, const Key& key) {
    static_assert(sizeof(Key) <= 48);
    LeaseGroupKey g;
    g.words[0] = scope;
    std::memcpy(&g.words[1], &key, sizeof(Key));
    return g;
  }
  friend bool operator==(const LeaseGroupKey&, const LeaseGroupKey&) = default;
};

class LeaseTable {
 public:
  // Largest capacity: slab indices are uint32_t with 0 reserved.
  static constexpr size_t kMaxCapacity = size_t{1} << 30;

  // REQUIRES: 1 <= capacity <= kMaxCapacity.
  explicit LeaseTable(size_t capacity);
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  // A group's key with its hash (`Hash`): a request hashes its group once
  // for `Find`, `NthExpiry` and `Acquire`. `key` must outlive it.
  struct HashedGroup {
    const LeaseGroupKey* key;
    size_t hash;
  };
  // The hash of the group whose key is `bucket_key` (seeded per table, as
  // a bucket table's is, since clients choose part of every key). Equal
  // bucket keys of different scopes may share a hash; the keys still differ.
  size_t Hash(const IpBucketKey& bucket_key) const { return hash_(bucket_key); }
  size_t Hash(const UserBucketKey& bucket_key) const {
    return hash_(bucket_key);
  }

  // Ends every lease whose expiry is at or before `now_ns`.
  void Expire(int64_t now_ns);

  // What a group holds at `now_ns`: leases in flight (those whose expiry is
  // later, whether or not `Expire` has ended the others yet) and the
  // earliest expiry among them (0 when none).
  struct Group {
    uint32_t in_flight = 0;
    int64_t earliest_expiry_ns = 0;
  };
  Group Find(HashedGroup group, int64_t now_ns) const;

  // Most leases of one group that `NthExpiry` ranks: an in-flight limit
  // (at most kMaxConcurrency) and as many queued behind it.
  static constexpr size_t kMaxRanked = 2 * size_t{kMaxConcurrency};

  // The `n`-th earliest expiry (1-based) among the group's leases still
  // running at `now_ns`: when, with no lease released early, the group holds
  // fewer than in_flight - n + 1. 0 when it holds fewer than `n`.
  // REQUIRES: 1 <= n <= kMaxRanked.
  int64_t NthExpiry(HashedGroup group, int64_t now_ns, size_t n) const;

  // Takes a lease in `group`, ending at `expiry_ns`.
  LeaseId Acquire(HashedGroup group, int64_t expiry_ns);

  // Ends the lease `id`; false when it had ended already.
  bool Release(LeaseId id);

  // Ends every lease and drops every group.
  void Clear();

  // Ends every lease of the groups `drop(key)` is true for, and drops
  // those groups. O(capacity): for reloads, not the request path.
  template <typename Pred>
  void EraseIf(const Pred& drop) {
    for (size_t i = 1; i <= capacity_; ++i) {
      const uint32_t g = leases_[i].group;
      if (g != 0 && drop(groups_[g].key)) End(static_cast<uint32_t>(i));
    }
    for (size_t g = 1; g <= capacity_; ++g) {
      if (groups_[g].indexed && groups_[g].count == 0 && drop(groups_[g].key)) {
        DropEmptyGroup(static_cast<uint32_t>(g));
      }
    }
  }

  size_t size() const { return heap_.size(); }
  // Groups indexed: those holding leases and those kept empty.
  size_t groups() const { return group_index_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t acquisitions() const { return acquisitions_; }
  uint64_t evictions() const { return evictions_; }
  uint64_t expirations() const { return expirations_; }
  uint64_t releases() const { return releases_; }
  size_t memory_bytes() const;

 private:
  struct Lease {
    int64_t expiry = 0;
    uint32_t generation = 0;
    uint32_t group = 0;
    uint32_t heap_pos = 0;
    uint32_t next = 0;  // In the group, or in the free list.
    uint32_t prev = 0;
  };
  struct GroupRecord {
    LeaseGroupKey key;
    size_t hash = 0;
    uint32_t head = 0;  // First lease; in the free list, the next record.
    uint32_t count = 0;
    // Links of the least-recently-emptied list, while `count` is 0.
    uint32_t empty_prev = 0;
    uint32_t empty_next = 0;
    bool indexed = false;
  };
  struct GroupHash {
    using is_transparent = void;
    const std::vector<GroupRecord>* slab;
    size_t operator()(uint32_t i) const { return (*slab)[i].hash; }
    size_t operator()(HashedGroup g) const { return g.hash; }
  };
  struct GroupEq {
    using is_transparent = void;
    const std::vector<GroupRecord>* slab;
    const LeaseGroupKey& KeyOf(uint32_t i) const { return (*slab)[i].key; }
    const LeaseGroupKey& KeyOf(HashedGroup g) const { return *g.key; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return KeyOf(a) == KeyOf(b);
    }
  };
  struct HeapEntry {
    int64_t expiry;
    uint32_t lease;
  };

  // Ends lease `i`: out of the heap and its group (an emptied group goes to
  // the end of the empty list), back to the free list.
  void End(uint32_t i);
  // A record for a new group: a free one, else the least recently emptied
  // group's, dropped.
  uint32_t TakeGroupRecord();
  void DropEmptyGroup(uint32_t g);
  void UnlinkEmpty(uint32_t g);
  void HeapUp(size_t pos);
  void HeapDown(size_t pos);
  void HeapRemove(size_t pos);
  // Puts `entry` at heap position `pos` and records the position.
  void Place(size_t pos, HeapEntry entry) {
    heap_[pos] = entry;
    leases_[entry.lease].heap_pos = static_cast<uint32_t>(pos);
  }

  size_t capacity_;
  std::vector<Lease> leases_;
  std::vector<GroupRecord> groups_;
  absl::flat_hash_set<uint32_t, GroupHash, GroupEq> group_index_;
  BucketKeyHash hash_;
  std::vector<HeapEntry> heap_;
  // Free lists through `next` / `head`. Leases are reused first in, first
  // out, so a record's generation turns over as slowly as the table allows
  // (a stale id stays dead for 2^32 reuses of its own record).
  uint32_t free_lease_ = 0;
  uint32_t free_lease_tail_ = 0;
  uint32_t free_group_ = 0;
  // The empty groups, least recently emptied first.
  uint32_t empty_head_ = 0;
  uint32_t empty_tail_ = 0;
  uint64_t acquisitions_ = 0;
  uint64_t evictions_ = 0;
  uint64_t expirations_ = 0;
  uint64_t releases_ = 0;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_LEASE_TABLE_H_
