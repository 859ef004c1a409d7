// -----------------------------------------------------------------------------
// File: engine/bucket_table.h
// -----------------------------------------------------------------------------
//
// `BucketTable<Key>` is a bounded map from a bucket key to the GCRA state of
// that bucket, with least-recently-used eviction. The limiter keeps two of
// them (per client address, per user). Its capacity is fixed at construction:
// every byte it will ever use is allocated then, so a flood of new keys costs
// evictions, never memory, and no operation allocates afterwards.
//
// Layout. Entries live in a slab of `capacity + 1` fixed-size records
// allocated once (large slabs and indexes on transparent huge pages, see
// src/engine/huge_page_allocator.h: at a million buckets the page walks cost
// as much as the accesses). Record 0 is a dummy list head; records 1..capacity
// hold (key, GcraState, prev, next). `prev`/`next` are `uint32_t` slab indices
// forming an intrusive, circular, doubly-linked recency list through the dummy
// head: head.next is the least recently used entry, head.prev the most
// recently used one. With the dummy head, "empty list", "first" and "last"
// need no special cases when linking and unlinking.
//
// The index is an `absl::flat_hash_set<uint32_t>` of slab indices whose hash
// and equality functors look through the index into the slab (heterogeneous
// lookup by `Key`). The key is therefore stored once, in the slab; the index
// costs 5 bytes per bucket of the hash table. Slab indices never move, so the
// abseil table may shuffle its slots freely (in-place rehash) without
// invalidating the links. We never keep pointers into the abseil table.
//
// The index is sized at construction so that a full table stays at or below
// 25/32 of the index capacity. At that load abseil clears erase tombstones by
// rehashing in place instead of growing, so steady churn (evict one, admit
// one) never allocates; `memory_bytes()` is constant after construction.
//
// Costs: `Find`, `FindOrAdmit`, `Peek`, `Erase` are expected O(1); admitting
// a new key into a full table evicts the least recently used entry in O(1)
// (no scan). `ForEach`, `EraseIf`, `Clear` are O(size) and meant for reloads
// and stats, not the request path.
//
// Thread safety: none; the owner serializes access (the limiter runs under
// the embedder's lock). Even `Find` writes (it moves the entry to the tail).
//
// The table never looks at the GCRA state it stores: it does not know the
// rates, so it does not prefer fully drained buckets as eviction victims (see
// docs/design.md: LRU order already puts idle buckets first).
//
// Example:
//   BucketTable<IpBucketKey> table(/*capacity=*/100'000);
//   GcraState* state = table.FindOrAdmit(key);   // Evicts the LRU if full.
//   GcraResult r = GcraCheck(rate, *state, now);
//
// NOTE: a `GcraState*` returned by `Find`/`FindOrAdmit` stays valid until the
// next call that can admit or erase in the *same* table (`FindOrAdmit`,
// `Erase`, `EraseIf`, `Clear`): an admission may evict that very entry and
// reuse its record. Lookups in another table do not invalidate it.

#ifndef MXLIMIT_ENGINE_BUCKET_TABLE_H_
#define MXLIMIT_ENGINE_BUCKET_TABLE_H_

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "mxlimit/rate.h"
#include "src/engine/huge_page_allocator.h"

namespace mxlimit::internal {

template <typename Key, typename Hash = absl::Hash<Key>>
class BucketTable {
  static_assert(std::is_trivially_copyable_v<Key>,
                "bucket keys are fixed-size values stored in the slab");

 public:
  // Slab indices are uint32_t and index 0 is the dummy head; keep well clear
  // of the top so index arithmetic never wraps.
  static constexpr size_t kMaxCapacity = size_t{1} << 30;

