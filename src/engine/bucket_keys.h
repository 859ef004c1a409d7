// -----------------------------------------------------------------------------
// File: engine/bucket_keys.h
// -----------------------------------------------------------------------------
//
// The keys of the two bucket tables: fixed-size, trivially copyable values
// built on the stack per request (no allocation, no string building) and
// stored once, inside the table's slab record.
//
//   IpBucketKey    20 bytes: 16 address bytes + policy id + route id.
//   UserBucketKey  48 bytes: one word of policy id, route id, kind and
//                  length, then 40 bytes holding either the user ID itself or
//                  a keyed digest of it (or an origin, room or target the
//                  same way; an unverified origin with its network).
//
// Both compare bytewise (no padding, unused bytes always zero). The limiter's
// tables hash them with the seeded `BucketKeyHash` below; `AbslHashValue`
// makes them usable in abseil containers too.
//
// Route ids: per-route policies pass the normalized route's id; policies that
// share one budget across all their routes (`share_threshold`) pass
// `kSharedBucketRoute`.
//
// User IDs. A well-formed Matrix user ID (`IsWellFormedUserId` in
// mxlimit/user_id.h, the one rule the config loader, replay and CLI use too)
// of at most 40 bytes, which covers nearly every real ID, is stored verbatim:
// its identity is exact. A longer well-formed ID (41 to 255 bytes) is
// identified by its SipHash-2-4-128 digest under a secret 128-bit key that the
// table's owner draws at random (`RandomSipKey()`). Because the function is a
// keyed PRF, users who choose their IDs cannot construct two IDs that share a
// bucket: short of learning the key, each attempt succeeds with probability
// 2^-128, and accidental collisions among a million live long IDs have
// probability below 2^-88. (A plain unkeyed hash would let an attacker pick an
// ID that lands in a victim's bucket.)
//
// Anything else (empty, over 255 bytes, not `@localpart:server_name`, a byte
// outside printable ASCII, a bad port or IPv6 literal) maps to one shared
// *overflow* key per (policy, route): such requests share a single budget.
// That is safe: garbage IDs can neither escape limiting by varying the ID nor
// grow memory; and a homeserver only passes IDs it has authenticated, so in
// practice the overflow key is only reached through an embedder bug, which
// then shows up as one hot bucket (`UserBucketKey::kind() == kOverflow`). The
// limiter should skip the per-user scope for anonymous requests rather than
// build a key from "".
//
// Address masking is the caller's job (`MaskAddress` in ip.h, /32 for IPv4
// and /64 for IPv6 by default): `IpBucketKey` stores the bytes it is given.
//
// Example:
//   IpBucketKey ip_key = IpBucketKey::Make(MaskAddress(ip, 32, 64), policy,
//                                          route.id);
//   UserBucketKey user_key =
//       UserBucketKey::Make(user_id, policy, kSharedBucketRoute, secret_);

#ifndef MXLIMIT_ENGINE_BUCKET_KEYS_H_
#define MXLIMIT_ENGINE_BUCKET_KEYS_H_

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mxlimit/ip.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"
#include "mxlimit/user_id.h"
#include "src/route/byte_scan.h"
#include "src/util/siphash.h"

namespace mxlimit::internal {

// -----------------------------------------------------------------------------
// IpBucketKey
// -----------------------------------------------------------------------------
struct IpBucketKey {
  // The client address, IPv4 v4-mapped, already masked to the policy's
  // prefix by the caller.
  std::array<uint8_t, 16> address{};
  PolicyId policy = 0;
  RouteId route = 0;

  static IpBucketKey Make(const IpAddress& masked_address, PolicyId policy,
                          RouteId route) {
    IpBucketKey k;
    k.address = masked_address.bytes;
    k.policy = policy;
    k.route = route;
    return k;
  }

  friend bool operator==(const IpBucketKey& a, const IpBucketKey& b) {
    return std::memcmp(&a, &b, sizeof(IpBucketKey)) == 0;
  }

