// -----------------------------------------------------------------------------
// File: route/byte_scan.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// Finds the bytes of a request target that the route matcher must stop at,
// many bytes per step instead of one: '/' (ends a segment), '?' and '#' (end
// the path), and the bytes no request target may hold (C0 controls, space,
// DEL). Everything else, UTF-8 and percent signs included, is plain.
//
// Two implementations answer the same question:
//   ScanTarget8   portable SWAR over one 64-bit word (exact per byte: no
//                 carry crosses a byte, so no false positives)
//   ScanTarget16  SSE2 over 16 bytes, where the target has SSE2 (every
//                 x86-64 CPU); byte_scan_test checks both against a
//                 byte-at-a-time reference.
// `ScanTarget` picks the widest one available.
//
// `ScanIdWords` classifies the first 40 bytes of a user ID, held as five
// words (bucket_keys.h validates inline user IDs with it): bytes outside
// printable ASCII, colons, and bytes no hostname may hold.

#ifndef MXLIMIT_ROUTE_BYTE_SCAN_H_
#define MXLIMIT_ROUTE_BYTE_SCAN_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mxlimit::internal {

// The reference definitions, one byte at a time.
constexpr bool IsTargetStopByte(unsigned char c) {
  return c <= 0x20 || c == 0x7F || c == '?' || c == '#';
}

// SWAR byte tests on one 64-bit word: each returns 0x80 in every byte of `x`
// that passes and 0 elsewhere. Exact per byte: no carry or borrow crosses a
// byte boundary, so a byte's answer never depends on its neighbours.
inline constexpr uint64_t kSwarLow7 = 0x7F7F7F7F7F7F7F7FULL;
inline constexpr uint64_t kSwarHigh = 0x8080808080808080ULL;
inline constexpr uint64_t kSwarOnes = 0x0101010101010101ULL;

// Bytes equal to `c`: (t & 0x7F) + 0x7F carries into bit 7 iff the low seven
// bits of t are non-zero.
constexpr uint64_t SwarEqual(uint64_t x, unsigned char c) {
  const uint64_t t = x ^ (kSwarOnes * c);
  return ~(((t & kSwarLow7) + kSwarLow7) | t) & kSwarHigh;
}

// Bytes <= `c`, for c < 0x80: for bytes below 0x80, (b & 0x7F) + (0x7F - c)
// reaches bit 7 iff b > c; bytes from 0x80 up never pass.
constexpr uint64_t SwarAtMost(uint64_t x, unsigned char c) {
  return ~(((x & kSwarLow7) + kSwarOnes * (0x7F - c)) | x) & kSwarHigh;
}

// Bytes no request target may hold: C0 controls, space, DEL.
constexpr uint64_t SwarControlOrSpace(uint64_t x) {
  return SwarAtMost(x, 0x20) | SwarEqual(x, 0x7F);
}

// What a block of target bytes holds, one bit per byte (bit i: byte i):
//   slash  '/'
//   stop   '?', '#' (the path ends) or a byte no target may hold
struct TargetMasks {
  uint32_t slash = 0;
  uint32_t stop = 0;
};

namespace byte_scan_detail {
// Gathers bit 7 of each byte into bits 0..7 (the partial products land on
// distinct bit positions, so nothing carries).
constexpr uint32_t GatherHighBits(uint64_t hits) {
  return static_cast<uint32_t>(((hits >> 7) * 0x0102040810204080ULL) >> 56);
}
}  // namespace byte_scan_detail

// SWAR over the 8 bytes at `p`.
inline TargetMasks ScanTarget8(const char* p) {
  uint64_t x;
  std::memcpy(&x, p, sizeof x);
  if constexpr (std::endian::native == std::endian::big) {
    x = __builtin_bswap64(x);  // Byte 0 in the low bits, as on little-endian.
  }
  const uint64_t stop =
      SwarControlOrSpace(x) | SwarEqual(x, '?') | SwarEqual(x, '#');
  return {byte_scan_detail::GatherHighBits(SwarEqual(x, '/')),
          byte_scan_detail::GatherHighBits(stop)};
}

#if defined(__SSE2__)
// SSE2 over the 16 bytes at `p`.
inline TargetMasks ScanTarget16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i slash = _mm_cmpeq_epi8(v, _mm_set1_epi8('/'));
  __m128i stop = _mm_cmpeq_epi8(v, _mm_set1_epi8('?'));
  stop = _mm_or_si128(stop, _mm_cmpeq_epi8(v, _mm_set1_epi8('#')));
  stop = _mm_or_si128(stop, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F)));
  // Unsigned v <= 0x20 exactly when min(v, 0x20) == v.
  stop = _mm_or_si128(stop,
                      _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x20)), v));
  return {static_cast<uint32_t>(_mm_movemask_epi8(slash)),
          static_cast<uint32_t>(_mm_movemask_epi8(stop))};
}
inline constexpr size_t kScanWidth = 16;
#else
inline constexpr size_t kScanWidth = 8;
#endif

