// Builds the store a `store.url` names. Internal: not installed.

#ifndef MXLIMIT_SHARED_STORE_FACTORY_H_
#define MXLIMIT_SHARED_STORE_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "mxlimit/options.h"
#include "src/shared/store.h"

namespace mxlimit::internal {

// A `ClusterStore` for `redis-cluster://` URLs, a `RedisStore` for the
// others; InvalidArgument naming `store.url` for a URL of no known form.
absl::StatusOr<std::unique_ptr<Store>> MakeStore(const StoreOptions& options);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_STORE_FACTORY_H_
