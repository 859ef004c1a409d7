// The reader of secret files (`store.key_secret_file`, mxlimitd's
// `--store-secret-file`): one set of rules for what a secret file may be.
//
// Internal: not installed.

#ifndef MXLIMIT_UTIL_SECRET_FILE_H_
#define MXLIMIT_UTIL_SECRET_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace mxlimit::internal {

// Larger than any secret; a bigger file is the wrong file.
inline constexpr size_t kMaxSecretFileBytes = 4096;

// The contents of the regular file at `path`, with one trailing newline
// removed (what `echo` or an editor leaves). Only a regular file: a FIFO or
// a device would block or never end, so it is opened non-blocking and
// refused. At most kMaxSecretFileBytes are read.
//
// Errors carry no path and no field name (the caller adds both):
// "cannot open: <strerror>" and "cannot read: <strerror>" with errno's code
// (absl::ErrnoToStatus), and InvalidArgument "is not a regular file" or
// "is over 4096 bytes; is this the right file?". The length of the secret
// is the caller's to check.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_SECRET_FILE_H_
