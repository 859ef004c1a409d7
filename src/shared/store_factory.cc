#include "src/shared/store_factory.h"

#include <utility>

#include "src/options/store_url.h"
#include "src/shared/redis/cluster_store.h"
#include "src/shared/redis/redis_store.h"

namespace mxlimit::internal {

absl::StatusOr<std::unique_ptr<Store>> MakeStore(const StoreOptions& options) {
  if (IsClusterStoreUrl(options.url)) {
    absl::StatusOr<std::unique_ptr<ClusterStore>> cluster =
        ClusterStore::Create(options);
    if (!cluster.ok()) return cluster.status();
    return std::unique_ptr<Store>(*std::move(cluster));
  }
  absl::StatusOr<std::unique_ptr<RedisStore>> redis =
      RedisStore::Create(options);
  if (!redis.ok()) return redis.status();
  return std::unique_ptr<Store>(*std::move(redis));
}

}  // namespace mxlimit::internal