// The masks of the kScanWidth bytes at `p`, with the widest scanner built in.
inline TargetMasks ScanTarget(const char* p) {
#if defined(__SSE2__)
  return ScanTarget16(p);
#else
  return ScanTarget8(p);
#endif
}

// What up to 40 bytes of a user ID hold, one bit per byte (bit i: byte i):
//   bad       a byte no user ID may hold: anything outside printable ASCII
//             (0x21-0x7E), i.e. C0 controls, space, DEL and bytes >= 0x80
//   colon     ':'
//   non_host  a byte a hostname may not hold: anything but ALPHA, DIGIT,
//             '.' and '-'
// The bytes come as five words, byte 0 in the low bits of word 0.
struct IdMasks {
  uint64_t bad = 0;
  uint64_t colon = 0;
  uint64_t non_host = 0;
};
inline constexpr size_t kIdWords = 5;

// Bytes in [lo, hi], for 0 < lo <= hi < 0x80 (bytes from 0x80 up never pass).
constexpr uint64_t SwarInRange(uint64_t x, unsigned char lo, unsigned char hi) {
  return SwarAtMost(x, hi) & ~SwarAtMost(x, static_cast<unsigned char>(lo - 1));
}

// SWAR, a word at a time.
inline IdMasks ScanIdWords8(const uint64_t* w) {
  using byte_scan_detail::GatherHighBits;
  IdMasks m;
  for (size_t i = 0; i < kIdWords; ++i) {
    const uint64_t x = w[i];
    const uint64_t visible = SwarInRange(x, 0x21, 0x7E);
    // ALPHA: the byte with bit 5 set is in 'a'..'z'.
    const uint64_t host = SwarInRange(x | (kSwarOnes * 0x20), 'a', 'z') |
                          SwarInRange(x, '0', '9') | SwarEqual(x, '.') |
                          SwarEqual(x, '-');
    m.bad |= uint64_t{GatherHighBits(~visible & kSwarHigh)} << (8 * i);
    m.colon |= uint64_t{GatherHighBits(SwarEqual(x, ':'))} << (8 * i);
    m.non_host |= uint64_t{GatherHighBits(~host & kSwarHigh)} << (8 * i);
  }
  return m;
}

#if defined(__SSE2__)
// SSE2, two words at a time: fewer instructions than the SWAR form, on every
// request that builds a user key. BM_Limiter_Check (bench/limiter_bench)
// guards it: keep it while the check is cheaper with it (CHANGELOG.md has
// the last measurement). The comparisons are signed, so bytes from 0x80 up
// (negative) fall outside every ASCII range.
inline IdMasks ScanIdWords16(const uint64_t* w) {
  auto in_range = [](__m128i v, char lo, char hi) {
    return _mm_and_si128(
        _mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
        _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
  };
  IdMasks m;
  for (size_t i = 0; i < kIdWords; i += 2) {
    const uint64_t hi = i + 1 < kIdWords ? w[i + 1] : 0;
    const __m128i v =
        _mm_set_epi64x(static_cast<int64_t>(hi), static_cast<int64_t>(w[i]));
    const __m128i visible = in_range(v, 0x21, 0x7E);
    const __m128i colon = _mm_cmpeq_epi8(v, _mm_set1_epi8(':'));
    // '-', '.', '/', '0'-'9' are 0x2D-0x39: one range, then drop '/'.
    const __m128i digit_dot_dash = _mm_andnot_si128(
        _mm_cmpeq_epi8(v, _mm_set1_epi8('/')), in_range(v, '-', '9'));
    const __m128i host =
        _mm_or_si128(digit_dot_dash,
                     in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z'));
    auto bits = [](__m128i mask) {
      return uint64_t{static_cast<uint32_t>(_mm_movemask_epi8(mask))};
    };
    m.bad |= (~bits(visible) & 0xFFFF) << (8 * i);
    m.colon |= bits(colon) << (8 * i);
    m.non_host |= (~bits(host) & 0xFFFF) << (8 * i);
  }
  return m;
}
#endif

// The masks of five ID words, with the widest scanner built in. Bits past
// byte 39 are meaningless.
inline IdMasks ScanIdWords(const uint64_t* w) {
#if defined(__SSE2__)
  return ScanIdWords16(w);
#else
  return ScanIdWords8(w);
#endif
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ROUTE_BYTE_SCAN_H_
