// -----------------------------------------------------------------------------
// File: tests/testing/counting_new.h
// -----------------------------------------------------------------------------
//
// Replaces the global operator new/delete with versions that count every
// allocation, so a test can prove a code path allocates nothing:
//
//   const long before = mxlimit::testing::AllocationCount();
//   ... the code under test ...
//   EXPECT_EQ(mxlimit::testing::AllocationCount() - before, 0);
//
// REQUIRES: included by exactly one translation unit of a test binary (the
// replacement operators are ordinary definitions). Such a binary should hold
// only allocation tests, so the hook does not slow or disturb other tests.

#ifndef MXLIMIT_TESTS_TESTING_COUNTING_NEW_H_
#define MXLIMIT_TESTS_TESTING_COUNTING_NEW_H_

#include <atomic>
#include <cstdlib>
#include <new>

namespace mxlimit::testing {

inline std::atomic<long> allocation_count{0};

// Allocations made through operator new so far, in all threads.
inline long AllocationCount() {
  return allocation_count.load(std::memory_order_relaxed);
}

}  // namespace mxlimit::testing

// Out of line, so the compiler does not pair an inlined malloc() with an
// inlined free() and warn about mismatched allocation functions.
[[gnu::noinline]] void* operator new(std::size_t size) {
  mxlimit::testing::allocation_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t size) {
  return ::operator new(size);
}
[[gnu::noinline]] void* operator new(std::size_t size,
                                     const std::nothrow_t&) noexcept {
  mxlimit::testing::allocation_count.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
[[gnu::noinline]] void* operator new[](std::size_t size,
                                       const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

// The over-aligned forms too: the bucket tables' 64-byte records and their
// huge-page blocks come through them.
[[gnu::noinline]] void* operator new(std::size_t size, std::align_val_t al) {
  mxlimit::testing::allocation_count.fetch_add(1, std::memory_order_relaxed);
  const auto align = static_cast<std::size_t>(al);
  const std::size_t rounded = (size + align - 1) / align * align;
  if (void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded)) {
    return p;
  }
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t size, std::align_val_t al) {
  return ::operator new(size, al);
}
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t,
                                       std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p, std::size_t,
                                         std::align_val_t) noexcept {
  std::free(p);
}

#endif  // MXLIMIT_TESTS_TESTING_COUNTING_NEW_H_
