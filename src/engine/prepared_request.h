// What a driver of several engines (a ShardedLimiter, a SharedLimiter's
// store core) learns about a request once, before taking any lock, so that no
// layer below derives it again: its route and query-free path, its user's
// bucket key, and, once one engine under lock has resolved them, its
// policies.
//
// Internal: not installed, not part of the public API.

#ifndef MXLIMIT_ENGINE_PREPARED_REQUEST_H_
#define MXLIMIT_ENGINE_PREPARED_REQUEST_H_

#include <string_view>

#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"
#include "src/engine/bucket_keys.h"

namespace mxlimit::internal {

struct PreparedRequest {
  // From the normalizer every engine of the driver shares.
  Route route;
  std::string_view path;
  // The user's bucket key with policy and route 0 (each check rekeys it),
  // built under the secret every engine of the driver uses. Unset for a
  // request without a user.
  bool has_user_key = false;
  UserBucketKey user_key;
  // The request's policies as `resolved_on` resolves them, when the driver
  // resolved them once for several engines (CheckPair: both hold the same
  // set); null otherwise. Points into the driver's frame. An engine holding
  // another set (a reload under way) resolves afresh.
  const PolicySet* resolved_on = nullptr;
  const PolicySet::Resolution* resolution = nullptr;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ENGINE_PREPARED_REQUEST_H_
