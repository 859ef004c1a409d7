// -----------------------------------------------------------------------------
// File: internal/mutex.h
// -----------------------------------------------------------------------------
//
// `internal::Mutex` is the lock behind every shard of `ShardedLimiter` (and
// the shared store's queues), and the two scoped locks `ShardedLimiter`
// takes: one shard, or two shards in a fixed order.
//
// Why not `absl::Mutex`: Debian's libabsl is built without NDEBUG, so every
// `absl::Mutex::Lock` runs abseil's debug-mode deadlock detector, which takes
// one process-wide spin lock and updates a global lock graph. Every check on
// every thread then writes the same cache lines, whichever shard it locks,
// and a second thread made the sharded limiter slower in total
// (bench/sharded_limiter_bench, docs/embedding.md). A pthread mutex keeps
// all of a lock's state in the lock. glibc's adaptive kind spins briefly
// before sleeping, which suits critical sections as short as a check.
//
// ThreadSanitizer intercepts pthread mutexes itself (lock order included),
// so no annotation is needed, unlike an `absl::Mutex` from a libabsl not
// built with -fsanitize=thread.
//
// All three types carry Clang thread-safety annotations, so fields marked
// `ABSL_GUARDED_BY(mu)` are checked by `clang++ -Wthread-safety`.

#ifndef MXLIMIT_INTERNAL_MUTEX_H_
#define MXLIMIT_INTERNAL_MUTEX_H_

#include <pthread.h>

#include "absl/base/thread_annotations.h"

namespace mxlimit::internal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  ~Mutex() { pthread_mutex_destroy(&mu_); }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // pthread_mutex_lock fails only for error-checking or robust mutexes, and
  // for a mutex that was never initialized; this one is neither.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { pthread_mutex_lock(&mu_); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { pthread_mutex_unlock(&mu_); }

 private:
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutex_t mu_ = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
#else
  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
#endif
};

// Holds one mutex for the life of the scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu.Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds two different mutexes for the life of the scope. Every caller that
// holds two locks of one family must take them in one global order, or two
// threads can each hold one and wait for the other forever; `a_first` says
// which of the two comes first in that order (for shards: the lower index).
class ABSL_SCOPED_LOCKABLE MutexPairLock {
 public:
  // REQUIRES: &a != &b.
  MutexPairLock(Mutex& a, Mutex& b, bool a_first)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(a, b)
      : a_(a), b_(b) {
    if (a_first) {
      a.Lock();
      b.Lock();
    } else {
      b.Lock();
      a.Lock();
    }
  }
  ~MutexPairLock() ABSL_UNLOCK_FUNCTION() {
    a_.Unlock();
    b_.Unlock();
  }
  MutexPairLock(const MutexPairLock&) = delete;
  MutexPairLock& operator=(const MutexPairLock&) = delete;

 private:
  Mutex& a_;
  Mutex& b_;
};

// `MutexPairLock`, or a plain lock when `a` and `b` are the same mutex: for
// a request whose two scopes may live in one shard or in two.
class ABSL_SCOPED_LOCKABLE MutexOneOrTwoLock {
 public:
  MutexOneOrTwoLock(Mutex& a, Mutex& b, bool a_first)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(a, b)
      : a_(a), b_(&a == &b ? nullptr : &b) {
    if (b_ == nullptr) {
      a.Lock();
    } else if (a_first) {
      a.Lock();
      b.Lock();
    } else {
      b.Lock();
      a.Lock();
    }
  }
  ~MutexOneOrTwoLock() ABSL_UNLOCK_FUNCTION() {
    a_.Unlock();
    if (b_ != nullptr) b_->Unlock();
  }
  MutexOneOrTwoLock(const MutexOneOrTwoLock&) = delete;
  MutexOneOrTwoLock& operator=(const MutexOneOrTwoLock&) = delete;

 private:
  Mutex& a_;
  Mutex* b_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_MUTEX_H_
