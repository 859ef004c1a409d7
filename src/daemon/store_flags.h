// -----------------------------------------------------------------------------
// File: daemon/store_flags.h
// -----------------------------------------------------------------------------
//
// What mxlimitd's `--store URL` and `--store-secret-file FILE` set over the
// config's `store:` section. Read once at start and applied to every load of
// the config, the first and each SIGHUP reload alike: a reload then sees the
// same store section as the start, which SharedLimiter::Reload requires.
//
// Example:
//   absl::StatusOr<StoreOverrides> store = StoreOverrides::FromFlags(flags);
//   if (!store.ok()) { /* exit 1 */ }
//   absl::Status s = store->Apply(config);  // after each LoadConfigFile

#ifndef MXLIMIT_DAEMON_STORE_FLAGS_H_
#define MXLIMIT_DAEMON_STORE_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/options.h"
#include "src/daemon/flags.h"

namespace mxlimit::daemon {

class StoreOverrides {
 public:
  // Reads `--store-secret-file` (a regular file of at least 16 bytes after
  // one trailing newline is dropped). Errors name the file.
  static absl::StatusOr<StoreOverrides> FromFlags(const Flags& flags);

  // Sets `config.store.url` and `.key_secret` where a flag gave them. Fails
  // when a store is configured without a key secret, or a secret file was
  // given without any store.
  absl::Status Apply(LimiterConfig& config) const;

 private:
  std::string url_;
  std::string key_secret_;
  std::string secret_file_;
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_STORE_FLAGS_H_
