// -----------------------------------------------------------------------------
// File: engine/huge_page_allocator.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// Memory for the bucket tables' big arrays (the slab and the hash index).
// With a million buckets per table those arrays span tens of megabytes and
// every check touches a few random places in them. On 4 KiB pages each such
// access also walks the page tables (the TLB covers only a few megabytes),
// which costs as much as the access itself. So blocks of 2 MiB or more are
// 2 MiB aligned and, on Linux, advised to use transparent huge pages
// (madvise(MADV_HUGEPAGE); the default THP mode "madvise" honours it, "never"
// ignores it, and nothing else changes). Smaller blocks come from operator
// new as usual.
//
// Memory use stays what the capacity fixes: a block is rounded up to whole
// 2 MiB pages at most, and it is allocated once, at table construction.

#ifndef MXLIMIT_ENGINE_HUGE_PAGE_ALLOCATOR_H_
#define MXLIMIT_ENGINE_HUGE_PAGE_ALLOCATOR_H_

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mxlimit::internal {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Rounded-up size of a block of `bytes` that gets huge-page treatment, or 0
// when the block is small enough for operator new.
constexpr size_t HugeBlockBytes(size_t bytes) {
  if (bytes < kHugePageBytes) return 0;
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

// Everything goes through operator new (over-aligned forms where needed),
// so allocation-counting tests see every block.
inline void* AllocateMaybeHuge(size_t bytes, size_t align) {
  const size_t huge = HugeBlockBytes(bytes);
  if (huge == 0) {
    if (align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator new(bytes);
    return ::operator new(bytes, std::align_val_t(align));
  }
  void* p = ::operator new(huge, std::align_val_t(kHugePageBytes));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: failure (an old kernel, THP disabled) changes nothing.
  (void)madvise(p, huge, MADV_HUGEPAGE);
#endif
  return p;
}

inline void DeallocateMaybeHuge(void* p, size_t bytes, size_t align) {
  const size_t huge = HugeBlockBytes(bytes);
  if (huge != 0) {
    ::operator delete(p, std::align_val_t(kHugePageBytes));
  } else if (align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
    ::operator delete(p);
  } else {
    ::operator delete(p, std::align_val_t(align));
  }
}

// A standard allocator over AllocateMaybeHuge, for abseil containers.
template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    return static_cast<T*>(AllocateMaybeHuge(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, size_t n) {
    DeallocateMaybeHuge(p, n * sizeof(T), alignof(T));
  }

  template <typename U>
  friend bool operator==(const HugePageAllocator&,
                         const HugePageAllocator<U>&) {
    return true;
  }
};

// A default-constructed array of `n` T in memory from AllocateMaybeHuge,
// destroyed and released by its deleter.
template <typename T>
struct HugeArrayDeleter {
  size_t n = 0;
  void operator()(T* p) const {
    for (size_t i = 0; i < n; ++i) p[i].~T();
    DeallocateMaybeHuge(p, n * sizeof(T), alignof(T));
  }
};

template <typename T>
using HugeArray = std::unique_ptr<T[], HugeArrayDeleter<T>>;

template <typename T>
HugeArray<T> MakeHugeArray(size_t n) {
  T* p = static_cast<T*>(AllocateMaybeHuge(n * sizeof(T), alignof(T)));
  for (size_t i = 0; i < n; ++i) new (p + i) T();
  return HugeArray<T>(p, HugeArrayDeleter<T>{n});
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_HUGE_PAGE_ALLOCATOR_H_
