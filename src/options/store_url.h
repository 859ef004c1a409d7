// `store.url` parsed: the one grammar that options validation
// (StoreUrlProblem, mxlimit/options.h) and the Redis store both apply, so a
// URL the loader accepts is exactly a URL the store connects to.
//
// Accepted forms (docs/config.md, `store.url`):
//   redis://HOST:PORT[/DB]
//   redis://[USER]:PASSWORD@HOST:PORT[/DB]   HOST a DNS name, an IPv4 address
//                                            or a bracketed IPv6 address
//   rediss://...                             the same over TLS
//   redis-sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/NAME[/DB]
//                                            the primary NAME that these
//                                            Sentinels name
//   redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]
//                                            seed nodes of a Redis Cluster
//                                            (database 0 only)
//   unix:///PATH[?db=DB]
// The port is required. USER and PASSWORD may be percent-encoded (`%25` for
// `%`); everything before the last '@' is user information.
//
// Internal: not installed.

#ifndef MXLIMIT_OPTIONS_STORE_URL_H_
#define MXLIMIT_OPTIONS_STORE_URL_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mxlimit::internal {

// Where a store connects, and how it authenticates.
struct StoreEndpoint {
  // TCP when `unix_path` is empty: `host` without brackets, `port` 1-65535.
  std::string host;
  int port = 0;
  std::string unix_path;
  // AUTH: PASSWORD alone, or USER and PASSWORD (Redis 6 ACLs), both
  // percent-decoded. No AUTH when `password` is empty.
  std::string user;
  std::string password;
  // SELECT, when not 0.
  int db = 0;
  // `rediss://`: TLS over the TCP connection (StoreOptions::tls).
  bool tls = false;
  // `redis-sentinel://`: the Sentinels to ask, in the URL's order, and the
  // name of the primary they watch; `host` and `port` are then empty (the
  // store connects to whichever primary the Sentinels name).
  struct HostPort {
    std::string host;
    int port = 0;
  };
  std::vector<HostPort> sentinels;
  std::string master_name;
  // `redis-cluster://`: the seed nodes asked for the slot map; `host` and
  // `port` are then empty (cluster_store.h).
  std::vector<HostPort> cluster_nodes;
};

// Whether `url` names a Redis Cluster (`redis-cluster://`): its bucket keys
// then carry hash tags (store_keys.h).
bool IsClusterStoreUrl(std::string_view url);

// Whether `url` asks for TLS (`rediss://`), and what `store.tls` beside any
// other URL is told: the one rule of ValidateStoreOptions and the YAML
// loader.
bool IsTlsStoreUrl(std::string_view url);
inline constexpr std::string_view kStoreTlsWithoutTls =
    "given for a store URL without TLS; use rediss://HOST:PORT or remove "
    "store.tls";

// The endpoint `url` names, or InvalidArgument whose message is what
// StoreUrlProblem returns: "got URL, expected SHAPES: WHY", without a field
// name (the caller knows whether it read `store.url` or `--store`). The
// message quotes the URL only through RedactStoreUrl.
absl::StatusOr<StoreEndpoint> ParseStoreUrl(std::string_view url);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_OPTIONS_STORE_URL_H_
