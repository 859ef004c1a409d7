// The bounded queue between the threads that call a `RedisStore` and its I/O
// thread: `capacity` (store.max_in_flight) slots allocated once, each big
// enough for the op, its RESP command and its result, so that an op costs
// no allocation on either side.
//
// A slot's life: Acquire (caller) -> fill body -> Submit -> the I/O thread
// takes it, sends it, and Completes it with the reply -> the caller, woken,
// reads the result and Releases it. A caller whose deadline passes first
// Abandons the slot instead; the I/O thread then owns it and releases it
// when the reply comes (a late reply). A posted op has no caller waiting:
// the I/O thread releases it on completion.
//
// Callers sleep on their slot's state word with a futex and an absolute
// deadline, so a wait never outlasts its deadline by more than the
// scheduler's wake-up latency.
//
// Thread safety: Acquire, Submit, Wait, Release from any thread; Take and
// Complete from the I/O thread only.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_SLOT_QUEUE_H_
#define MXLIMIT_SHARED_REDIS_SLOT_QUEUE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "mxlimit/internal/mutex.h"
#include "src/shared/redis/mxl1_call.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

// `ASKING` as RESP.
inline constexpr std::string_view kAskingCommand = "*1\r\n$6\r\nASKING\r\n";
inline constexpr size_t kAskingBytes = kAskingCommand.size();

struct SlotBody {
  StoreOp op;
  StoreResult result;
  // The EVALSHA's bytes, command[0, command_size).
  uint32_t command_size = 0;
  // Sent again once already after NOSCRIPT.
  bool resent = false;
  // Redis Cluster: `command` starts with ASKING (an ASK redirect being
  // followed), whose reply comes first and is skipped.
  bool asking = false;
  bool awaiting_asking = false;
  // Redis Cluster: the text of a MOVED or ASK error reply, else empty.
  uint8_t redirect_size = 0;
  char redirect[128];
  char command[kAskingBytes + kMxl1CallMaxBytes];
};

class SlotQueue {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit SlotQueue(size_t capacity);
  SlotQueue(const SlotQueue&) = delete;
  SlotQueue& operator=(const SlotQueue&) = delete;

  // --- Callers ----------------------------------------------------------

  // A free slot, or kNone when all are in use (the queue is full).
  uint32_t Acquire();
  SlotBody& body(uint32_t slot) { return bodies_.get()[slot]; }
  // Hands a filled slot to the I/O thread. True when the I/O thread may be
  // asleep and must be woken (the first submission since it last looked).
  bool Submit(uint32_t slot, bool posted);
  // Waits until the I/O thread completes `slot` (true: body().result holds
  // the outcome; Release it) or `deadline` passes (false: the slot is
  // abandoned to the I/O thread; do not touch it again).
  bool Wait(uint32_t slot, std::chrono::steady_clock::time_point deadline);
  void Release(uint32_t slot);

  // --- The I/O thread ---------------------------------------------------

  // Moves up to `max` submitted slots, oldest first, into `out`.
  size_t Take(uint32_t* out, size_t max);
  enum class Completion : uint8_t {
    // A waiting caller was woken; it owns the slot again.
    kDelivered,
    // A posted op: the slot is released already.
    kPostedDone,
    // Its caller gave up: the I/O thread owns it, reports the late reply
    // and then Releases it.
    kAbandoned,
  };
  // REQUIRES: body(slot).result is written.
  Completion Complete(uint32_t slot);

  size_t capacity() const { return capacity_; }
  // Slots not free: queued, in flight, or waiting for their late reply.
  size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }

 private:
  enum State : uint32_t { kFree, kWaiting, kPosted, kDone, kAbandoned };

  struct FreeBodies {
    void operator()(SlotBody* p) const { ::operator delete(p); }
  };

  const size_t capacity_;
  // Raw storage: a slot's pages are touched only once it is first used, so
  // a large max_in_flight costs memory only up to the peak actually in use.
  std::unique_ptr<SlotBody, FreeBodies> bodies_;
  std::unique_ptr<std::atomic<uint32_t>[]> states_;
  std::atomic<size_t> in_use_{0};
  // Set by the Submit that must wake the I/O thread; cleared by Take.
  std::atomic<bool> wake_pending_{false};

  Mutex mu_;
  // Free slots, a stack: the most recently used (cache-warm) first.
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);
  // Submitted slots, a ring of `capacity_`.
  std::vector<uint32_t> submitted_ ABSL_GUARDED_BY(mu_);
  size_t submitted_head_ ABSL_GUARDED_BY(mu_) = 0;
  size_t submitted_count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_SLOT_QUEUE_H_