  template <typename H>
  friend H AbslHashValue(H h, const IpBucketKey& k) {
    uint64_t lo, hi;
    std::memcpy(&lo, k.address.data(), 8);
    std::memcpy(&hi, k.address.data() + 8, 8);
    const uint32_t ids = static_cast<uint32_t>(k.policy) |
                         (static_cast<uint32_t>(k.route) << 16);
    return H::combine(std::move(h), lo, hi, ids);
  }
};

static_assert(sizeof(IpBucketKey) == 20);
static_assert(std::is_trivially_copyable_v<IpBucketKey>);
static_assert(std::has_unique_object_representations_v<IpBucketKey>,
              "bytewise equality needs a padding-free layout");

// -----------------------------------------------------------------------------
// User IDs
// -----------------------------------------------------------------------------

// The rule for user IDs (and `kMaxUserIdBytes`) is mxlimit/user_id.h's
// `IsWellFormedUserId`; `UserBucketKey` evaluates it a word at a time for IDs
// it stores inline.

// IsWellFormedServerName, a word at a time for the usual origin: up to 40
// bytes of hostname bytes alone (no port, no IPv6 literal) are well formed;
// anything else goes to the definition. Every federation request checks its
// origin.
inline bool IsWellFormedOrigin(std::string_view name) {
  const size_t n = name.size();
  if (n == 0 || n > kIdWords * 8) return IsWellFormedServerName(name);
  uint64_t w[kIdWords] = {};
  std::memcpy(w, name.data(), n);
  const uint64_t valid = (uint64_t{1} << n) - 1;  // n <= 40
  if ((ScanIdWords(w).non_host & valid) == 0) return true;
  return IsWellFormedServerName(name);
}

// -----------------------------------------------------------------------------
// UserBucketKey
// -----------------------------------------------------------------------------
//
// Six 64-bit words. Word 0 holds policy (bits 0-15), route (16-31), kind
// (32-39) and length (40-47); words 1-5 hold the inline ID's bytes in memory
// order, or the 16-byte digest, or (kBoundInline) the 16 network bytes and
// then the value's, zero padded. Built and compared a whole word
// at a time: a key written byte by byte and then read by words stalls the
// CPU's store-to-load forwarding on every request.
class UserBucketKey {
 public:
  enum class Kind : uint8_t {
    kInline = 0,       // The ID itself is stored (`length()` bytes).
    kDigest = 1,       // The keyed 16-byte digest of the ID is stored.
    kOverflow = 2,     // Malformed or oversized ID; shared per policy+route.
    kBound = 3,        // Digest of a value bound to a network (AssignValue).
    kBoundInline = 4,  // A short value and its network, stored (the same).
  };

  // Longest user ID stored verbatim. Chosen so that a table record (key,
  // state, links) is exactly one 64-byte cache line.
  static constexpr size_t kInlineCapacity = 40;
  static constexpr size_t kWords = 1 + kInlineCapacity / 8;

  // Builds the key of `user_id` for one policy and route. `secret` keys the
  // digest of long IDs; use one random secret per table for its lifetime
  // (keys built under different secrets never match). Never allocates.
  static UserBucketKey Make(std::string_view user_id, PolicyId policy,
                            RouteId route, const SipKey& secret) {
    UserBucketKey k;
    k.Assign(user_id, policy, route, secret);
    return k;
  }

  // `*this = Make(...)`, built in place (the hot path avoids the copy).
  void Assign(std::string_view user_id, PolicyId policy, RouteId route,
              const SipKey& secret) {
    Kind kind = Kind::kOverflow;
    size_t length = 0;
    if (user_id.size() <= kInlineCapacity) {
      if (LoadInline(user_id)) {
        kind = Kind::kInline;
        length = user_id.size();
      }
    } else if (IsWellFormedUserId(user_id)) {
      kind = Kind::kDigest;
      const SipDigest d = SipHash128(secret, user_id);
      std::memcpy(&words_[1], d.data(), 8);
      std::memcpy(&words_[2], d.data() + 8, 8);
      for (size_t i = 3; i < kWords; ++i) words_[i] = 0;
    }
    if (kind == Kind::kOverflow) {
      for (size_t i = 1; i < kWords; ++i) words_[i] = 0;
    }
    words_[0] =
        static_cast<uint64_t>(policy) | static_cast<uint64_t>(route) << 16 |
        static_cast<uint64_t>(kind) << 32 | static_cast<uint64_t>(length) << 40;
  }

