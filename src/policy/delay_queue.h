// -----------------------------------------------------------------------------
// File: policy/delay_queue.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// The queue of late admissions a policy's buckets keep, read the same way by
// the engine's tables (src/engine/engine.cc) and the shared store
// (src/shared/store_ops.h), so that a bucket's queue cannot mean one thing in
// process and another in the store.

#ifndef MXLIMIT_POLICY_DELAY_QUEUE_H_
#define MXLIMIT_POLICY_DELAY_QUEUE_H_

#include <cstdint>

#include "mxlimit/policy.h"

namespace mxlimit::internal {

// How far past its rate's tolerance a bucket of `policy` keeps its lead:
// `max_delay` for `on_limit: delay` (an admission `d` late is charged as of
// now + d, so the queue must survive the requests that do not delay, see
// GcraEvaluateQueued), 0 otherwise.
inline int64_t DelayQueueNs(const Policy& policy) {
  return policy.on_limit == OnLimit::kDelay ? policy.max_delay.count() : 0;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_DELAY_QUEUE_H_
