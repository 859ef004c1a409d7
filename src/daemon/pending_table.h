// -----------------------------------------------------------------------------
// File: daemon/pending_table.h
// -----------------------------------------------------------------------------
//
// The decisions mxlimitd waits to hear the end of: an admitted request that
// holds in-flight leases or is charged on its response is kept here under
// the proxy's request id until its completion arrives on the feed
// (src/daemon/feed_sink.h), which takes it out again. The table is bounded: its
// slots are allocated once, and when they are all taken the oldest entry
// makes room (its leases then end by their lease time, and a charge on its
// response is not made; both are counted). Nothing allocates after
// construction.
//
// Example:
//   mxlimit::daemon::PendingTable pending(16384);
//   limiter.Release(pending.Put("5f2c...", {.client = client,
//                                          .leases = d.leases}), now);
//   mxlimit::daemon::PendingEntry done;
//   if (pending.Take("5f2c...", done)) limiter.Release(done.leases, now);

#ifndef MXLIMIT_DAEMON_PENDING_TABLE_H_
#define MXLIMIT_DAEMON_PENDING_TABLE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "mxlimit/decision.h"
#include "mxlimit/ip.h"
#include "mxlimit/request.h"

namespace mxlimit::daemon {

// What a completion needs of the request it ends: whom to charge (the
// method and target come from the log line) and the leases to give back.
struct PendingRequest {
  // What the completion of `request`, decided `d`, needs of them. Views
  // into `request`'s strings until PendingTable::Put copies them.
  static PendingRequest Of(const Request& request, const Decision& d);

  // The request as it was decided, for Limiter::Settle: the kept subjects
  // with the `method` and `target` its completion names. Both directions
  // live here so that a subject kept is a subject settled: a field one
  // side forgot would charge a completion to other buckets than its
  // decision's. Views into this and the arguments.
  Request ToRequest(std::string_view method, std::string_view target) const;

  IpAddress client;
  std::string_view user_id;
  std::string_view origin;
  int64_t request_bytes = -1;
  Leases leases;
  // Decision::settles: the completion may charge something.
  bool settles = false;
};

// One kept request. Its strings live in the entry.
class PendingEntry {
 public:
  // Longest request id, user ID and origin kept. A request with a longer
  // one is not kept (its leases end by their lease time).
  static constexpr size_t kMaxIdBytes = 64;
  static constexpr size_t kMaxNameBytes = 255;

  std::string_view id() const { return {id_.data(), id_len_}; }
  PendingRequest request() const;

 private:
  friend class PendingTable;
  // `id` and the names must fit (PendingTable::Put checks).
  void Assign(std::string_view id, const PendingRequest& r);

  std::array<char, kMaxIdBytes> id_;
  std::array<char, kMaxNameBytes> user_;
  std::array<char, kMaxNameBytes> origin_;
  uint8_t id_len_ = 0;
  uint8_t user_len_ = 0;
  uint8_t origin_len_ = 0;
  bool settles_ = false;
  IpAddress client_;
  int64_t request_bytes_ = -1;
  Leases leases_;
  // The shard's insertion order, oldest first (slot indices; kNil ends).
  uint32_t older_ = 0;
  uint32_t newer_ = 0;
};

class PendingTable {
 public:
  struct Counters {
    uint64_t entries = 0;
    uint64_t capacity = 0;
    // Entries dropped to make room before their completion came.
    uint64_t evicted = 0;
    // Entries replaced by a later request with the same id.
    uint64_t replaced = 0;
    // Requests kept without their user ID or origin, which was over
    // kMaxNameBytes: their completion charges only their address's
    // buckets (and releases their leases).
    uint64_t too_long = 0;
  };

  // `capacity` >= 1 entries in all, allocated now.
  explicit PendingTable(size_t capacity);
  PendingTable(const PendingTable&) = delete;
  PendingTable& operator=(const PendingTable&) = delete;

  // Whether `id` can be kept: 1 to kMaxIdBytes bytes.
  static bool Keeps(std::string_view id) {
    return !id.empty() && id.size() <= PendingEntry::kMaxIdBytes;
  }

  // Keeps `request` under `id` (when Keeps(id); any other id keeps
  // nothing). A user ID or origin over kMaxNameBytes is left out rather
  // than the request: a request is never left uncharged for the length of
  // a name its client chose. An entry of the same id (the proxy checked
  // one request twice) is replaced, and its leases, which only that
  // request held, are returned for release. Thread-safe.
  Leases Put(std::string_view id, const PendingRequest& request);

  // Moves the entry of `id` into `out` and frees its slot. False when there
  // is none. Thread-safe.
  bool Take(std::string_view id, PendingEntry& out);

  // Whether an entry of `id` is kept. Thread-safe.
  bool Contains(std::string_view id) const;

  Counters counters() const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::vector<PendingEntry> slots;
    std::vector<uint32_t> free;
    // Hash of the id → slot; the slot's id is compared on every hit.
    absl::flat_hash_map<uint64_t, uint32_t> index;
    uint32_t oldest = kNil;
    uint32_t newest = kNil;
  };

  Shard& ShardOf(uint64_t hash) { return shards_[hash % shards_.size()]; }
  const Shard& ShardOf(uint64_t hash) const {
    return shards_[hash % shards_.size()];
  }
  // The slot holding `id` (whose hash is `hash`), or kNil. Under s.mu.
  static uint32_t Find(const Shard& s, uint64_t hash, std::string_view id);
  static void Unlink(Shard& s, uint32_t slot);
  static void Drop(Shard& s, uint32_t slot, uint64_t hash);

  std::vector<Shard> shards_;
  size_t capacity_;
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> replaced_{0};
  std::atomic<uint64_t> too_long_{0};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_PENDING_TABLE_H_
