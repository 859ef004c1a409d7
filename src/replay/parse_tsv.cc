// mxlimit's own replay format: TIME_MS METHOD TARGET IP USER [STATUS [BYTES]].

#include <string_view>

#include "mxlimit/user_id.h"
#include "src/replay/log_parsers.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay {

using internal::Scanner;

ParseResult ParseTsvLine(std::string_view line, LogRecord* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Scanner s(line);
  s.SkipBlanks();
  if (s.done()) return ParseResult::kEmpty;

  std::string_view fields[7];
  int n = 0;
  while (!s.done()) {
    if (n == 7) return ParseResult::kMalformed;  // an eighth field
    fields[n++] = s.TakeField();
    s.SkipBlanks();
  }
  if (n < 5) {
    // A lone word or two is rarely a truncated tsv row; it is something else.
    return n < 3 ? ParseResult::kNotRequest : ParseResult::kMalformed;
  }

  LogRecord r;
  Scanner time(fields[0]);
  int64_t ms = 0;
  if (!time.Digits(18, &ms) || !time.done()) {
    return ParseResult::kBadTimestamp;
  }
  r.time_ms = ms;
  r.method = fields[1];
  r.target = fields[2];
  if (!internal::IsHttpMethod(r.method) ||
      !internal::IsRequestTarget(r.target)) {
    return ParseResult::kBadRequestLine;
  }
  r.client_ip = fields[3];
  if (!internal::LooksLikeIpAddress(r.client_ip)) {
    return ParseResult::kBadClientAddress;
  }
  const std::string_view who = fields[4];
  if (who.size() >= 3 && who.front() == '{' && who.back() == '}') {
    // A federation request, written as Synapse's access log writes its
    // requester: the origin server in braces.
    const std::string_view origin = who.substr(1, who.size() - 2);
    if (!IsWellFormedServerName(origin)) return ParseResult::kBadUser;
    r.origin_server = origin;
  } else if (who != "-") {
    if (!IsWellFormedUserId(who)) return ParseResult::kBadUser;
    r.user = who;
  }
  // Optional: how the request ended, STATUS then BYTES.
  if (n >= 6) {
    Scanner status(fields[5]);
    if (!status.FixedDigits(3, &r.status) || !status.done()) {
      return ParseResult::kMalformed;
    }
  }
  if (n == 7) {
    Scanner bytes(fields[6]);
    if (!bytes.Digits(18, &r.body_bytes) || !bytes.done()) {
      return ParseResult::kMalformed;
    }
  }
  *out = r;
  return ParseResult::kOk;
}

}  // namespace mxlimit::replay