  // The key of any other subject (an origin server, a room, a target
  // account) under the same layout: `value` stored inline when at most
  // kInlineCapacity bytes, else its keyed digest; `valid` false keys the
  // shared overflow bucket instead. `bound`, when given (an unverified
  // origin), is a masked network the value is bound to: the key is then the
  // digest of both, so the same name sent from another network is another
  // bucket; a short value is stored with its network instead (the two
  // kinds never compare equal, so no name has two buckets per network).
  // Never allocates; `value` longer than kMaxBoundValueBytes with a `bound`
  // network is overflow (server names are at most 255 bytes).
  static constexpr size_t kMaxBoundValueBytes = 255;
  static constexpr size_t kBoundInlineCapacity = kInlineCapacity - 16;
  void AssignValue(std::string_view value, bool valid, const IpAddress* bound,
                   PolicyId policy, RouteId route, const SipKey& secret) {
    Kind kind = Kind::kOverflow;
    size_t length = 0;
    for (size_t i = 1; i < kWords; ++i) words_[i] = 0;
    if (valid && bound != nullptr && value.size() <= kBoundInlineCapacity) {
      // Most server names: no digest to compute on every request.
      std::memcpy(&words_[1], bound->bytes.data(), 16);
      std::memcpy(&words_[3], value.data(), value.size());
      kind = Kind::kBoundInline;
      length = value.size();
    } else if (valid && bound != nullptr &&
               value.size() <= kMaxBoundValueBytes) {
      char buf[16 + kMaxBoundValueBytes];
      std::memcpy(buf, bound->bytes.data(), 16);
      std::memcpy(buf + 16, value.data(), value.size());
      const SipDigest d =
          SipHash128(secret, std::string_view(buf, 16 + value.size()));
      std::memcpy(&words_[1], d.data(), 8);
      std::memcpy(&words_[2], d.data() + 8, 8);
      kind = Kind::kBound;
    } else if (valid && bound == nullptr && value.size() <= kInlineCapacity) {
      std::memcpy(&words_[1], value.data(), value.size());
      kind = Kind::kInline;
      length = value.size();
    } else if (valid && bound == nullptr) {
      const SipDigest d = SipHash128(secret, value);
      std::memcpy(&words_[1], d.data(), 8);
      std::memcpy(&words_[2], d.data() + 8, 8);
      kind = Kind::kDigest;
    }
    words_[0] =
        static_cast<uint64_t>(policy) | static_cast<uint64_t>(route) << 16 |
        static_cast<uint64_t>(kind) << 32 | static_cast<uint64_t>(length) << 40;
  }

  // The same user's key for another policy and route: only the first word's
  // ids change, so a request with several user-scope policies checks and
  // copies the ID once.
  void Rekey(PolicyId policy, RouteId route) {
    words_[0] = Rekeyed(words_[0], policy, route);
  }

  // `base` (the same user's key, just built) rekeyed, copied a word at a
  // time: the key sits in the store buffer as word-sized stores, and the
  // 16-byte loads of a plain struct copy, each spanning two of them, could
  // not be forwarded from it (they would wait for the stores to retire).
  void AssignRekeyed(const UserBucketKey& base, PolicyId policy,
                     RouteId route) {
    words_[0] = Rekeyed(base.words_[0], policy, route);
    for (size_t i = 1; i < kWords; ++i) {
      uint64_t w = base.words_[i];
#if defined(__GNUC__)
      // Keeps the compiler from pairing the words into vector moves.
      asm("" : "+r"(w));
#endif
      words_[i] = w;
    }
  }

  PolicyId policy() const { return static_cast<PolicyId>(words_[0]); }
  RouteId route() const { return static_cast<RouteId>(words_[0] >> 16); }
  Kind kind() const { return static_cast<Kind>((words_[0] >> 32) & 0xFF); }
  // Whether both keys name the same subject, whatever their policy and
  // route (an operator's reset of one user's buckets).
  bool SameSubject(const UserBucketKey& other) const {
    if ((words_[0] >> 32) != (other.words_[0] >> 32)) return false;
    for (size_t i = 1; i < kWords; ++i) {
      if (words_[i] != other.words_[i]) return false;
    }
    return true;
  }
  // Bytes of the ID (or value) when stored inline, kBoundInline included; 0
  // otherwise.
  size_t length() const { return (words_[0] >> 40) & 0xFF; }

  // The user ID when stored inline; empty for digests and overflow.
  std::string_view inline_user_id() const {
    return kind() == Kind::kInline
               ? std::string_view(reinterpret_cast<const char*>(&words_[1]),
                                  length())
               : std::string_view();
  }

  // The key as words, for hashing.
  const std::array<uint64_t, kWords>& words() const { return words_; }

  friend bool operator==(const UserBucketKey& a, const UserBucketKey& b) {
    uint64_t diff = 0;  // Branch-free; libc's memcmp call cost more.
    for (size_t i = 0; i < kWords; ++i) diff |= a.words_[i] ^ b.words_[i];
    return diff == 0;
  }