  // Allocates everything the table will ever use. `capacity` is clamped to
  // [1, kMaxCapacity]; a table always holds at least one bucket.
  explicit BucketTable(size_t capacity, Hash hash = Hash())
      : capacity_(ClampCapacity(capacity)),
        slab_(MakeHugeArray<Entry>(capacity_ + 1)),
        index_(IndexBucketCount(capacity_), IndexHash{slab_.get(), hash},
               IndexEq{slab_.get()}) {
    slab_[0].prev = 0;
    slab_[0].next = 0;
    // At full size the index must stay within abseil's rehash-in-place
    // threshold (and above one group), or churn would grow it.
    assert(capacity_ * 32 <= index_.capacity() * 25);
    assert(index_.capacity() > 16);
  }

  // Neither copyable nor movable: the index functors point into the slab.
  BucketTable(const BucketTable&) = delete;
  BucketTable& operator=(const BucketTable&) = delete;
  BucketTable(BucketTable&&) = delete;
  BucketTable& operator=(BucketTable&&) = delete;

  // --- Request path ---------------------------------------------------------

  // A key together with its hash. A caller that needs several operations on
  // one key per request (Prefetch, Locate, Acquire) hashes it once.
  // `key` must stay alive while the HashedKey is used.
  struct HashedKey {
    const Key* key;
    size_t hash;
  };
  HashedKey Hashed(const Key& key) const {
    return {&key, index_.hash_function().hash(key)};
  }
  // The hash `Hashed` applies (for a hasher's staged forms). A copy: the
  // index hands out its hasher by value.
  Hash hasher() const { return index_.hash_function().hash; }

  // The state of `key` if present, after marking it most recently used;
  // nullptr otherwise. Counts a hit when found.
  GcraState* Find(const Key& key) { return Find(Hashed(key)); }
  GcraState* Find(HashedKey key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    ++hits_;
    MoveToTail(*it);
    return &slab_[*it].state;
  }

