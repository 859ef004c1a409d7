// Names of shared buckets in the store: `mxl:1:<i|u|o|r|t>:<digest>`, where the
// digest is 22 base64url digits of SipHash-2-4-128, keyed by
// `store.key_secret`, over what identifies the bucket on every process:
//
//   * the policy's fingerprint: name, scope, rate (count and unit), burst,
//     sharing, layer and client prefix, so that a policy changed by a
//     reload (or differing between versions in a rolling upgrade) uses new
//     keys and the old ones expire on their own;
//   * the route's template string (or "*" for a policy whose routes share
//     one bucket), never an engine-local RouteId, which may differ between
//     builds;
//   * the subject: the client address masked to the policy's prefix (16
//     bytes, IPv4 mapped), the user ID, the origin server name (unverified:
//     after the sender's masked network), the decoded room ID or alias, or
//     the target account; one overflow marker for every malformed value, as
//     the local tables have.
//
// Hashed, so that no address or user ID reaches the store, every key has
// one length, and clients cannot aim at each other's keys. Every field is
// length-prefixed, so no two different inputs hash the same bytes.
//
// For a Redis Cluster (`redis-cluster://`) each key ends in a hash tag,
// `{<4 base64url digits>}`, a digest of the scope and subject alone: every
// bucket of one address (or user, origin, room, target) lands in one slot
// whatever its policy and route, so a check touches one slot per subject it
// names rather than one per bucket (cluster_store.h).

#ifndef MXLIMIT_SHARED_STORE_KEYS_H_
#define MXLIMIT_SHARED_STORE_KEYS_H_

#include <string>
#include <string_view>

#include "mxlimit/ip.h"
#include "mxlimit/policy.h"
#include "src/shared/store.h"
#include "src/util/siphash.h"

namespace mxlimit::internal {

class StoreKeyer {
 public:
  // `secret`: the configured key_secret, any length (ValidateStoreOptions
  // asks for 16 bytes or more); stretched to a SipHash key.
  explicit StoreKeyer(std::string_view secret, bool hash_tags = false);

  // The key of `policy`'s bucket for `route` ("*" when shared across
  // routes) and `subject`: the masked address bytes for an ip-scope
  // policy, the user ID for a user-scope one (`overflow` for an ID the
  // tables key by the shared overflow bucket).
  StoreKey IpKey(const Policy& policy, std::string_view route,
                 const IpAddress& masked) const;
  StoreKey UserKey(const Policy& policy, std::string_view route,
                   std::string_view user_id, bool overflow) const;
  // An origin ('o'; the name, or the sender's masked network bytes then the
  // name when unverified), room ('r'; the decoded room ID or alias) or
  // target ('t'; the account's user ID) bucket.
  StoreKey SubjectKey(char scope, const Policy& policy, std::string_view route,
                      std::string_view subject, bool overflow) const;

  // The hash of the runtime tier assignments mxlimitd shares
  // (src/daemon/tier_sync.h): "mxl:1:tiers:<22 base64url digits>", one per
  // key secret; the digits in braces (a hash tag) with hash_tags.
  std::string TiersKey() const;

 private:
  StoreKey Make(char scope, const Policy& policy, std::string_view route,
                std::string_view subject, bool overflow) const;

  SipKey key_;
  bool hash_tags_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_STORE_KEYS_H_
