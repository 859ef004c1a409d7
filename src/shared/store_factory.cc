#include "src/shared/store_factory.h"

#include <utility>

#include "src/shared/redis/redis_store.h"

namespace mxlimit::internal {

absl::StatusOr<std::unique_ptr<Store>> MakeStore(const StoreOptions& options) {
  absl::StatusOr<std::unique_ptr<RedisStore>> redis =
      RedisStore::Create(options);
  if (!redis.ok()) return redis.status();
  return std::unique_ptr<Store>(*std::move(redis));
}

}  // namespace mxlimit::internal
