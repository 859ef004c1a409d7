// -----------------------------------------------------------------------------
// File: internal/mutex.h
// -----------------------------------------------------------------------------
//
// `internal::Mutex` is an `absl::Mutex` that ThreadSanitizer can see, and the
// two scoped locks `ShardedLimiter` takes: one shard, or two shards in a fixed
// order.
//
// Why a wrapper: abseil annotates its mutex for ThreadSanitizer only when the
// abseil library itself is built with -fsanitize=thread. Debian's libabsl is
// not, so under TSan every access guarded by a plain `absl::Mutex` looks like a
// data race. When this header is compiled with ThreadSanitizer, the wrapper
// reports each lock and unlock through TSan's public mutex interface
// (<sanitizer/tsan_interface.h>), which also arms TSan's lock-order
// (potential deadlock) detector. Without TSan it is exactly an `absl::Mutex`.
//
// All three types carry Clang thread-safety annotations, so fields marked
// `ABSL_GUARDED_BY(mu)` are checked by `clang++ -Wthread-safety`.

#ifndef MXLIMIT_INTERNAL_MUTEX_H_
#define MXLIMIT_INTERNAL_MUTEX_H_

#include "absl/base/config.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace mxlimit::internal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_mutex_create(this, __tsan_mutex_not_static);
#endif
  }
  ~Mutex() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_mutex_destroy(this, 0);
#endif
  }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_mutex_pre_lock(this, 0);
#endif
    mu_.Lock();
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_mutex_post_lock(this, 0, 0);
#endif
  }

  void Unlock() ABSL_UNLOCK_FUNCTION() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_mutex_pre_unlock(this, 0);
#endif
    mu_.Unlock();
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_mutex_post_unlock(this, 0);
#endif
  }

 private:
  absl::Mutex mu_;
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
