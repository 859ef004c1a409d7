// -----------------------------------------------------------------------------
// File: internal/bucket_keys.h
// -----------------------------------------------------------------------------
//
// The keys of the two bucket tables: fixed-size, trivially copyable values
// built on the stack per request (no allocation, no string building) and
// stored once, inside the table's slab record.
//
//   IpBucketKey    20 bytes: 16 address bytes + policy id + route id.
//   UserBucketKey  46 bytes: policy id + route id + kind + length + 40 bytes
//                  holding either the user ID itself or a keyed digest of it.
//
// Both compare bytewise (no padding, unused bytes always zero) and hash with
// `absl::Hash` via `AbslHashValue`.
//
// Route ids: per-route policies pass the normalized route's id; policies that
// share one budget across all their routes (`share_threshold`) pass
// `kSharedBucketRoute`.
//
// User IDs. A well-formed Matrix user ID (`@localpart:server`, see
// `IsWellFormedUserId`) of at most 40 bytes, which covers nearly every real
// ID, is stored verbatim: its identity is exact. A longer well-formed ID (41
// to 255 bytes) is identified by its SipHash-2-4-128 digest under a secret
// 128-bit key that the table's owner draws at random (`RandomSipKey()`).
// Because the function is a keyed PRF, users who choose their IDs cannot
// construct two IDs that share a bucket: short of learning the key, each
// attempt succeeds with probability 2^-128, and accidental collisions among a
// million live long IDs have probability below 2^-88. (A plain unkeyed hash
// would let an attacker pick an ID that lands in a victim's bucket.)
//
// Anything else (empty, over 255 bytes, not `@localpart:server`, or holding a
// byte <= 0x20 or 0x7F) maps to one shared *overflow* key per (policy, route):
// such requests share a single budget. That is safe: garbage IDs can neither
// escape limiting by varying the ID nor grow memory; and a homeserver only
// passes IDs it has authenticated, so in practice the overflow key is only
// reached through an embedder bug, which then shows up as one hot bucket
// (`UserBucketKey::kind() == kOverflow`). The limiter should skip the per-user
// scope for anonymous requests rather than build a key from "".
//
// Address masking is the caller's job (`MaskAddress` in ip.h, /32 for IPv4
// and /64 for IPv6 by default): `IpBucketKey` stores the bytes it is given.
//
// Example:
//   IpBucketKey ip_key = IpBucketKey::Make(MaskAddress(ip, 32, 64), policy,
//                                          route.id);
//   UserBucketKey user_key =
//       UserBucketKey::Make(user_id, policy, kSharedBucketRoute, secret_);

#ifndef MXLIMIT_INTERNAL_BUCKET_KEYS_H_
#define MXLIMIT_INTERNAL_BUCKET_KEYS_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mxlimit/internal/siphash.h"
#include "mxlimit/ip.h"
#include "mxlimit/policy.h"
#include "mxlimit/route.h"

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

// The Matrix spec caps user IDs at 255 bytes.
inline constexpr size_t kMaxUserIdBytes = 255;

// True for `@localpart:server` with a non-empty localpart (no ':') and a
// non-empty server part, at most 255 bytes, and no byte <= 0x20 or 0x7F.
// This checks the shape only, not the full grammar: the homeserver has
// already authenticated the ID, and non-ASCII bytes are harmless here.
constexpr bool IsWellFormedUserId(std::string_view id) {
  if (id.size() < 4 || id.size() > kMaxUserIdBytes || id[0] != '@') {
    return false;
  }
  size_t colon = std::string_view::npos;
  for (size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c <= 0x20 || c == 0x7F) return false;
    if (c == ':' && colon == std::string_view::npos) colon = i;
  }
  return colon != std::string_view::npos && colon >= 2 && colon + 1 < id.size();
}

// -----------------------------------------------------------------------------
// UserBucketKey
// -----------------------------------------------------------------------------
struct UserBucketKey {
  enum class Kind : uint8_t {
    kInline = 0,    // `bytes` holds the user ID itself (`length` bytes).
    kDigest = 1,    // `bytes` starts with the keyed 16-byte digest.
    kOverflow = 2,  // Malformed or oversized ID; shared per policy+route.
  };

  // Longest user ID stored verbatim. Chosen so that a table record (key,
  // state, links) is exactly one 64-byte cache line.
  static constexpr size_t kInlineCapacity = 40;

  PolicyId policy = 0;
  RouteId route = 0;
  Kind kind = Kind::kOverflow;
  uint8_t length = 0;  // Bytes of the ID when inline; 0 otherwise.
  // Inline ID or digest, zero padded: bytewise equality relies on it.
  std::array<uint8_t, kInlineCapacity> bytes{};

  // Builds the key of `user_id` for one policy and route. `secret` keys the
  // digest of long IDs; use one random secret per table for its lifetime
  // (keys built under different secrets never match). Never allocates.
  static UserBucketKey Make(std::string_view user_id, PolicyId policy,
                            RouteId route, const SipKey& secret) {
    UserBucketKey k;
    k.policy = policy;
    k.route = route;
    if (!IsWellFormedUserId(user_id)) {
      k.kind = Kind::kOverflow;
    } else if (user_id.size() <= kInlineCapacity) {
      k.kind = Kind::kInline;
      k.length = static_cast<uint8_t>(user_id.size());
      std::memcpy(k.bytes.data(), user_id.data(), user_id.size());
    } else {
      k.kind = Kind::kDigest;
      const SipDigest d = SipHash128(secret, user_id);
      std::memcpy(k.bytes.data(), d.data(), d.size());
    }
    return k;
  }

  // The user ID when stored inline; empty for digests and overflow.
  std::string_view inline_user_id() const {
    return kind == Kind::kInline
               ? std::string_view(reinterpret_cast<const char*>(bytes.data()),
                                  length)
               : std::string_view();
  }

  friend bool operator==(const UserBucketKey& a, const UserBucketKey& b) {
    return std::memcmp(&a, &b, sizeof(UserBucketKey)) == 0;
  }

  template <typename H>
  friend H AbslHashValue(H h, const UserBucketKey& k) {
    // Padding-free and zero-filled: the object bytes are the identity.
    return H::combine_contiguous(std::move(h),
                                 reinterpret_cast<const unsigned char*>(&k),
                                 sizeof(UserBucketKey));
  }
};

static_assert(sizeof(UserBucketKey) == 46);
static_assert(std::is_trivially_copyable_v<UserBucketKey>);
static_assert(std::has_unique_object_representations_v<UserBucketKey>,
              "bytewise equality needs a padding-free layout");

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_BUCKET_KEYS_H_
