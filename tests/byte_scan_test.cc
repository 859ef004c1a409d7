// The wide special-byte scanners agree with the byte-at-a-time definition.

#include "mxlimit/internal/byte_scan.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace mxlimit::internal {
namespace {

uint32_t Reference(const char* p, size_t width) {
  uint32_t mask = 0;
  for (size_t i = 0; i < width; ++i) {
    if (IsSpecialTargetByte(static_cast<unsigned char>(p[i]))) mask |= 1u << i;
  }
  return mask;
}

TEST(ByteScanTest, EveryByteValueAtEveryPosition) {
  for (int c = 0; c < 256; ++c) {
    for (size_t pos = 0; pos < 16; ++pos) {
      std::string bytes(16, 'a');
      bytes[pos] = static_cast<char>(c);
      const uint32_t want = Reference(bytes.data(), 16);
      EXPECT_EQ(SpecialBytes8(bytes.data()), want & 0xFF) << c << "@" << pos;
      EXPECT_EQ(SpecialBytes8(bytes.data() + 8), want >> 8) << c << "@" << pos;
#if defined(__SSE2__)
      EXPECT_EQ(SpecialBytes16(bytes.data()), want) << c << "@" << pos;
#endif
    }
  }
}

TEST(ByteScanTest, NeighboursDoNotLeakIntoEachOther) {
  // Borrow and carry tricks can mark a byte next to a special one; the
  // scanners must not. Pairs of every interesting value side by side.
  const unsigned char interesting[] = {0x00, 0x01, 0x1F, 0x20, 0x21, 0x22,
                                       '#',  '/',  '?',  0x7E, 0x7F, 0x80,
                                       0x81, 0xA0, 0xAF, 0xBF, 0xFF};
  for (unsigned char a : interesting) {
    for (unsigned char b : interesting) {
      std::string bytes(16, 'x');
      for (size_t i = 0; i < 16; ++i)
        bytes[i] = static_cast<char>(i % 2 ? b : a);
      const uint32_t want = Reference(bytes.data(), 16);
      EXPECT_EQ(SpecialBytes8(bytes.data()), want & 0xFF);
#if defined(__SSE2__)
      EXPECT_EQ(SpecialBytes16(bytes.data()), want);
#endif
    }
  }
}

TEST(ByteScanTest, RandomWords) {
  std::mt19937_64 rng(11);
  std::string bytes(16, '\0');
  for (int round = 0; round < 200'000; ++round) {
    for (char& c : bytes) c = static_cast<char>(rng());
    const uint32_t want = Reference(bytes.data(), 16);
    ASSERT_EQ(SpecialBytes8(bytes.data()), want & 0xFF);
#if defined(__SSE2__)
    ASSERT_EQ(SpecialBytes16(bytes.data()), want);
#endif
    ASSERT_EQ(SpecialMask(bytes.data()),
              want & ((uint64_t{1} << kSpecialMaskWidth) - 1));
  }
}

}  // namespace
}  // namespace mxlimit::internal
