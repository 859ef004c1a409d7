// -----------------------------------------------------------------------------
// File: util/siphash.h
// -----------------------------------------------------------------------------
//
// SipHash-2-4 with a 128-bit output (Aumasson & Bernstein, "SipHash: a fast
// short-input PRF", 2012; the 128-bit variant of the reference
// implementation). A keyed pseudo-random function: without the 128-bit key an
// attacker cannot find two inputs with the same output faster than by
// guessing. The per-user bucket table uses it to identify long user IDs by a
// digest that attacker-chosen IDs cannot be made to collide on.
//
// Example:
//   SipKey key = RandomSipKey();
//   SipDigest d = SipHash128(key, "some bytes");

#ifndef MXLIMIT_UTIL_SIPHASH_H_
#define MXLIMIT_UTIL_SIPHASH_H_

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string_view>

namespace mxlimit::internal {

// The 128-bit key, as two little-endian 64-bit halves (k0 = bytes 0..7).
struct SipKey {
  uint64_t k0 = 0;
  uint64_t k1 = 0;
};

// The 16 output bytes in the reference implementation's byte order.
using SipDigest = std::array<uint8_t, 16>;

namespace siphash_detail {

inline uint64_t LoadLe64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void StoreLe64(uint64_t v, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

struct State {
  uint64_t v0, v1, v2, v3;

  void Round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }

  void Compress(uint64_t m) {
    v3 ^= m;
    Round();
    Round();
    v0 ^= m;
  }
};

}  // namespace siphash_detail

// SipHash-2-4-128 of `data` under `key`.
inline SipDigest SipHash128(const SipKey& key, std::string_view data) {
  using siphash_detail::LoadLe64;
  siphash_detail::State s{
      key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL,
      key.k0 ^ 0x6c7967656e657261ULL, key.k1 ^ 0x7465646279746573ULL};
  s.v1 ^= 0xee;  // Marks the 128-bit output variant.

  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) s.Compress(LoadLe64(p + i));
  // Last block: the remaining bytes, zero padded, with the length (mod 256)
  // in the top byte.
  unsigned char tail[8] = {};
  if (n > i) std::memcpy(tail, p + i, n - i);
  uint64_t last = LoadLe64(tail);
  last |= static_cast<uint64_t>(n & 0xff) << 56;
  s.Compress(last);

  SipDigest out;
  s.v2 ^= 0xee;
  for (int r = 0; r < 4; ++r) s.Round();
  siphash_detail::StoreLe64(s.v0 ^ s.v1 ^ s.v2 ^ s.v3, out.data());
  s.v1 ^= 0xdd;
  for (int r = 0; r < 4; ++r) s.Round();
  siphash_detail::StoreLe64(s.v0 ^ s.v1 ^ s.v2 ^ s.v3, out.data() + 8);
  return out;
}

// Fresh keys from the operating system's entropy source, all from one
// opening of it (the opening costs more than the words). Call once per
// process or per table (it may allocate and is not meant for the hot path).
inline void RandomSipKeys(std::span<SipKey> keys) {
  std::random_device rd;
  auto word = [&rd] {
    return (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
  };
  for (SipKey& key : keys) {
    key.k0 = word();
    key.k1 = word();
  }
}

inline SipKey RandomSipKey() {
  SipKey key;
  RandomSipKeys({&key, 1});
  return key;
}

// The 22 base64url digits (RFC 4648 section 5, no padding) of a digest:
// 128 bits, the last digit carrying 2. Writes exactly 22 bytes at `out`.
inline constexpr size_t kSipDigestBase64UrlSize = 22;
inline char* AppendBase64Url(const SipDigest& d, char* out) {
  constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t byte : d) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      *out++ = kDigits[(acc >> bits) & 0x3F];
    }
  }
  *out++ = kDigits[(acc << (6 - bits)) & 0x3F];
  return out;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_SIPHASH_H_
