// -----------------------------------------------------------------------------
// File: daemon/flags.h
// -----------------------------------------------------------------------------
//
// mxlimitd's command line. `--help` prints `kUsage`, which documents every
// flag; the names are what operators' unit files and scripts say.
//
// Example:
//   mxlimit::daemon::Flags flags;
//   std::string error = mxlimit::daemon::ParseFlags(argc, argv, flags);
//   if (!error.empty()) { /* print it and kUsage, exit 2 */ }

#ifndef MXLIMIT_DAEMON_FLAGS_H_
#define MXLIMIT_DAEMON_FLAGS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/ip.h"

namespace mxlimit::daemon {

struct Flags {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 8089;
  std::string config_path;
  std::string secret_file;  // empty: mxlimitd.secret next to the config
  // Set store.url / store.key_secret over the config's (empty: keep them).
  std::string store_url;
  std::string store_secret_file;
  std::vector<Cidr> trusted_proxies;
  std::string whoami_url;  // empty: --user-key token-hash
  size_t token_cache = 100'000;
  std::chrono::seconds token_ttl{300};
  std::chrono::milliseconds whoami_timeout{2'000};
  std::vector<std::string> appservice_registrations;
  int threads = 2;
  size_t max_connections = 1024;
  size_t max_held = 10'000;
  // --feed: "unix:PATH" / "udp:HOST:PORT", each valid for ParseFeedAddress.
  std::vector<std::string> feeds;
  size_t feed_pending = 16'384;
  // --admin-listen ("unix:PATH" or a loopback HOST:PORT, valid for
  // ParseAdminListen) and --admin-token-file: both or neither.
  std::string admin_listen;
  std::string admin_token_file;
  // --state-dir (empty: nothing kept across restarts) and
  // --snapshot-interval (0: snapshots at SIGTERM only).
  std::string state_dir;
  std::chrono::seconds snapshot_interval{0};
  bool help = false;
  bool version = false;
};

extern const std::string_view kUsage;

// Parses argv into `flags`. Returns "" on success, else the error message.
std::string ParseFlags(int argc, char** argv, Flags& flags);

// "HOST:PORT" with a numeric IPv4 host or a bracketed IPv6 one
// ("[::1]:8089"). False when malformed.
bool ParseListenAddress(std::string_view text, std::string& host,
                        uint16_t& port);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_FLAGS_H_
