// One shard of a `ShardedLimiter`: an engine, its lock, and the stable names
// of its current policies. `ShardedLimiter` owns an array of them; the
// library's `SharedLimiter` (src/shared/shared_core.h) drives the same array
// through the engine protocol of engine.h, reaching it through
// `ShardedLimiter::internal_shards()`.
//
// Internal: not installed, not part of the public API.

#ifndef MXLIMIT_ENGINE_SHARD_H_
#define MXLIMIT_ENGINE_SHARD_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "mxlimit/decision.h"
#include "mxlimit/internal/mutex.h"
#include "src/engine/engine.h"

namespace mxlimit {
namespace internal {

// One cache line (or more) per shard: a shard's lock is written by every
// check that takes it, and must not share a line with a neighbour's.
struct alignas(64) Shard {
  mutable Mutex mu;
  std::unique_ptr<Engine> engine ABSL_PT_GUARDED_BY(mu);
  // Policy names by PolicyId of the engine's current set, pointing into the
  // owning limiter's interned names, which never shrink: decisions handed
  // out before a reload keep valid views.
  std::vector<std::string_view> names ABSL_GUARDED_BY(mu);
  // The layer name of each policy, likewise interned.
  std::vector<std::string_view> layers ABSL_GUARDED_BY(mu);
};

// Points `d.policy`, `d.layer` and their shadow counterparts at the stable
// copies of the names. `ip` and `user` are the shards that decided each
// scope (the same shard when one holds both).
void PinNames(const Shard& ip, const Shard& user, Decision& d)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ip.mu, user.mu);

}  // namespace internal
}  // namespace mxlimit

#endif  // MXLIMIT_ENGINE_SHARD_H_
