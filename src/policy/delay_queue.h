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
// GcraEvaluateQueued); one burst for a policy charged on the response (a
// response may cost more than the bucket held: the debt it leaves, up to
// one more burst, must hold the next requests back, see GcraCharge); 0
// otherwise. (The store never holds the latter.)
inline int64_t DelayQueueNs(const Policy& policy) {
  if (policy.on_limit == OnLimit::kDelay) return policy.max_delay.count();
  return ChargedOnResponse(policy) ? policy.rate.tolerance_ns() : 0;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_DELAY_QUEUE_H_
