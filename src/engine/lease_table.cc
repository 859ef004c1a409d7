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
         heap_.capacity() * sizeof(HeapEntry) +
         group_index_.capacity() * (sizeof(uint32_t) + 1);
}

LeaseTable::Group LeaseTable::Find(HashedGroup group, int64_t now_ns) const {
  auto it = group_index_.find(group);
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

int64_t LeaseTable::NthExpiry(HashedGroup group, int64_t now_ns,
                              size_t n) const {
  assert(n >= 1 && n <= kMaxRanked);
  auto it = group_index_.find(group);
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
  while (!heap_.empty() && heap_[0].expiry <= now_ns) {
    ++expirations_;
    End(heap_[0].lease);
  }
}

LeaseId LeaseTable::Acquire(HashedGroup group, int64_t expiry_ns) {
  ++acquisitions_;
  if (free_lease_ == 0) {
    // Full: the lease nearest its end goes first.
    ++evictions_;
    End(heap_[0].lease);
  }
  uint32_t gi;
  auto it = group_index_.find(group);
  if (it != group_index_.end()) {
    gi = *it;
    if (groups_[gi].count == 0) UnlinkEmpty(gi);
  } else {
    gi = TakeGroupRecord();
    GroupRecord& g = groups_[gi];
    g.key = *group.key;
    g.hash = group.hash;
    g.head = 0;
    g.count = 0;
    g.indexed = true;
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
  heap_.push_back(HeapEntry{expiry_ns, li});
  HeapUp(l.heap_pos);
  return MakeId(li, l.generation);
}

uint32_t LeaseTable::TakeGroupRecord() {
  if (free_group_ == 0) {
    // Every record is indexed. The caller has a free lease, so at most
    // capacity - 1 leases are held and some group is empty.
    assert(empty_head_ != 0);
    DropEmptyGroup(empty_head_);
  }
  const uint32_t gi = free_group_;
  free_group_ = groups_[gi].head;
  return gi;
}

void LeaseTable::UnlinkEmpty(uint32_t g) {
  GroupRecord& r = groups_[g];
  if (r.empty_prev != 0) {
    groups_[r.empty_prev].empty_next = r.empty_next;
  } else {
    empty_head_ = r.empty_next;
  }
  if (r.empty_next != 0) {
    groups_[r.empty_next].empty_prev = r.empty_prev;
  } else {
    empty_tail_ = r.empty_prev;
  }
  r.empty_prev = 0;
  r.empty_next = 0;
}

void LeaseTable::DropEmptyGroup(uint32_t g) {
  UnlinkEmpty(g);
  group_index_.erase(HashedGroup{&groups_[g].key, groups_[g].hash});
  GroupRecord& r = groups_[g];
  r.indexed = false;
  r.head = free_group_;
  free_group_ = g;
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
    // Kept, most recently emptied last.
    g.empty_prev = empty_tail_;
    g.empty_next = 0;
    if (empty_tail_ != 0) {
      groups_[empty_tail_].empty_next = l.group;
    } else {
      empty_head_ = l.group;
    }
    empty_tail_ = l.group;
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

// Both sifts move a hole rather than swap: each level moves one entry and
// writes one heap position, and the sifted entry is written once.
void LeaseTable::HeapUp(size_t pos) {
  const HeapEntry moving = heap_[pos];
  while (pos > 0) {
    const size_t parent = (pos - 1) / 2;
    if (heap_[parent].expiry <= moving.expiry) break;
    Place(pos, heap_[parent]);
    pos = parent;
  }
  Place(pos, moving);
}

void LeaseTable::HeapDown(size_t pos) {
  const size_t n = heap_.size();
  const HeapEntry moving = heap_[pos];
  while (true) {
    const size_t left = 2 * pos + 1;
    if (left >= n) break;
    size_t least = left;
    if (left + 1 < n && heap_[left + 1].expiry < heap_[left].expiry) {
      least = left + 1;
    }
    if (moving.expiry <= heap_[least].expiry) break;
    Place(pos, heap_[least]);
    pos = least;
  }
  Place(pos, moving);
}

void LeaseTable::HeapRemove(size_t pos) {
  const size_t last = heap_.size() - 1;
  if (pos != last) {
    const HeapEntry moved = heap_[last];
    heap_.pop_back();
    Place(pos, moved);
    if (pos > 0 && heap_[(pos - 1) / 2].expiry > moved.expiry) {
      HeapUp(pos);
    } else {
      HeapDown(pos);
    }
  } else {
    heap_.pop_back();
  }
}

}  // namespace mxlimit::internal
