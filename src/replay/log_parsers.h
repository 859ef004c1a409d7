// -----------------------------------------------------------------------------
// File: replay/log_parsers.h
// -----------------------------------------------------------------------------
//
// One parser per access-log format `mxlimit replay` reads, and format
// auto-detection. A parser takes one line (without its '\n'; a trailing '\r'
// is tolerated) and fills a `LogRecord` whose views point into that line.
//
// All parsers are allocation-free, never throw, and reject what is not a
// request: a rejected line leaves `*out` untouched and returns the reason.
// They check the shape of every field they return (method token, target form,
// address characters, user ID syntax and length), so garbage and binary junk
// are rejected instead of minting odd bucket keys.
//
// Example:
//   std::string_view lines[] = {first, second, third};
//   LogFormat format = DetectFormat(lines);
//   LogRecord record;
//   if (ParseLogLine(format, line, &record) == ParseResult::kOk) {
//     limiter.Check(...record...);
//   }

#ifndef MXLIMIT_REPLAY_LOG_PARSERS_H_
#define MXLIMIT_REPLAY_LOG_PARSERS_H_

#include <array>
#include <span>
#include <string_view>

#include "src/replay/log_record.h"

namespace mxlimit::replay {

// -----------------------------------------------------------------------------
// ParseTsvLine
// -----------------------------------------------------------------------------
//
// mxlimit's own format: `TIME_MS METHOD TARGET IP USER [STATUS [BYTES]]`,
// fields separated by runs of spaces and/or tabs; leading and trailing blanks
// are ignored.
//   - TIME_MS: a non-negative decimal integer (at most 18 digits), taken as is.
//   - USER: "-" for anonymous, otherwise a Matrix user ID (`@local:server`,
//     visible ASCII, at most 255 bytes).
//   - STATUS (three digits) and BYTES (the response body's, at most 18
//     digits): how the request ended, optional. Five to seven fields: an
//     eighth makes the line malformed, because a silently ignored column
//     usually means the producer wrote another format.
ParseResult ParseTsvLine(std::string_view line, LogRecord* out);

// -----------------------------------------------------------------------------
// ParseSynapseLine
// -----------------------------------------------------------------------------
//
// A "Processed request" line of Synapse's request log (loggers
// `synapse.access.http.<tag>` and `synapse.access.https.<tag>`), written with
// Synapse's default line format:
//
//   2026-11-30 10:00:00,250 - synapse.access.http.8008 - 473 - INFO -
//   PUT-1042 - 203.0.113.9 - 8008 - {@alice:example.org} Processed request:
//   0.250sec/0.000sec (0.010sec, 0.000sec) (0.001sec/0.004sec/2) 62B 200
//   "PUT /_matrix/client/v3/... HTTP/1.1" "Element/1.11.80" [0 dbevts]
//
// Accepted variants: "PUT-1042 - addr" and "PUT-1042- addr" around the
// request id; the "(ru) (db)" and "ru=(…) db=(…)" timing layouts; a status
// with a trailing '!' (client went away); any user agent and tail.
//
// Time: the timestamp is when the request *finished*, in the server's local
// zone. `time_ms` = that timestamp read as if it were UTC, in ms since the
// Unix epoch, minus the processing time (the first number after "Processed
// request:"), i.e. the arrival time. Reading local time as UTC is harmless
// because only differences matter; across a DST change the arrival times jump
// by an hour (forward: a pause; back: time going backwards, which the limiter
// treats as granting nothing).
//
// Requester (the braces):
//   - "{None}": anonymous, `user` empty.
//   - "{@u:s}": `user` = "@u:s".
//   - "{@a:s|@u:s}": the first user authenticated and acts for the second
//     (an admin puppeting, an appservice sending as one of its users).
//     `user` = "@u:s" (the acted-for user) and `acting_user` = "@a:s". The
//     acted-for user is charged because the request is that user's action
//     (the message appears from them), it is the identity Synapse's own rate
//     limiter charges, and charging the authenticated one would make every
//     puppet of a bridge share one bucket.
//   - "{other.server}" (no '@'): a federation request. Federation requests
//     are server-to-server, so there is no user to charge: `user` is empty
//     (per-IP policies still apply, by the remote server's address) and
//     `origin_server` holds the name.
//
// Not requests (kNotRequest): other loggers, traceback lines, "Received
// request" debug lines (they would count each request twice), anything that
// does not start with a Synapse timestamp.
ParseResult ParseSynapseLine(std::string_view line, LogRecord* out);

// -----------------------------------------------------------------------------
// ParseNginxLine
// -----------------------------------------------------------------------------
//
// nginx's "combined" format:
//   $remote_addr - $remote_user [$time_local] "$request" $status
//   $body_bytes_sent "$http_referer" "$http_user_agent"
// Fields after $body_bytes_sent are not checked, so "combined" extended with
// more trailing fields parses too, with one exception: when exactly one more
// quoted field follows "$http_user_agent" and ends the line, it is read as
// "$http_x_forwarded_for" (the usual way to log it behind a load balancer)
// into `forwarded_for` ("-" leaves it empty). The parser does not resolve
// it: which hops to believe is the caller's `--trusted-proxy` decision.
// When exactly two more quoted fields follow, the first is that header and
// the second "$request_id" (mxlimitd's feed format, docs/deploy-nginx.md):
// read into `request_id` when it is one (32 lower-case hex digits); any
// other fourth field leaves both empty.
//
// Time: `30/Nov/2026:10:00:00 +0100`, converted to UTC using the offset, in
// ms since the Unix epoch (one-second resolution; nginx logs when the request
// finished and has no processing time in "combined", so that is the time).
// `$remote_user` is HTTP basic auth, not a Matrix user: `user` is always
// empty. A request field that is not "METHOD TARGET HTTP/x" ("-", TLS bytes
// sent to a plain port, no protocol) is kBadRequestLine.
ParseResult ParseNginxLine(std::string_view line, LogRecord* out);

// -----------------------------------------------------------------------------
// ParseSynapseJsonLine
// -----------------------------------------------------------------------------
//
// A "Processed request" record of the same Synapse access loggers, written by
// `synapse.logging.TerseJsonFormatter`: one flat JSON object per line with
// the message in `log`, the logger in `namespace`, `level`, `time` (Unix
// seconds, a float rounded to 10 ms) and the request context Synapse's
// LoggingContextFilter adds: `request` (the request id), `ip_address`,
// `site_tag`, `requester`, `authenticated_entity`, `method`, `url`,
// `protocol`, `user_agent`. Example (one line):
//
//   {"log":"203.0.113.9 - 8008 - {@alice:example.org} Processed request:
//   0.250sec/...","namespace":"synapse.access.http.8008","level":"INFO",
//   "time":1796032800.25,"request":"PUT-1042","ip_address":"203.0.113.9",
//   "site_tag":"8008","requester":"@alice:example.org",
//   "authenticated_entity":"@alice:example.org","method":"PUT",
//   "url":"/_matrix/...","protocol":"HTTP/1.1","user_agent":"Element"}
//
// Time: `time` is when the record was logged (the request finished), so
// `time_ms` = time * 1000 minus the processing time read from `log` (the
// first number after "Processed request:"), as for ParseSynapseLine. A
// record without `time` (Synapse's plain `JsonFormatter`) is kBadTimestamp.
//
// Requester: `requester` is the user acted for (or the origin server of a
// federation request, or null when anonymous) and `authenticated_entity` the
// one who authenticated; when both are users and differ, `user` is the
// former and `acting_user` the latter, as "{@a|@u}" in the text format.
//
// The fields the record views (address, user, method, url, protocol,
// namespace) must not contain JSON escapes: the views point into the line
// and are not decoded, and no well-formed value of theirs needs one. Members
// may come in any order and others (`exc_info`, a custom formatter's extra
// fields) are skipped; anything that is not one JSON object of at most 8
// levels (a truncated line, garbage) is kNotRequest or kMalformed.
ParseResult ParseSynapseJsonLine(std::string_view line, LogRecord* out);

// -----------------------------------------------------------------------------
// ParseCaddyLine
// -----------------------------------------------------------------------------
//
// Caddy's access log (the `log` directive, JSON encoder): one object per
// request from a logger named "http.log.access" or "http.log.access.<name>":
//
//   {"level":"info","ts":1796032800.123,"logger":"http.log.access.log0",
//   "msg":"handled request","request":{"remote_ip":"10.0.0.2",
//   "remote_port":"51234","client_ip":"203.0.113.9","proto":"HTTP/2.0",
//   "method":"GET","host":"matrix.example.org","uri":"/_matrix/...",
//   "headers":{...},"tls":{...}},"bytes_read":0,"user_id":"",
//   "duration":0.0012,"size":512,"status":200,"resp_headers":{...}}
//
// Client: `request.client_ip` (Caddy has already applied its own
// `trusted_proxies` to it), else `request.remote_ip` (Caddy before 2.7).
// User: none. Caddy cannot know the Matrix user (the access token is opaque
// to it, and `user_id` is HTTP basic auth, like nginx's $remote_user), so
// only per-IP policies apply, as for nginx.
// Time: `ts` (Unix seconds, a float) is when the entry was written, after
// the response, so `time_ms` = ts * 1000 minus `duration` (seconds). Both
// must be plain JSON numbers (Caddy's default encoder); a `time_format` or
// `duration_format` that writes strings makes the line kBadTimestamp.
// Nested objects (headers, tls) are skipped without being interpreted, but
// for the `X-Request-Id` response header (`resp_headers`, an array of
// strings), whose first value is read into `request_id` when it looks like
// one (see IsRequestId):
// mxlimitd's feed matches completions by it (docs/deploy-caddy.md).
ParseResult ParseCaddyLine(std::string_view line, LogRecord* out);

// A request id as the proxies write one (nginx's $request_id, 32 hex
// digits; Caddy's {http.request.uuid}): 1 to kMaxRequestIdBytes letters,
// digits, '-', '_' or '.'.
inline constexpr size_t kMaxRequestIdBytes = 64;
bool IsRequestId(std::string_view id);

// Calls the parser for `format`.
ParseResult ParseLogLine(LogFormat format, std::string_view line,
                         LogRecord* out);

// -----------------------------------------------------------------------------
// StripLogPrefix
// -----------------------------------------------------------------------------
//
// Removes what a log collector put in front of a line of any format, setting
// `*inner` to the rest (a view into `line`). False, `*inner` untouched, when
// `line` does not start with that prefix (`LogPrefix::kNone` always strips
// nothing and succeeds).
//   - kJournald: `journalctl`'s default "short" output,
//     "Dec 01 10:00:00 host python3[123]: " (day zero- or space-padded),
//     "short-precise" (the same with ".123456" seconds), or "short-iso",
//     "2026-12-01T10:00:00+0000 host python3[123]: "; the identifier may
//     lack the "[pid]".
//   - kDocker: `docker compose logs`' "synapse_1  | " or "synapse-1  | "
//     (service name, padding, "| "), then optionally the RFC 3339 time that
//     `--timestamps` adds ("2026-11-30T10:00:00.123456789Z "); or that time
//     alone, as `docker logs --timestamps` prints it.
// The prefix's own time is ignored: journald's has no year and one-second
// resolution, and every supported line format carries its own, better time
// (Synapse's has the date and milliseconds). A line whose inner text has no
// time of its own is therefore not a request in any format.
bool StripLogPrefix(LogPrefix prefix, std::string_view line,
                    std::string_view* inner);

// Strips `prefix`, then parses the rest as `format`. A line without the
// prefix (journalctl's "-- Boot ... --" markers, say) is kNotRequest.
ParseResult ParsePrefixedLogLine(LogPrefix prefix, LogFormat format,
                                 std::string_view line, LogRecord* out);

// The prefix most of `first_lines` carry (kNone when none carries one; ties
// go to journald).
LogPrefix DetectLogPrefix(std::span<const std::string_view> first_lines);

// -----------------------------------------------------------------------------
// DetectFormat
// -----------------------------------------------------------------------------
//
// Guesses the format of a log from its first lines (pass e.g. the first 100
// non-empty lines, with any prefix already stripped; more lines give a surer
// vote). Every line is offered to every parser; the format whose parser
// accepts the most lines wins, ties going to Synapse, then synapse-json, then
// Caddy, then nginx, then tsv (the more specific format first).
//
// When no parser accepts any line, the default is Synapse if any line carries
// Synapse's log prefix ("YYYY-MM-DD HH:MM:SS,mmm - logger - "): a
// homeserver.log often starts with many startup lines before its first
// request. Otherwise the default is tsv, whose per-line errors are the
// simplest to read. `FormatDetection::recognized` tells the two cases apart so
// the CLI can warn.
struct FormatDetection {
  LogFormat format = LogFormat::kTsv;
  // Whether at least one line parsed in the chosen format.
  bool recognized = false;
  // Accepted lines per format, indexed by `static_cast<int>(LogFormat)`.
  std::array<int, kLogFormatCount> votes{};
};

FormatDetection DetectFormatWithVotes(
    std::span<const std::string_view> first_lines);

inline LogFormat DetectFormat(std::span<const std::string_view> first_lines) {
  return DetectFormatWithVotes(first_lines).format;
}

}  // namespace mxlimit::replay

#endif  // MXLIMIT_REPLAY_LOG_PARSERS_H_
