// -----------------------------------------------------------------------------
// File: policy/slot_lanes.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// A PolicySet's per-slot rows are arrays of 16-bit entry orders, one lane per
// slot, padded to a multiple of 8 lanes. These take the lane-wise maximum of
// two rows and the set of non-empty lanes, with SSE2 where there is one, for
// resolving (policy_resolve.cc); compiling (policy_set.cc) pads the rows to
// fit them.

#ifndef MXLIMIT_POLICY_SLOT_LANES_H_
#define MXLIMIT_POLICY_SLOT_LANES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mxlimit::internal {

// best[i] = max(best[i], row[i]) for `lanes` lanes, a multiple of 8.
inline void MaxInto(uint16_t* best, const uint16_t* row, size_t lanes) {
#if defined(__SSE2__)
  for (size_t s = 0; s < lanes; s += 8) {
    const __m128i a =
        _mm_load_si128(reinterpret_cast<const __m128i*>(best + s));
    const __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + s));
    // max(a, b) for unsigned 16-bit lanes in SSE2: (a -sat b) + b.
    _mm_store_si128(reinterpret_cast<__m128i*>(best + s),
                    _mm_add_epi16(_mm_subs_epu16(a, b), b));
  }
#else
  for (size_t s = 0; s < lanes; ++s) best[s] = std::max(best[s], row[s]);
#endif
}

// Bit s set when best[s] != 0, for `lanes` lanes (a multiple of 8, at most
// 32).
inline uint32_t FoundSlots(const uint16_t* best, size_t lanes) {
  uint32_t found = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  size_t s = 0;
  // Sixteen lanes a step: both halves' masks packed into one.
  for (; s + 16 <= lanes; s += 16) {
    const __m128i lo = _mm_cmpeq_epi16(
        _mm_load_si128(reinterpret_cast<const __m128i*>(best + s)), zero);
    const __m128i hi = _mm_cmpeq_epi16(
        _mm_load_si128(reinterpret_cast<const __m128i*>(best + s + 8)), zero);
    const auto bits =
        static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)));
    found |= (~bits & 0xFFFFu) << s;
  }
  for (; s < lanes; s += 8) {
    const __m128i empty = _mm_cmpeq_epi16(
        _mm_load_si128(reinterpret_cast<const __m128i*>(best + s)), zero);
    const auto bits = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_packs_epi16(empty, empty)) & 0xFF);
    found |= (~bits & 0xFFu) << s;
  }
#else
  for (size_t s = 0; s < lanes; ++s) found |= uint32_t{best[s] != 0} << s;
#endif
  return found;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_SLOT_LANES_H_
