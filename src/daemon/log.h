// -----------------------------------------------------------------------------
// File: daemon/log.h
// -----------------------------------------------------------------------------
//
// mxlimitd's log: one line per event on stderr, logfmt style
// (`ts=2026-12-02T05:45:21Z level=info msg="reloaded" file=/etc/mx.yaml`),
// which journald, Loki and `grep` all read. Values are quoted when they hold
// anything but plain characters and escaped (LogfmtValue), so a value can
// never break the line. Requests are not logged: the proxy's access log
// has them. Access tokens are never logged.
//
// Example:
//   mxlimit::daemon::Log("info", "listening", {{"addr", "127.0.0.1:8089"}});

#ifndef MXLIMIT_DAEMON_LOG_H_
#define MXLIMIT_DAEMON_LOG_H_

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace mxlimit::daemon {

using LogField = std::pair<std::string_view, std::string_view>;

// `value` as a logfmt value: as is when it is plain (letters, digits and
// `._-:/@[]+,`), else in double quotes, with a backslash before a double
// quote or a backslash, \n \r \t, and other controls and bytes from 0x7F up
// as \xNN. A single quote is not escaped: logfmt quotes only with double
// quotes.
std::string LogfmtValue(std::string_view value);

// Writes one line to stderr. Thread-safe (one write(2) per line).
void Log(std::string_view level, std::string_view message,
         std::initializer_list<LogField> fields = {});

// The same, with fields built at run time.
void LogFields(std::string_view level, std::string_view message,
               std::span<const std::pair<std::string, std::string>> fields);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_LOG_H_
