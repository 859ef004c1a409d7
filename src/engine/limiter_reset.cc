// Limiter's and ShardedLimiter's ResetBuckets: an operator unblocks someone
// now. A ShardedLimiter walks every shard, each under its own lock, since
// a network may span shards.

#include <string_view>

#include "mxlimit/internal/mutex.h"
#include "mxlimit/limiter.h"
#include "mxlimit/sharded_limiter.h"
#include "src/engine/engine.h"
#include "src/engine/shard_set.h"

namespace mxlimit {

absl::StatusOr<size_t> Limiter::ResetBuckets(std::string_view subject) {
  absl::StatusOr<TierSubject> s = ParseTierSubject(subject);
  if (!s.ok()) return s.status();
  return engine_->ResetBuckets(*s);
}

absl::StatusOr<size_t> ShardedLimiter::ResetBuckets(std::string_view subject) {
  absl::StatusOr<TierSubject> s = ParseTierSubject(subject);
  if (!s.ok()) return s.status();
  size_t dropped = 0;
  for (size_t i = 0; i < shard_count(); ++i) {
    internal::Shard& shard = set_->shard(i);
    internal::MutexLock lock(shard.mu);
    dropped += shard.engine->ResetBuckets(*s);
  }
  return dropped;
}

}  // namespace mxlimit