  template <typename H>
  friend H AbslHashValue(H h, const UserBucketKey& k) {
    return H::combine_contiguous(std::move(h), k.words_.data(), kWords);
  }

 private:
  static uint64_t Load64(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  // The first word `head` with `policy` and `route` in place of its ids.
  static uint64_t Rekeyed(uint64_t head, PolicyId policy, RouteId route) {
    return (head & ~uint64_t{0xFFFFFFFF}) | static_cast<uint64_t>(policy) |
           static_cast<uint64_t>(route) << 16;
  }

  // Stores `id` (at most 40 bytes) zero padded into words 1-5 and returns
  // whether it is well formed: the same answer as IsWellFormedUserId, a word
  // at a time, without reading past the ID's last byte. The word masks settle
  // the common shapes (a byte outside 0x21-0x7E, no '@' or ':', an empty
  // localpart or server: malformed; a server of hostname bytes only: well
  // formed); a port or IP literal goes to the byte-at-a-time definition.
  bool LoadInline(std::string_view id) {
    const size_t n = id.size();
    if (n < 4) return false;
    if constexpr (std::endian::native != std::endian::little) {
      for (size_t i = 1; i < kWords; ++i) words_[i] = 0;
      std::memcpy(&words_[1], id.data(), n);
      return IsWellFormedUserId(id);
    }
    const char* p = id.data();
    // The last, partial word: the ID's final n % 8 bytes (all 8 when n is a
    // multiple of 8), read without going past the end.
    const size_t full = (n - 1) / 8;   // words before the last one
    const size_t rest = n - 8 * full;  // 1..8 bytes in the last word
    uint64_t last;
    if (n >= 8) {
      last = Load64(p + n - 8) >> (8 * (8 - rest));
    } else {  // 4..7 bytes: two overlapping 4-byte loads
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + n - 4, 4);
      last = lo | static_cast<uint64_t>(hi) << (8 * (n - 4));
    }
    static_assert(kInlineCapacity / 8 == kIdWords);
    uint64_t w[kIdWords];
    for (size_t i = 0; i < kIdWords; ++i) {
      w[i] = i < full ? Load64(p + 8 * i) : i == full ? last : 0;
      words_[1 + i] = w[i];
    }
    // Bit i stands for byte i; only the ID's own n bytes count (n <= 40).
    const uint64_t valid = (uint64_t{1} << n) - 1;
    const IdMasks m = ScanIdWords(w);
    const uint64_t colons = m.colon & valid;
    if ((m.bad & valid) != 0 || p[0] != '@' || colons == 0) return false;
    const auto colon = static_cast<size_t>(std::countr_zero(colons));
    if (colon < 2 || colon + 1 >= n) return false;
    // The server name's bytes: positions colon+1 .. n-1.
    const uint64_t server = valid & ~((uint64_t{2} << colon) - 1);
    if ((m.non_host & server) == 0) return true;
    return IsWellFormedUserId(id);
  }

  // Left uninitialized by default construction (`UserBucketKey k;`): the
  // limiter keeps one inside every request's evaluation and fills it only
  // when a per-user policy applies; zeroing it first cost more than the key.
  // `Make` and `Assign` set every word; `UserBucketKey k{}` is all zero.
  std::array<uint64_t, kWords> words_;
};

static_assert(sizeof(UserBucketKey) == 48);
static_assert(std::is_trivially_copyable_v<UserBucketKey>);
static_assert(std::has_unique_object_representations_v<UserBucketKey>,
              "bytewise equality needs a padding-free layout");

// -----------------------------------------------------------------------------
// BucketKeyHash
// -----------------------------------------------------------------------------
//
// The hash the limiter's tables use for both key types: inline, a handful of
// 64x64->128-bit multiplies over the key's words, each word first XORed with
// a word of a per-table random seed. Compared with `absl::Hash` it costs no
// call into the shared library and no byte-stream state machine, which
// matters because the key is hashed on every request.
//
// Seeded so that clients cannot precompute keys that pile into one probe
// sequence of the index (addresses and user IDs are partly attacker-chosen).
// Equal keys hash equally under one hasher; a table keeps its hasher for its
// lifetime.
class BucketKeyHash {
 public:
  // Draws a fresh seed from the operating system (construction only).
  BucketKeyHash();
  explicit BucketKeyHash(const std::array<uint64_t, 6>& seed) : seed_(seed) {}

