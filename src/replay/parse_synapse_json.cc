// Synapse's request log as TerseJsonFormatter writes it (one JSON object per
// line; see ParseSynapseJsonLine in log_parsers.h for the fields).

#include <string_view>

#include "mxlimit/user_id.h"
#include "src/replay/json_scan.h"
#include "src/replay/log_parsers.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay {
namespace {

using internal::CollectMembers;
using internal::IsPlainString;
using internal::JsonMember;
using internal::JsonSlot;
using internal::JsonType;
using internal::Scanner;

// The members a request record needs; a missing one keeps an empty key.
struct SynapseFields {
  JsonMember log, logger, time, ip_address, requester, authenticated_entity,
      method, url, protocol;
};

// Reads every member of the object into `*f` (the last of duplicates wins,
// as in Python's json module). False when the line is not one JSON object.
bool CollectFields(std::string_view line, SynapseFields* f) {
  const JsonSlot slots[] = {{"log", &f->log},
                            {"namespace", &f->logger},
                            {"time", &f->time},
                            {"ip_address", &f->ip_address},
                            {"requester", &f->requester},
                            {"authenticated_entity", &f->authenticated_entity},
                            {"method", &f->method},
                            {"url", &f->url},
                            {"protocol", &f->protocol}};
  return CollectMembers(line, slots);
}

// The figures after "Processed request: " in the message: the processing
// time, and the response's size and status when the message has them.
// kNotRequest when the message is not a finished request.
ParseResult ProcessedFigures(const JsonMember& log, int64_t* ms, LogRecord* r) {
  if (log.key.empty() || log.type != JsonType::kString) {
    return ParseResult::kNotRequest;
  }
  static constexpr std::string_view kMarker = "} Processed request: ";
  const size_t at = log.value.find(kMarker);
  if (at == std::string_view::npos) return ParseResult::kNotRequest;
  const std::string_view figures = log.value.substr(at + kMarker.size());
  Scanner s(figures);
  if (!s.SecondsAsMs(ms) || !s.Consume("sec/")) return ParseResult::kMalformed;
  // The size and status as the text format has them; a message cut short
  // leaves them unknown.
  Scanner all(figures);
  int64_t again = 0, bytes = 0;
  int status = 0;
  if (internal::ScanProcessedFigures(&all, &again, &bytes, &status)) {
    r->body_bytes = bytes;
    r->status = status;
  }
  return ParseResult::kOk;
}

// `requester` (the user acted for, a server name, or null) and
// `authenticated_entity` (who authenticated).
ParseResult ReadRequester(const SynapseFields& f, LogRecord* r) {
  const JsonMember& req = f.requester;
  if (req.key.empty() || req.type == JsonType::kNull) return ParseResult::kOk;
  if (!IsPlainString(req) || req.value.empty()) return ParseResult::kBadUser;
  if (req.value[0] != '@') {
    if (!internal::IsServerName(req.value)) return ParseResult::kBadUser;
    r->origin_server = req.value;
    return ParseResult::kOk;
  }
  // Older Synapse wrote "@a:s|@u:s" here, as the text format still does.
  std::string_view user = req.value, acting;
  if (const size_t bar = user.find('|'); bar != std::string_view::npos) {
    acting = user.substr(0, bar);
    user = user.substr(bar + 1);
  } else if (IsPlainString(f.authenticated_entity) &&
             f.authenticated_entity.value != user &&
             !f.authenticated_entity.value.empty() &&
             f.authenticated_entity.value[0] == '@') {
    acting = f.authenticated_entity.value;
  }
  if (!IsWellFormedUserId(user) ||
      (!acting.empty() && !IsWellFormedUserId(acting))) {
    return ParseResult::kBadUser;
  }
  r->user = user;
  r->acting_user = acting;
  return ParseResult::kOk;
}

ParseResult ReadRequestLine(const SynapseFields& f, LogRecord* r) {
  if (!internal::IsPlainRequestLine(f.method, f.url, f.protocol)) {
    return ParseResult::kBadRequestLine;
  }
  r->method = f.method.value;
  r->target = f.url.value;
  return ParseResult::kOk;
}

}  // namespace

ParseResult ParseSynapseJsonLine(std::string_view line, LogRecord* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Scanner s(line);
  s.SkipBlanks();
  if (s.done()) return ParseResult::kEmpty;
  if (s.peek() != '{') return ParseResult::kNotRequest;

  SynapseFields f;
  if (!CollectFields(line, &f)) return ParseResult::kMalformed;
  if (!IsPlainString(f.logger) ||
      !internal::IsSynapseAccessLogger(f.logger.value)) {
    return ParseResult::kNotRequest;
  }
  int64_t processing_ms = 0, logged_ms = 0;
  LogRecord r;
  if (ParseResult p = ProcessedFigures(f.log, &processing_ms, &r);
      p != ParseResult::kOk) {
    return p;
  }
  if (f.time.key.empty() || f.time.type != JsonType::kNumber ||
      !internal::JsonSecondsToMs(f.time.value, &logged_ms)) {
    return ParseResult::kBadTimestamp;
  }
  if (!IsPlainString(f.ip_address) ||
      !internal::LooksLikeIpAddress(f.ip_address.value)) {
    return ParseResult::kBadClientAddress;
  }
  r.client_ip = f.ip_address.value;
  if (ParseResult u = ReadRequester(f, &r); u != ParseResult::kOk) return u;
  if (ParseResult q = ReadRequestLine(f, &r); q != ParseResult::kOk) return q;
  r.time_ms = logged_ms - processing_ms;
  *out = r;
  return ParseResult::kOk;
}

}  // namespace mxlimit::replay
