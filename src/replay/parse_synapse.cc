// Synapse's request log ("Processed request" lines of synapse.access.*).

#include <string_view>

#include "mxlimit/user_id.h"
#include "src/replay/log_parsers.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay {
namespace {

using internal::Scanner;

// "YYYY-MM-DD HH:MM:SS,mmm". kNotRequest when the shape is wrong (traceback
// lines, other formats); kBadTimestamp when the shape is right but a field is
// out of range.
ParseResult ParseTimestamp(Scanner* s, int64_t* ms) {
  int y, mo, d, h, mi, sec, milli;
  if (!(s->FixedDigits(4, &y) && s->Consume("-") && s->FixedDigits(2, &mo) &&
        s->Consume("-") && s->FixedDigits(2, &d) && s->Consume(" ") &&
        s->FixedDigits(2, &h) && s->Consume(":") && s->FixedDigits(2, &mi) &&
        s->Consume(":") && s->FixedDigits(2, &sec) && s->Consume(",") &&
        s->FixedDigits(3, &milli))) {
    return ParseResult::kNotRequest;
  }
  if (!internal::IsValidDate(y, mo, d) || h > 23 || mi > 59 || sec > 60) {
    return ParseResult::kBadTimestamp;
  }
  *ms = internal::CivilToEpochMs(y, mo, d, h, mi, sec, milli);
  return ParseResult::kOk;
}

// "(0.010sec, 0.000sec) (0.001sec/0.004sec/2) " or
// "ru=(0.010sec, 0.000sec) db=(0.001sec/0.004sec/2) ".
bool SkipUsage(Scanner* s) {
  int64_t ignored = 0;
  bool labelled = s->Consume("ru=");
  if (!(s->Consume("(") && s->SecondsAsMs(&ignored) && s->Consume("sec, ") &&
        s->SecondsAsMs(&ignored) && s->Consume("sec) "))) {
    return false;
  }
  if (labelled && !s->Consume("db=")) return false;
  return s->Consume("(") && s->SecondsAsMs(&ignored) && s->Consume("sec/") &&
         s->SecondsAsMs(&ignored) && s->Consume("sec/") &&
         s->Digits(18, &ignored) && s->Consume(") ");
}

// The braces: "None", "@u:s", "@a:s|@u:s", or a server name.
ParseResult ParseRequester(std::string_view text, LogRecord* r) {
  if (text == "None") return ParseResult::kOk;
  if (!text.empty() && text[0] == '@') {
    size_t bar = text.find('|');
    if (bar == std::string_view::npos) {
      if (!IsWellFormedUserId(text)) return ParseResult::kBadUser;
      r->user = text;
      return ParseResult::kOk;
    }
    std::string_view acting = text.substr(0, bar);
    std::string_view acted_for = text.substr(bar + 1);
    if (!IsWellFormedUserId(acting) || !IsWellFormedUserId(acted_for)) {
      return ParseResult::kBadUser;
    }
    r->user = acted_for;
    r->acting_user = acting;
    return ParseResult::kOk;
  }
  if (!internal::IsServerName(text)) return ParseResult::kBadUser;
  r->origin_server = text;
  return ParseResult::kOk;
}

}  // namespace

namespace internal {

bool ScanProcessedFigures(Scanner* s, int64_t* processing_ms,
                          int64_t* body_bytes, int* status) {
  int64_t ignored = 0;
  if (!(s->SecondsAsMs(processing_ms) && s->Consume("sec/") &&
        s->SecondsAsMs(&ignored) && s->Consume("sec ") && SkipUsage(s) &&
        s->Digits(18, body_bytes) && s->Consume("B ") &&
        s->FixedDigits(3, status))) {
    return false;
  }
  s->Consume("!");  // the client went away before the response was sent
  return true;
}

}  // namespace internal

ParseResult ParseSynapseLine(std::string_view line, LogRecord* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Scanner s(line);
  s.SkipBlanks();
  if (s.done()) return ParseResult::kEmpty;

  LogRecord r;
  int64_t finished_ms = 0;
  if (ParseResult t = ParseTimestamp(&s, &finished_ms); t != ParseResult::kOk) {
    return t;
  }
  std::string_view logger, lineno, level, request_id;
  if (!s.Consume(" - ") || !s.TakeUntil(" - ", &logger) ||
      !internal::IsSynapseAccessLogger(logger)) {
    return ParseResult::kNotRequest;
  }
  if (!s.TakeUntil(" - ", &lineno) || !s.TakeUntil(" - ", &level)) {
    return ParseResult::kMalformed;
  }
  // "PUT-1042 - 203.0.113.9" or "PUT-1042- 203.0.113.9".
  request_id = s.TakeField();
  if (request_id.size() > 1 && request_id.back() == '-') {
    if (!s.Consume(" ")) return ParseResult::kMalformed;
  } else if (!s.Consume(" - ")) {
    return ParseResult::kMalformed;
  }

  std::string_view site_tag, requester;
  if (!s.TakeUntil(" - ", &r.client_ip) || !s.TakeUntil(" - ", &site_tag)) {
    return ParseResult::kMalformed;
  }
  if (!s.Consume("{") || !s.TakeUntil("} Processed request: ", &requester)) {
    // E.g. a "Received request" debug line: not a finished request.
    return ParseResult::kNotRequest;
  }
  if (!internal::LooksLikeIpAddress(r.client_ip)) {
    return ParseResult::kBadClientAddress;
  }
  if (ParseResult u = ParseRequester(requester, &r); u != ParseResult::kOk) {
    return u;
  }

  int64_t processing_ms = 0;
  if (!internal::ScanProcessedFigures(&s, &processing_ms, &r.body_bytes,
                                      &r.status)) {
    return ParseResult::kMalformed;
  }

  // "METHOD TARGET PROTOCOL": Twisted split the request line on spaces, so
  // none of the three contains one.
  std::string_view protocol;
  if (!s.Consume(" \"") || !s.TakeUntil(" ", &r.method) ||
      !s.TakeUntil(" ", &r.target) || !s.TakeUntil("\"", &protocol)) {
    return ParseResult::kBadRequestLine;
  }
  if (!internal::IsHttpMethod(r.method) ||
      !internal::IsRequestTarget(r.target) ||
      !internal::IsHttpProtocol(protocol)) {
    return ParseResult::kBadRequestLine;
  }
  if (!s.done() && s.peek() != ' ') return ParseResult::kMalformed;

  r.time_ms = finished_ms - processing_ms;
  *out = r;
  return ParseResult::kOk;
}

}  // namespace mxlimit::replay
