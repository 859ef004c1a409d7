// -----------------------------------------------------------------------------
// File: policy/bucket_fingerprint.h
// -----------------------------------------------------------------------------
//
// A 64-bit fingerprint of what a policy's buckets mean: its name and every
// field `KeepsBuckets` compares. Two policies with the same fingerprint
// keep each other's buckets across a reload, so a snapshot restored into
// another policy set keeps exactly the buckets a reload would.
//
// Internal: not installed.

#ifndef MXLIMIT_POLICY_BUCKET_FINGERPRINT_H_
#define MXLIMIT_POLICY_BUCKET_FINGERPRINT_H_

#include <cstdint>

#include "mxlimit/policy.h"

namespace mxlimit::internal {

uint64_t BucketFingerprint(const Policy& policy);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_BUCKET_FINGERPRINT_H_
