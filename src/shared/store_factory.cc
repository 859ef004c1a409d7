#include "src/shared/store_factory.h"

#include "absl/status/status.h"

namespace mxlimit::internal {

absl::StatusOr<std::unique_ptr<Store>> MakeStore(const StoreOptions& options) {
  // Replaced by the Redis store when it lands.
  return absl::UnimplementedError("store.url: " + options.url +
                                  ": no Redis store in this build yet");
}

}  // namespace mxlimit::internal
