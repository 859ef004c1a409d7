// The bucket tables' big-array memory: large blocks are huge-page aligned,
// small ones are ordinary, and arrays are constructed and destroyed whole.

#include "src/engine/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace mxlimit::internal {
namespace {

TEST(HugePageAllocatorTest, LargeBlocksAreRoundedToWholeAlignedHugePages) {
  EXPECT_EQ(HugeBlockBytes(kHugePageBytes - 1), 0u);
  EXPECT_EQ(HugeBlockBytes(kHugePageBytes), kHugePageBytes);
  EXPECT_EQ(HugeBlockBytes(kHugePageBytes + 1), 2 * kHugePageBytes);

  HugePageAllocator<uint64_t> alloc;
  const size_t n = 3 * kHugePageBytes / sizeof(uint64_t) + 5;
  uint64_t* p = alloc.allocate(n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  p[0] = 1;
  p[n - 1] = 2;  // the whole block is usable
  EXPECT_EQ(p[0] + p[n - 1], 3u);
  alloc.deallocate(p, n);
}

TEST(HugePageAllocatorTest, SmallBlocksWork) {
  HugePageAllocator<uint32_t> alloc;
  uint32_t* p = alloc.allocate(10);
  for (uint32_t i = 0; i < 10; ++i) p[i] = i;
  EXPECT_EQ(p[9], 9u);
  alloc.deallocate(p, 10);
}

struct Counted {
  static inline int live = 0;
  int value = 7;
  Counted() { ++live; }
  ~Counted() { --live; }
};

TEST(HugePageAllocatorTest, ArraysAreConstructedAndDestroyedWhole) {
  for (size_t n : {size_t{3}, kHugePageBytes / sizeof(Counted) + 1}) {
    {
      HugeArray<Counted> a = MakeHugeArray<Counted>(n);
      EXPECT_EQ(Counted::live, static_cast<int>(n));
      EXPECT_EQ(a[0].value, 7);
      EXPECT_EQ(a[n - 1].value, 7);
    }
    EXPECT_EQ(Counted::live, 0);
  }
}

TEST(HugePageAllocatorTest, AbseilContainersRebindIt) {
  absl::flat_hash_set<uint32_t, absl::Hash<uint32_t>, std::equal_to<uint32_t>,
                      HugePageAllocator<uint32_t>>
      set;
  set.reserve(1 << 20);  // a multi-megabyte backing array
  for (uint32_t i = 0; i < 100'000; ++i) set.insert(i * 7);
  EXPECT_EQ(set.size(), 100'000u);
  EXPECT_TRUE(set.contains(7 * 99'999));
  EXPECT_FALSE(set.contains(8));
}

}  // namespace
}  // namespace mxlimit::internal
