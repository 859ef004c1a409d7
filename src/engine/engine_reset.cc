// An operator's reset of one subject's buckets (Limiter::ResetBuckets): a
// walk of one table, apart from engine.cc so that none of it joins Check's
// flattened call tree.

#include <cstdint>
#include <vector>

#include "src/engine/engine.h"

namespace mxlimit::internal {

size_t Engine::ResetBuckets(const TierSubject& subject) {
  if (subject.kind == TierSubjectKind::kUser) {
    const UserBucketKey probe =
        UserBucketKey::Make(subject.user_id, 0, 0, user_key_secret_);
    return user_table_.EraseIf([&](const UserBucketKey& key, const GcraState&) {
      return key.SameSubject(probe);
    });
  }
  // Keys carry bucket tokens; each ip-scope policy masks addresses to its
  // own prefix, so a bucket's network is known only through its policy.
  std::vector<const AddressMasker*> mask_of_token;
  for (size_t id = 0; id < bucket_token_.size(); ++id) {
    const uint16_t token = bucket_token_[id];
    if (token >= mask_of_token.size()) mask_of_token.resize(token + 1, nullptr);
    mask_of_token[token] = &ip_masks_[id];
  }
  const Cidr& net = subject.network;
  return ip_table_.EraseIf([&](const IpBucketKey& key, const GcraState&) {
    IpAddress bucket;
    bucket.bytes = key.address;
    // The bucket's network and the subject's overlap: one holds the other.
    if (net.Contains(bucket)) return true;
    const AddressMasker* mask =
        key.policy < mask_of_token.size() ? mask_of_token[key.policy] : nullptr;
    return mask != nullptr && mask->Apply(net.base) == bucket;
  });
}

}  // namespace mxlimit::internal
