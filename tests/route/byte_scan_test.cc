// The wide target scanners agree with the byte-at-a-time definition.

#include "src/route/byte_scan.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <string>

namespace mxlimit::internal {
namespace {

TargetMasks Reference(const char* p, size_t width) {
  TargetMasks m;
  for (size_t i = 0; i < width; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == '/') m.slash |= 1u << i;
    if (IsTargetStopByte(c)) m.stop |= 1u << i;
  }
  return m;
}

// Every scanner built here on the 16 bytes at `p`, against the reference.
void ExpectAllAgree(const std::string& bytes) {
  ASSERT_EQ(bytes.size(), 16u);
  const TargetMasks want = Reference(bytes.data(), 16);
  const TargetMasks lo = ScanTarget8(bytes.data());
  const TargetMasks hi = ScanTarget8(bytes.data() + 8);
  EXPECT_EQ(lo.slash | hi.slash << 8, want.slash);
  EXPECT_EQ(lo.stop | hi.stop << 8, want.stop);
#if defined(__SSE2__)
  EXPECT_EQ(ScanTarget16(bytes.data()).slash, want.slash);
  EXPECT_EQ(ScanTarget16(bytes.data()).stop, want.stop);
#endif
  const uint32_t width_mask = (uint32_t{1} << kScanWidth) - 1;
  EXPECT_EQ(ScanTarget(bytes.data()).slash, want.slash & width_mask);
  EXPECT_EQ(ScanTarget(bytes.data()).stop, want.stop & width_mask);
}

TEST(ByteScanTest, EveryByteValueAtEveryPosition) {
  for (int c = 0; c < 256; ++c) {
    for (size_t pos = 0; pos < 16; ++pos) {
      std::string bytes(16, 'a');
      bytes[pos] = static_cast<char>(c);
      SCOPED_TRACE(testing::Message() << c << "@" << pos);
      ExpectAllAgree(bytes);
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
      for (size_t i = 0; i < 16; ++i) {
        bytes[i] = static_cast<char>(i % 2 ? b : a);
      }
      SCOPED_TRACE(testing::Message() << int{a} << "," << int{b});
      ExpectAllAgree(bytes);
    }
  }
}

TEST(ByteScanTest, RandomBlocks) {
  std::mt19937_64 rng(11);
  std::string bytes(16, '\0');
  for (int round = 0; round < 200'000; ++round) {
    for (char& c : bytes) c = static_cast<char>(rng());
    ExpectAllAgree(bytes);
    if (HasFailure()) return;
  }
}

TEST(ByteScanTest, SwarByteTestsAreExact) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 100'000; ++round) {
    const uint64_t x = rng();
    const auto c = static_cast<unsigned char>(rng() % 0x80);
    const uint64_t eq = SwarEqual(x, c);
    const uint64_t le = SwarAtMost(x, c);
    for (int i = 0; i < 8; ++i) {
      const auto b = static_cast<unsigned char>(x >> (8 * i));
      ASSERT_EQ((eq >> (8 * i + 7)) & 1, b == c ? 1u : 0u);
      ASSERT_EQ((le >> (8 * i + 7)) & 1, b <= c ? 1u : 0u);
      ASSERT_EQ(eq & (0x7FULL << (8 * i)), 0u);
    }
  }
}

// The ID scanners against a byte-at-a-time reference on 40 bytes.
void ExpectIdScannersAgree(const std::string& bytes) {
  ASSERT_EQ(bytes.size(), 40u);
  uint64_t w[kIdWords];
  std::memcpy(w, bytes.data(), sizeof w);  // little-endian: byte 0 low
  IdMasks want;
  for (size_t i = 0; i < 40; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c <= 0x20 || c >= 0x7F) want.bad |= uint64_t{1} << i;
    if (c == ':') want.colon |= uint64_t{1} << i;
    const bool host = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '-';
    if (!host) want.non_host |= uint64_t{1} << i;
  }
  const uint64_t forty = (uint64_t{1} << 40) - 1;
  EXPECT_EQ(ScanIdWords8(w).bad & forty, want.bad);
  EXPECT_EQ(ScanIdWords8(w).colon & forty, want.colon);
  EXPECT_EQ(ScanIdWords8(w).non_host & forty, want.non_host);
#if defined(__SSE2__)
  EXPECT_EQ(ScanIdWords16(w).bad & forty, want.bad);
  EXPECT_EQ(ScanIdWords16(w).colon & forty, want.colon);
  EXPECT_EQ(ScanIdWords16(w).non_host & forty, want.non_host);
#endif
}

TEST(ByteScanTest, IdScannersAgreeOnEveryByteValueAndPosition) {
  if constexpr (std::endian::native != std::endian::little) GTEST_SKIP();
  for (int c = 0; c < 256; ++c) {
    for (size_t pos = 0; pos < 40; ++pos) {
      std::string bytes(40, 'u');
      bytes[pos] = static_cast<char>(c);
      if (pos + 1 < 40) bytes[pos + 1] = static_cast<char>(255 - c);
      SCOPED_TRACE(testing::Message() << c << "@" << pos);
      ExpectIdScannersAgree(bytes);
      if (HasFailure()) return;
    }
  }
  std::mt19937_64 rng(5);
  std::string bytes(40, '\0');
  for (int round = 0; round < 50'000; ++round) {
    for (char& c : bytes) c = static_cast<char>(rng());
    ExpectIdScannersAgree(bytes);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace mxlimit::internal