  // Like `Find`, but admits `key` when absent, with a fresh (full) bucket,
  // evicting the least recently used entry first when the table is full.
  // Never returns nullptr and never allocates.
  GcraState* FindOrAdmit(const Key& key) { return FindOrAdmit(Hashed(key)); }
  GcraState* FindOrAdmit(HashedKey key) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      ++hits_;
      MoveToTail(*it);
      return &slab_[*it].state;
    }
    return &slab_[Admit(*key.key)].state;
  }

  // Locate / Acquire
  //
  // `FindOrAdmit` in two halves, for a caller that looks up several tables
  // per request: Locate in every table, then Acquire in each, so the cache
  // misses of one table's record and its recency neighbours overlap with the
  // other table's instead of queueing behind them. `Locate` returns the
  // key's slot (0 when absent) and prefetches what `Acquire` will touch;
  // `Acquire` then touches or admits exactly as `FindOrAdmit` would.
  // REQUIRES: nothing changes this table between the two calls.
  uint32_t Locate(HashedKey key) const {
    auto it = index_.find(key);
    if (it == index_.end()) {
      // An admission at capacity reuses the least recently used record.
      if (size_ == capacity_) PrefetchForWrite(slab_[0].next);
      return 0;
    }
    const Entry& e = slab_[*it];
    PrefetchForWrite(e.prev);
    PrefetchForWrite(e.next);
    return *it;
  }
  // The state in slot `located` (from Locate) without touching anything;
  // nullptr for 0 (absent). For evaluating a bucket before relinking it.
  const GcraState* StateAt(uint32_t located) const {
    return located != 0 ? &slab_[located].state : nullptr;
  }
  GcraState* Acquire(HashedKey key, uint32_t located) {
    if (located != 0) {
      ++hits_;
      MoveToTail(located);
      return &slab_[located].state;
    }
    return &slab_[Admit(*key.key)].state;
  }

  // The state of `key` without marking it used and without counting a hit;
  // nullptr when absent.
  const GcraState* Peek(const Key& key) const { return Peek(Hashed(key)); }
  const GcraState* Peek(HashedKey key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &slab_[*it].state;
  }

  // Issues prefetches for the index group `key` hashes to, so that the cache
  // misses of lookups in two tables can overlap: prefetch both keys, then
  // look both up. Changes nothing.
  void Prefetch(HashedKey key) const { index_.prefetch(key); }

  // --- Maintenance (reloads, admin, stats) ---------------------------------

  // Forgets `key`. Returns whether it was present.
  bool Erase(const Key& key) {
    auto it = index_.find(Hashed(key));
    if (it == index_.end()) return false;
    const uint32_t slot = *it;
    index_.erase(it);
    Release(slot);
    return true;
  }

  // Erases every entry for which `pred(const Key&, const GcraState&)` is true,
  // e.g. buckets of a policy removed by a reload. Returns how many.
  template <typename Pred>
  size_t EraseIf(Pred pred) {
    size_t erased = 0;
    for (uint32_t i = slab_[0].next; i != 0;) {
      const uint32_t next = slab_[i].next;
      if (pred(static_cast<const Key&>(slab_[i].key),
               static_cast<const GcraState&>(slab_[i].state))) {
        index_.erase(i);
        Release(i);
        ++erased;
      }
      i = next;
    }
    return erased;
  }

  // Calls `f(const Key&, GcraState&)` for every entry, least recently used
  // first. Does not change recency. `f` must not modify the table.
  template <typename F>
  void ForEach(F f) {
    for (uint32_t i = slab_[0].next; i != 0; i = slab_[i].next) {
      f(static_cast<const Key&>(slab_[i].key), slab_[i].state);
    }
  }
  template <typename F>
  void ForEach(F f) const {
    for (uint32_t i = slab_[0].next; i != 0; i = slab_[i].next) {
      f(static_cast<const Key&>(slab_[i].key),
        static_cast<const GcraState&>(slab_[i].state));
    }
  }

  // The key that the next admission into a full table would evict; nullptr
  // when empty.
  const Key* LeastRecentlyUsed() const {
    return size_ == 0 ? nullptr : &slab_[slab_[0].next].key;
  }
  // The most recently found or admitted key; nullptr when empty.
  const Key* MostRecentlyUsed() const {
    return size_ == 0 ? nullptr : &slab_[slab_[0].prev].key;
  }

  // Forgets every entry. Keeps all memory (and the counters).
  void Clear() {
    // Erase one by one: abseil's clear() frees large backing arrays, and we
    // promised never to allocate again.
    for (uint32_t i = slab_[0].next; i != 0;) {
      const uint32_t next = slab_[i].next;
      index_.erase(i);
      i = next;
    }
    slab_[0].prev = 0;
    slab_[0].next = 0;
    size_ = 0;
    never_used_ = 1;
    free_list_ = 0;
  }

  // --- Counters
  // ---------------------------------------------------------------

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Keys admitted (new entries) since construction.
  uint64_t admissions() const { return admissions_; }
  // Entries evicted to make room for an admission (not counting `Erase`).
  uint64_t evictions() const { return evictions_; }
  // `Find`/`FindOrAdmit` calls that found their key.
  uint64_t hits() const { return hits_; }

  // Bytes held by the table (slab plus index arrays), from capacity
  // arithmetic; constant for the table's life.
  size_t memory_bytes() const {
    constexpr size_t kGroupWidth = 16;  // Cloned control bytes at the end.
    return (capacity_ + 1) * sizeof(Entry) +
           index_.capacity() * (sizeof(uint32_t) + 1) + kGroupWidth + 1;
  }

  // Size of one slab record, for docs and benches.
  static constexpr size_t entry_bytes() { return sizeof(Entry); }

 private:
  struct RawEntry {
    GcraState state;
    uint32_t prev;
    uint32_t next;
    Key key;
  };
  // Records of exactly 64 (or 32) bytes are aligned to their size so that each
  // sits in one cache line; others keep their natural alignment.
  static constexpr size_t kEntryAlign =
      (std::has_single_bit(sizeof(RawEntry)) && sizeof(RawEntry) <= 64)
          ? sizeof(RawEntry)
          : alignof(RawEntry);
  struct alignas(kEntryAlign) Entry {
    GcraState state;
    uint32_t prev = 0;
    uint32_t next = 0;
    Key key{};
  };

  // Heterogeneous lookups pass a `HashedKey` (a key not, or not yet, in the
  // slab) whose hash was computed once by the caller.
  struct IndexHash {
    using is_transparent = void;
    const Entry* slab;
    [[no_unique_address]] Hash hash;
    size_t operator()(uint32_t slot) const { return hash(slab[slot].key); }
    size_t operator()(HashedKey ref) const { return ref.hash; }
  };
  struct IndexEq {
    using is_transparent = void;
    const Entry* slab;
    bool operator()(uint32_t a, uint32_t b) const {
      return a == b || slab[a].key == slab[b].key;
    }
    bool operator()(HashedKey a, uint32_t b) const {
      return *a.key == slab[b].key;
    }
    bool operator()(uint32_t a, HashedKey b) const {
      return slab[a].key == *b.key;
    }
  };

  static size_t ClampCapacity(size_t capacity) {
    assert(capacity >= 1 && capacity <= kMaxCapacity);
    if (capacity < 1) return 1;
    if (capacity > kMaxCapacity) return kMaxCapacity;
    return capacity;
  }

  // Index capacity (rounded up by abseil to 2^k - 1): at least 32/25 of the
  // table's capacity, so a full table is within the rehash-in-place bound and
  // abseil's growth budget (7/8 of capacity) exceeds the table's capacity;
  // at least 32, so the index is larger than one probe group.
  static size_t IndexBucketCount(size_t capacity) {
    const size_t wanted = capacity + (capacity * 7 + 24) / 25 + 1;
    return wanted < 32 ? 32 : wanted;
  }

  void PrefetchForWrite(uint32_t i) const {
    __builtin_prefetch(&slab_[i], /*rw=*/1);
  }

  void Unlink(uint32_t i) {
    Entry& e = slab_[i];
    slab_[e.prev].next = e.next;
    slab_[e.next].prev = e.prev;
  }

  void LinkAtTail(uint32_t i) {
    Entry& e = slab_[i];
    const uint32_t tail = slab_[0].prev;
    e.prev = tail;
    e.next = 0;
    slab_[tail].next = i;
    slab_[0].prev = i;
  }

  void MoveToTail(uint32_t i) {
    if (slab_[0].prev == i) return;  // Already most recent.
    Unlink(i);
    LinkAtTail(i);
  }

  // Admits `key` (known to be absent) and returns its slot.
  uint32_t Admit(const Key& key) {
    uint32_t slot;
    if (size_ == capacity_) {
      // Evict the least recently used entry and reuse its record.
      slot = slab_[0].next;
      index_.erase(slot);  // Hashes the old key: erase before overwriting.
      Unlink(slot);
      ++evictions_;
    } else if (free_list_ != 0) {
      slot = free_list_;
      free_list_ = slab_[slot].next;
      ++size_;
    } else {
      slot = static_cast<uint32_t>(never_used_++);
      ++size_;
    }
    Entry& e = slab_[slot];
    e.key = key;
    e.state = GcraState{};
    LinkAtTail(slot);
    index_.insert(slot);
    ++admissions_;
    return slot;
  }

  // Returns an erased entry's record (already out of the index) to the free
  // list.
  void Release(uint32_t slot) {
    Unlink(slot);
    slab_[slot].next = free_list_;
    free_list_ = slot;
    --size_;
  }

  using Index = absl::flat_hash_set<uint32_t, IndexHash, IndexEq,
                                    HugePageAllocator<uint32_t>>;

  // What every request reads or writes comes first, so that a check touches
  // as few of the table's lines as it can (the hash's seed lives in the
  // index's hasher, once). ShardedLimiter keeps hundreds of tables, and a
  // check finds their headers cold.
  size_t size_ = 0;
  const size_t capacity_;
  uint64_t hits_ = 0;
  HugeArray<Entry> slab_;
  Index index_;
  // Records [never_used_, capacity_] have never held a key.
  size_t never_used_ = 1;
  // Singly linked (through `next`) list of erased records; 0 = empty.
  uint32_t free_list_ = 0;
  uint64_t admissions_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_BUCKET_TABLE_H_
