// -----------------------------------------------------------------------------
// File: replay/log_record.h
// -----------------------------------------------------------------------------
//
// The unit `mxlimit replay` works on: one request read from an access log,
// with the few fields the limiter needs (time, method, raw target, client
// address, user). The parsers in `replay/log_parsers.h` fill it from a line of
// one of the supported formats; `ParseResult` says why a line was rejected.
//
// This is CLI support, not public API: it lives in `src/replay/` and is built
// into the `mxlimit_replay` library only.
//
// Example:
//   mxlimit::replay::LogRecord record;
//   mxlimit::replay::ParseResult r =
//       mxlimit::replay::ParseSynapseLine(line, &record);
//   if (r != mxlimit::replay::ParseResult::kOk) {
//     ReportInvalid(line_number, mxlimit::replay::ParseResultName(r));
//   }

#ifndef MXLIMIT_REPLAY_LOG_RECORD_H_
#define MXLIMIT_REPLAY_LOG_RECORD_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace mxlimit::replay {

// -----------------------------------------------------------------------------
// LogRecord
// -----------------------------------------------------------------------------
//
// Every view points into the caller's line buffer: a record is valid only as
// long as that line is (for `LineReader`, until the next `Next()` call).
struct LogRecord {
  // When the request arrived, in milliseconds. The scale depends on the
  // format (see each parser); only differences between records carry meaning.
  int64_t time_ms = 0;
  // The HTTP method as logged (an RFC 9110 token, e.g. "PUT").
  std::string_view method;
  // The raw request target as logged: path, query and all, percent-encoding
  // kept. Never empty.
  std::string_view target;
  // The client address as text (IPv4 or IPv6, possibly with a "%zone"). The
  // parsers check its shape only; `mxlimit::ParseIpAddress` has the last word.
  std::string_view client_ip;
  // The Matrix user the limiter charges, or empty when the request is
  // anonymous (no access token, or a federation request).
  std::string_view user;
  // Synapse only: the authenticated user when it acted for `user` (an admin
  // or an appservice puppeting), i.e. the first of "{@a:s|@b:s}". Empty
  // otherwise. Informational; the limiter charges `user`.
  std::string_view acting_user;
  // Synapse only: the origin server of a federation request ("{other.org}").
  // Empty otherwise. Such requests have an empty `user`.
  std::string_view origin_server;
  // nginx only: the trailing "$http_x_forwarded_for" field when the log has
  // one and it is not "-". Empty otherwise. The CLI resolves it against
  // `--trusted-proxy`; without trusted proxies `client_ip` stands.
  std::string_view forwarded_for;
  // How the request ended, where the format logs it (every format but
  // tsv, where they are optional trailing columns): the HTTP status (0:
  // not logged) and the response body's bytes (-1: not logged). Replay
  // settles policies charged on the response with them.
  int status = 0;
  int64_t body_bytes = -1;
  // The proxy's id for the request, which mxlimitd's completion feed matches
  // to the decision it made (docs/mxlimitd.md "The completion feed"): nginx's
  // "$request_id" as a fourth quoted field after "$http_user_agent", Caddy's
  // `X-Request-Id` response header. Empty when not logged.
  std::string_view request_id;
};

// -----------------------------------------------------------------------------
// LogFormat
// -----------------------------------------------------------------------------
enum class LogFormat : uint8_t {
  kTsv,      // mxlimit's own: TIME_MS METHOD TARGET IP USER [STATUS [BYTES]]
  kSynapse,  // Synapse's request log (synapse.access.http[s].<tag>)
  kNginx,    // nginx "combined" (+ an optional "$http_x_forwarded_for")
  kSynapseJson,  // the same records, by Synapse's TerseJsonFormatter
  kCaddy,        // Caddy's JSON access log (logger http.log.access*)
};

// How many `LogFormat` values there are (they are 0..kLogFormatCount-1).
inline constexpr int kLogFormatCount = 5;

// "tsv", "synapse", "nginx", "synapse-json", "caddy".
std::string_view LogFormatName(LogFormat format);

// The inverse of `LogFormatName` (exact, lower case). "auto" is not a format:
// the CLI handles it with `DetectFormat`.
std::optional<LogFormat> ParseLogFormatName(std::string_view name);

// -----------------------------------------------------------------------------
// LogPrefix
// -----------------------------------------------------------------------------
//
// What a log collector writes in front of each line of any format. A prefix
// is stripped before the line is parsed; its own time is never used (see
// `StripLogPrefix` in log_parsers.h).
enum class LogPrefix : uint8_t {
  kNone,
  kJournald,  // `journalctl` short / short-iso: "Dec 01 10:00:00 host id[1]: "
  kDocker,    // docker compose "name  | " and/or an RFC 3339 time (-t)
};

// "none", "journald", "docker".
std::string_view LogPrefixName(LogPrefix prefix);

// -----------------------------------------------------------------------------
// ParseResult
// -----------------------------------------------------------------------------
//
// Why a line did or did not yield a record. A rejected line is a normal
// outcome (logs are full of other lines), not an error: replay counts it and
// goes on.
enum class ParseResult : uint8_t {
  kOk,
  // Nothing but whitespace.
  kEmpty,
  // The line is not a request line of this format: another logger, a
  // traceback, a header, text in another format.
  kNotRequest,
  // Longer than the reader's cap; its content was skipped (set by the caller
  // from `LineReader`, never by a parser).
  kTooLong,
  // The timestamp has the right shape but an impossible value, or TIME_MS is
  // not an integer.
  kBadTimestamp,
  // The client address is missing or is not IPv4/IPv6 text.
  kBadClientAddress,
  // The requester/user field is not a Matrix user ID (or "-"/"None"), or is
  // longer than the spec's 255 bytes.
  kBadUser,
  // The HTTP request is not "METHOD TARGET HTTP/x.y" with a sane method and
  // target ("-", binary junk, no protocol, spaces in the target).
  kBadRequestLine,
  // Any other field is missing or malformed (status, timing, field count).
  kMalformed,
};

// A short lower-case phrase for reports, e.g. "bad request line".
std::string_view ParseResultName(ParseResult result);

}  // namespace mxlimit::replay

#endif  // MXLIMIT_REPLAY_LOG_RECORD_H_
