// -----------------------------------------------------------------------------
// File: daemon/log.h
// -----------------------------------------------------------------------------
//
// mxlimitd's log: one line per event on stderr, logfmt style
// (`ts=2026-12-02T05:45:21Z level=info msg="reloaded" file=/etc/mx.yaml`),
// which journald, Loki and `grep` all read. Values are quoted when they hold
// anything but plain characters and escaped (`EscapeForOutput`), so a value
// can never break the line. Requests are not logged: the proxy's access log
// has them. Access tokens are never logged.
//
// Example:
//   mxlimit::daemon::Log("info", "listening", {{"addr", "127.0.0.1:8089"}});

#ifndef MXLIMIT_DAEMON_LOG_H_
#define MXLIMIT_DAEMON_LOG_H_

#include <initializer_list>
#include <string_view>
#include <utility>

namespace mxlimit::daemon {

using LogField = std::pair<std::string_view, std::string_view>;

// Writes one line to stderr. Thread-safe (one write(2) per line).
void Log(std::string_view level, std::string_view message,
         std::initializer_list<LogField> fields = {});

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_LOG_H_
