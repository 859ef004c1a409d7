// nginx's "combined" access-log format.

#include <string_view>

#include "src/replay/log_parsers.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay {
namespace {

using internal::Scanner;

int MonthFromAbbreviation(std::string_view m) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr",
                                                 "May", "Jun", "Jul", "Aug",
                                                 "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (m == kMonths[i]) return i + 1;
  }
  return 0;
}

// "30/Nov/2026:10:00:00 +0000" → ms since the epoch, UTC.
bool ParseTimeLocal(std::string_view text, int64_t* ms) {
  if (text.size() != 26) return false;
  Scanner s(text);
  int d, y, h, mi, sec, oh, om;
  if (!s.FixedDigits(2, &d) || !s.Consume("/")) return false;
  int mo = MonthFromAbbreviation(text.substr(3, 3));
  if (mo == 0) return false;
  s = Scanner(text.substr(6));
  if (!(s.Consume("/") && s.FixedDigits(4, &y) && s.Consume(":") &&
        s.FixedDigits(2, &h) && s.Consume(":") && s.FixedDigits(2, &mi) &&
        s.Consume(":") && s.FixedDigits(2, &sec) && s.Consume(" "))) {
    return false;
  }
  int sign = s.Consume("+") ? 1 : (s.Consume("-") ? -1 : 0);
  if (sign == 0 || !s.FixedDigits(2, &oh) || !s.FixedDigits(2, &om)) {
    return false;
  }
  if (!internal::IsValidDate(y, mo, d) || h > 23 || mi > 59 || sec > 60 ||
      oh > 23 || om > 59) {
    return false;
  }
  int64_t offset_ms = sign * (int64_t{oh} * 60 + om) * 60'000;
  *ms = internal::CivilToEpochMs(y, mo, d, h, mi, sec, 0) - offset_ms;
  return true;
}

bool IsNginxRequestId(std::string_view id);

// The trailing fields after $body_bytes_sent: exactly three quoted fields
// ending the line (referer, user agent, "$http_x_forwarded_for"), or four
// (the same and "$request_id", mxlimitd's feed format). The header is left
// empty when "-". Both are left empty for plain combined and for any other
// extension (a fourth field that is no request id), whose trailing fields
// mean something else.
void ReadTrailingFields(std::string_view tail, LogRecord& r) {
  Scanner s(tail);
  std::string_view referer, agent, header, id;
  // nginx escapes '"' in variables as \x22, so quotes delimit the fields.
  if (!(s.Consume(" \"") && s.TakeUntil("\" \"", &referer) &&
        s.TakeUntil("\" \"", &agent) && s.TakeUntil("\"", &header))) {
    return;
  }
  if (!s.done()) {
    if (!(s.Consume(" \"") && s.TakeUntil("\"", &id) && s.done())) return;
    if (!IsNginxRequestId(id)) return;
    r.request_id = id;
  }
  r.forwarded_for = header == "-" ? std::string_view() : header;
}

// nginx's $request_id: 32 lower-case hex digits. Only that shape is read as
// one, so that other four-field extensions keep meaning what they mean.
bool IsNginxRequestId(std::string_view id) {
  if (id.size() != 32) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

ParseResult ParseNginxLine(std::string_view line, LogRecord* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Scanner s(line);
  s.SkipBlanks();
  if (s.done()) return ParseResult::kEmpty;

  LogRecord r;
  std::string_view remote_user, time_local, request;
  if (!s.TakeUntil(" - ", &r.client_ip) || !s.TakeUntil(" [", &remote_user) ||
      !s.TakeUntil("] \"", &time_local)) {
    return ParseResult::kNotRequest;
  }
  if (!internal::LooksLikeIpAddress(r.client_ip)) {
    // Not even an address first: this is not an nginx line at all.
    return ParseResult::kNotRequest;
  }
  if (!ParseTimeLocal(time_local, &r.time_ms)) {
    return ParseResult::kBadTimestamp;
  }
  // nginx escapes '"' inside $request as \x22, so the next quote ends it.
  if (!s.TakeUntil("\" ", &request)) return ParseResult::kMalformed;
  int status = 0;
  int64_t bytes = 0;
  if (!s.FixedDigits(3, &status) || !s.Consume(" ") || !s.Digits(18, &bytes) ||
      !(s.done() || s.peek() == ' ')) {
    return ParseResult::kMalformed;
  }

  r.status = status;
  r.body_bytes = bytes;
  ReadTrailingFields(s.rest(), r);

  Scanner req(request);
  std::string_view protocol;
  if (!req.TakeUntil(" ", &r.method) || !req.TakeUntil(" ", &r.target)) {
    return ParseResult::kBadRequestLine;
  }
  protocol = req.rest();
  if (!internal::IsHttpMethod(r.method) ||
      !internal::IsRequestTarget(r.target) ||
      !internal::IsHttpProtocol(protocol)) {
    return ParseResult::kBadRequestLine;
  }
  *out = r;
  return ParseResult::kOk;
}

}  // namespace mxlimit::replay