  size_t operator()(const IpBucketKey& k) const {
    return WithIds(AddressPart(k.address), k.policy, k.route);
  }

  // An address key's hash in two steps: the masked address's part, shared
  // by its keys under every policy that masks the client alike, then a
  // key's from its policy and route. The same value as operator().
  uint64_t AddressPart(const std::array<uint8_t, 16>& address) const {
    uint64_t lo, hi;
    std::memcpy(&lo, address.data(), 8);
    std::memcpy(&hi, address.data() + 8, 8);
    return Mix(lo ^ seed_[0], hi ^ seed_[1]);
  }
  size_t WithIds(uint64_t address_part, PolicyId policy, RouteId route) const {
    const uint64_t ids =
        static_cast<uint64_t>(policy) | (static_cast<uint64_t>(route) << 16);
    return Fold(address_part ^ ids, seed_[2]);
  }

  size_t operator()(const UserBucketKey& k) const {
    return WithHead(k.words()[0], TailOf(k));
  }

  // A user key's hash in two steps. The keys of one subject under several
  // policies and routes differ only in their first word (UserBucketKey::
  // Rekey), so a request hashes the rest of its user's words once (TailOf)
  // and each key from its first word (WithHead): half the multiplies per
  // key past the first. The same value as operator().
  struct UserTail {
    uint64_t w1;  // the second word, seeded
    uint64_t c;   // the product of the third and fourth
    uint64_t d;   // the product of the fifth and sixth, seeded for Fold
  };
  UserTail TailOf(const UserBucketKey& k) const {
    static_assert(UserBucketKey::kWords == 6);
    const std::array<uint64_t, UserBucketKey::kWords>& w = k.words();
    return {w[1] ^ seed_[1], Mix(w[2] ^ seed_[2], w[3] ^ seed_[3]),
            Mix(w[4] ^ seed_[4], w[5] ^ seed_[5]) ^ seed_[0]};
  }
  size_t WithHead(uint64_t head, const UserTail& t) const {
    return Fold(Mix(head ^ seed_[0], t.w1) ^ t.c, t.d);
  }

 private:
  // Both halves of the 128-bit product: every output bit depends on every
  // input bit of both operands.
  static uint64_t Mix(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    __extension__ using U128 = unsigned __int128;  // not ISO C++: say so
    const U128 r = static_cast<U128>(a) * b;
    return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
#else
    // No 128-bit product: a 64-bit multiply with xor-shifts (weaker but
    // still mixes every input bit into the high bits the index uses).
    uint64_t h = (a ^ (b >> 29)) * (b | 1);
    h ^= h >> 32;
    return h * 0x9E3779B97F4A7C15ULL ^ b;
#endif
  }
  static uint64_t Fold(uint64_t a, uint64_t b) {
    return Mix(a ^ 0x9E3779B97F4A7C15ULL, b ^ 0xC2B2AE3D27D4EB4FULL);
  }

  std::array<uint64_t, 6> seed_;
};

inline BucketKeyHash::BucketKeyHash() {
  std::array<SipKey, 3> keys;
  RandomSipKeys(keys);
  seed_ = {keys[0].k0, keys[0].k1, keys[1].k0,
           keys[1].k1, keys[2].k0, keys[2].k1};
}

// What a request's keys of one subject share of their hashes, hashed once
// per request (BucketKeyHash's staged forms): the user's words past the
// first, and the last masked address (policies mostly mask the client
// alike).
class SubjectHashes {
 public:
  // The hash of `key`, a rekeyed copy of `base` (the same for every call).
  size_t User(const BucketKeyHash& hash, const UserBucketKey& base,
              const UserBucketKey& key) {
    if (!user_ready_) {
      user_tail_ = hash.TailOf(base);
      user_ready_ = true;
    }
    return hash.WithHead(key.words()[0], user_tail_);
  }
  // The hash of the address key of `masked`, `policy` and `route`.
  size_t Address(const BucketKeyHash& hash, const IpAddress& masked,
                 PolicyId policy, RouteId route) {
    if (!address_ready_ || masked != address_) {
      address_part_ = hash.AddressPart(masked.bytes);
      address_ = masked;
      address_ready_ = true;
    }
    return hash.WithIds(address_part_, policy, route);
  }

 private:
  BucketKeyHash::UserTail user_tail_{};
  bool user_ready_ = false;
  IpAddress address_;
  uint64_t address_part_ = 0;
  bool address_ready_ = false;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_BUCKET_KEYS_H_
