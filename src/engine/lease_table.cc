#include "src/engine/lease_table.h"

#include <array>
#include <cassert>
#include <utility>

namespace mxlimit::internal {
namespace {

constexpr LeaseId MakeId(uint32_t index, uint32_t generation) {
  return static_cast<uint64_t>(generation) << 32 | index;
}

// The index size that keeps `n` entries at or below 25/32 of its capacity
// (see bucket_table.h: abseil then rehashes tombstones in place).
size_t IndexReserve(size_t n) { return n + n / 4 + 16; }

}  // namespace

LeaseTable::LeaseTable(size_t capacity)
    : capacity_(capacity),
      leases_(capacity + 1),
      groups_(capacity + 1),
      group_index_(0, GroupHash{&groups_}, GroupEq{&groups_}) {
  assert(capacity >= 1 && capacity <= kMaxCapacity);
  group_index_.reserve(IndexReserve(capacity));
  heap_.reserve(capacity);
  // Free lists in index order.
  for (size_t i = 1; i <= capacity_; ++i) {
    leases_[i].next = i < capacity_ ? static_cast<uint32_t>(i + 1) : 0;
    groups_[i].head = i < capacity_ ? static_cast<uint32_t>(i + 1) : 0;
  }
  free_lease_ = 1;
  free_lease_tail_ = static_cast<uint32_t>(capacity_);
  free_group_ = 1;
}

void LeaseTable::Clear() {
  // One by one: abseil's clear() would free the index's reservation, and
  // the request path would allocate to grow it again.
  EraseIf([](const LeaseGroupKey&) { return true; });
}

size_t LeaseTable::memory_bytes() const {
  return leases_.capacity() * sizeof(Lease) +
         groups_.capacity() * sizeof(GroupRecord) +
         heap_.capacity() * sizeof(uint32_t) +
         group_index_.capacity() * (sizeof(uint32_t) + 1);
}

LeaseTable::Group LeaseTable::Find(const LeaseGroupKey& key,
                                   int64_t now_ns) const {
  auto it = group_index_.find(key);
  if (it == group_index_.end()) return {};
  Group out;
  for (uint32_t i = groups_[*it].head; i != 0; i = leases_[i].next) {
    const int64_t expiry = leases_[i].expiry;
    if (expiry <= now_ns) continue;
    ++out.in_flight;
    if (out.earliest_expiry_ns == 0 || expiry < out.earliest_expiry_ns) {
      out.earliest_expiry_ns = expiry;
    }
  }
  return out;
}

int64_t LeaseTable::NthExpiry(const LeaseGroupKey& key, int64_t now_ns,
                              size_t n) const {
  assert(n >= 1 && n <= kMaxRanked);
  auto it = group_index_.find(key);
  if (it == group_index_.end()) return 0;
  // The n smallest so far, sorted: a group holds few leases.
  std::array<int64_t, kMaxRanked> least;
  size_t held = 0;
  for (uint32_t i = groups_[*it].head; i != 0; i = leases_[i].next) {
    const int64_t expiry = leases_[i].expiry;
    if (expiry <= now_ns) continue;
    if (held == n && expiry >= least[n - 1]) continue;
    size_t at = held < n ? held++ : n - 1;
    while (at > 0 && least[at - 1] > expiry) {
      least[at] = least[at - 1];
      --at;
    }
    least[at] = expiry;
  }
  return held == n ? least[n - 1] : 0;
}

void LeaseTable::Expire(int64_t now_ns) {
  while (!heap_.empty() && leases_[heap_[0]].expiry <= now_ns) {
    ++expirations_;
    End(heap_[0]);
  }
}

LeaseId LeaseTable::Acquire(const LeaseGroupKey& key, int64_t expiry_ns) {
  ++acquisitions_;
  if (free_lease_ == 0) {
    // Full: the lease nearest its end goes first.
    ++evictions_;
    End(heap_[0]);
  }
  uint32_t gi;
  auto it = group_index_.find(key);
  if (it != group_index_.end()) {
    gi = *it;
  } else {
    // Never empty here: a group holds at least one lease, and a lease is
    // free.
    gi = free_group_;
    assert(gi != 0);
    free_group_ = groups_[gi].head;
    groups_[gi] = GroupRecord{key, 0, 0};
    group_index_.insert(gi);
  }
  const uint32_t li = free_lease_;
  Lease& l = leases_[li];
  free_lease_ = l.next;
  if (free_lease_ == 0) free_lease_tail_ = 0;
  GroupRecord& g = groups_[gi];
  l.expiry = expiry_ns;
  l.group = gi;
  l.prev = 0;
  l.next = g.head;
  if (g.head != 0) leases_[g.head].prev = li;
  g.head = li;
  ++g.count;
  l.heap_pos = static_cast<uint32_t>(heap_.size());
  heap_.push_back(li);
  HeapUp(l.heap_pos);
  return MakeId(li, l.generation);
}

bool LeaseTable::Release(LeaseId id) {
  const auto index = static_cast<uint32_t>(id);
  const auto generation = static_cast<uint32_t>(id >> 32);
  if (index == 0 || index > capacity_) return false;
  const Lease& l = leases_[index];
  if (l.generation != generation || l.group == 0) return false;
  ++releases_;
  End(index);
  return true;
}

void LeaseTable::End(uint32_t i) {
  Lease& l = leases_[i];
  HeapRemove(l.heap_pos);
  GroupRecord& g = groups_[l.group];
  if (l.prev != 0) {
    leases_[l.prev].next = l.next;
  } else {
    g.head = l.next;
  }
  if (l.next != 0) leases_[l.next].prev = l.prev;
  if (--g.count == 0) {
    group_index_.erase(l.group);
    g.head = free_group_;
    free_group_ = l.group;
  }
  ++l.generation;
  l.group = 0;
  l.next = 0;
  if (free_lease_tail_ != 0) {
    leases_[free_lease_tail_].next = i;
  } else {
    free_lease_ = i;
  }
  free_lease_tail_ = i;
}

void LeaseTable::HeapSwap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  leases_[heap_[a]].heap_pos = static_cast<uint32_t>(a);
  leases_[heap_[b]].heap_pos = static_cast<uint32_t>(b);
}

void LeaseTable::HeapUp(size_t pos) {
  while (pos > 0) {
    const size_t parent = (pos - 1) / 2;
    if (leases_[heap_[parent]].expiry <= leases_[heap_[pos]].expiry) break;
    HeapSwap(pos, parent);
    pos = parent;
  }
}

void LeaseTable::HeapDown(size_t pos) {
  const size_t n = heap_.size();
  while (true) {
    const size_t left = 2 * pos + 1;
    if (left >= n) break;
    size_t least = left;
    if (left + 1 < n &&
        leases_[heap_[left + 1]].expiry < leases_[heap_[left]].expiry) {
      least = left + 1;
    }
    if (leases_[heap_[pos]].expiry <= leases_[heap_[least]].expiry) break;
    HeapSwap(pos, least);
    pos = least;
  }
}

void LeaseTable::HeapRemove(size_t pos) {
  const size_t last = heap_.size() - 1;
  if (pos != last) {
    HeapSwap(pos, last);
    heap_.pop_back();
    HeapUp(pos);
    HeapDown(pos);
  } else {
    heap_.pop_back();
  }
}

}  // namespace mxlimit::internal
