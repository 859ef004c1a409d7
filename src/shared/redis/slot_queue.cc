#include "src/shared/redis/slot_queue.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cassert>
#include <new>

namespace mxlimit::internal {

namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futexes wait on the atomic's own word");

uint32_t* FutexWord(std::atomic<uint32_t>& a) {
  return reinterpret_cast<uint32_t*>(&a);
}

// Sleeps while *word == expected, until woken or `deadline`: an absolute
// CLOCK_MONOTONIC time (FUTEX_WAIT_BITSET takes absolute times, so spurious
// wake-ups and retries never stretch the wait). libstdc++'s steady_clock is
// CLOCK_MONOTONIC.
void FutexWaitUntil(std::atomic<uint32_t>& word, uint32_t expected,
                    std::chrono::steady_clock::time_point deadline) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      deadline.time_since_epoch())
                      .count();
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  syscall(SYS_futex, FutexWord(word), FUTEX_WAIT_BITSET_PRIVATE, expected, &ts,
          nullptr, FUTEX_BITSET_MATCH_ANY);
}

void FutexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, FutexWord(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

SlotQueue::SlotQueue(size_t capacity)
    : capacity_(capacity),
      // operator new creates the SlotBody objects implicitly (they are
      // implicit-lifetime aggregates) without writing to the pages.
      bodies_(
          static_cast<SlotBody*>(::operator new(capacity * sizeof(SlotBody)))),
      states_(new std::atomic<uint32_t>[capacity]) {
  assert(capacity > 0 && capacity < kNone);
  free_.reserve(capacity);
  for (size_t i = capacity; i > 0; --i) {
    states_[i - 1].store(kFree, std::memory_order_relaxed);
    free_.push_back(static_cast<uint32_t>(i - 1));
  }
  submitted_.resize(capacity);
}

uint32_t SlotQueue::Acquire() {
  MutexLock lock(mu_);
  if (free_.empty()) return kNone;
  const uint32_t slot = free_.back();
  free_.pop_back();
  in_use_.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

bool SlotQueue::Submit(uint32_t slot, bool posted) {
  states_[slot].store(posted ? kPosted : kWaiting, std::memory_order_relaxed);
  {
    MutexLock lock(mu_);
    // Never overflows: a slot is in the ring at most once.
    submitted_[(submitted_head_ + submitted_count_) % capacity_] = slot;
    ++submitted_count_;
  }
  // Only the first submission after the I/O thread emptied the ring pays
  // for a wake-up; the rest find it awake.
  return !wake_pending_.exchange(true, std::memory_order_acq_rel);
}

bool SlotQueue::Wait(uint32_t slot,
                     std::chrono::steady_clock::time_point deadline) {
  std::atomic<uint32_t>& state = states_[slot];
  for (;;) {
    if (state.load(std::memory_order_acquire) == kDone) return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      uint32_t expected = kWaiting;
      if (state.compare_exchange_strong(expected, kAbandoned,
                                        std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        return false;
      }
      return true;  // The reply won the race: it is there.
    }
    FutexWaitUntil(state, kWaiting, deadline);
  }
}

void SlotQueue::Release(uint32_t slot) {
  states_[slot].store(kFree, std::memory_order_relaxed);
  MutexLock lock(mu_);
  free_.push_back(slot);  // Reserved at capacity: never allocates.
  in_use_.fetch_sub(1, std::memory_order_relaxed);
}

size_t SlotQueue::Take(uint32_t* out, size_t max) {
  MutexLock lock(mu_);
  size_t n = 0;
  while (n < max && submitted_count_ > 0) {
    out[n++] = submitted_[submitted_head_];
    submitted_head_ = (submitted_head_ + 1) % capacity_;
    --submitted_count_;
  }
  // Cleared under the lock and only when empty: a Submit after this sees
  // false and wakes the I/O thread; one before it was taken here.
  if (submitted_count_ == 0) {
    wake_pending_.store(false, std::memory_order_release);
  }
  return n;
}

SlotQueue::Completion SlotQueue::Complete(uint32_t slot) {
  std::atomic<uint32_t>& state = states_[slot];
  if (state.load(std::memory_order_relaxed) == kPosted) {
    Release(slot);
    return Completion::kPostedDone;
  }
  uint32_t expected = kWaiting;
  if (state.compare_exchange_strong(expected, kDone, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
    // At most one waiter; a stale wake-up of a slot reused meanwhile is a
    // harmless spurious one.
    FutexWakeAll(state);
    return Completion::kDelivered;
  }
  assert(expected == kAbandoned);
  return Completion::kAbandoned;
}

}  // namespace mxlimit::internal
