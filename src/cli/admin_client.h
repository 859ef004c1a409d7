// -----------------------------------------------------------------------------
// File: cli/admin_client.h
// -----------------------------------------------------------------------------
//
// `mxlimit admin`'s side of mxlimitd's admin API (src/daemon/admin_api.h):
// one HTTP/1.1 request per connection, to a unix socket or a loopback TCP
// port, with a deadline on the whole exchange.
//
// Example:
//   absl::StatusOr<AdminAnswer> a = CallAdmin(
//       "unix:/run/mxlimit/admin.sock", token, "GET",
//       "/_mxlimit/admin/v1/tiers", "");

#ifndef MXLIMIT_CLI_ADMIN_CLIENT_H_
#define MXLIMIT_CLI_ADMIN_CLIENT_H_

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mxlimit::cli {

struct AdminAnswer {
  int status = 0;
  std::string body;
};

// `address`: "unix:PATH" or "HOST:PORT" with a numeric host ("[::1]:8090"
// for IPv6), as mxlimitd's --admin-listen. Errors: InvalidArgument for the
// address, Unavailable when it cannot connect, DeadlineExceeded, and
// DataLoss for an answer that is not HTTP.
absl::StatusOr<AdminAnswer> CallAdmin(
    std::string_view address, std::string_view token, std::string_view method,
    std::string_view target, std::string_view body,
    std::chrono::milliseconds deadline = std::chrono::milliseconds(10'000));

}  // namespace mxlimit::cli

#endif  // MXLIMIT_CLI_ADMIN_CLIENT_H_
