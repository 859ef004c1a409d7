// Caddy's JSON access log (see ParseCaddyLine in log_parsers.h).

#include <string_view>

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

struct CaddyFields {
  JsonMember logger, ts, duration, request, status, size, resp_headers;
  // Inside `request`.
  JsonMember client_ip, remote_ip, method, uri, proto;
};

// "http.log.access" or "http.log.access.<name>" (one per `log` directive).
bool IsAccessLogger(std::string_view name) {
  static constexpr std::string_view kLogger = "http.log.access";
  return name.substr(0, kLogger.size()) == kLogger &&
         (name.size() == kLogger.size() || name[kLogger.size()] == '.');
}

ParseResult ReadTime(const CaddyFields& f, int64_t* ms) {
  int64_t logged = 0, duration = 0;
  if (f.ts.type != JsonType::kNumber ||
      !internal::JsonSecondsToMs(f.ts.value, &logged)) {
    return ParseResult::kBadTimestamp;
  }
  // A missing duration is 0: the entry's time is then the arrival's.
  if (!f.duration.key.empty() &&
      (f.duration.type != JsonType::kNumber ||
       !internal::JsonSecondsToMs(f.duration.value, &duration))) {
    return ParseResult::kBadTimestamp;
  }
  *ms = logged - duration;
  return ParseResult::kOk;
}

ParseResult ReadRequest(CaddyFields& f, LogRecord* r) {
  if (f.request.type != JsonType::kObject) return ParseResult::kMalformed;
  const JsonSlot slots[] = {{"client_ip", &f.client_ip},
                            {"remote_ip", &f.remote_ip},
                            {"method", &f.method},
                            {"uri", &f.uri},
                            {"proto", &f.proto}};
  if (!CollectMembers(f.request.value, slots)) return ParseResult::kMalformed;
  // client_ip is Caddy's answer after its trusted_proxies; "" when unset.
  const JsonMember& client =
      IsPlainString(f.client_ip) && !f.client_ip.value.empty() ? f.client_ip
                                                               : f.remote_ip;
  if (!IsPlainString(client) || !internal::LooksLikeIpAddress(client.value)) {
    return ParseResult::kBadClientAddress;
  }
  if (!internal::IsPlainRequestLine(f.method, f.uri, f.proto)) {
    return ParseResult::kBadRequestLine;
  }
  r->client_ip = client.value;
  r->method = f.method.value;
  r->target = f.uri.value;
  return ParseResult::kOk;
}

// The response's "status" and "size" (body bytes), where they are plain
// integers; otherwise left unknown.
void ReadOutcome(const CaddyFields& f, LogRecord* r) {
  int status = 0;
  int64_t size = 0;
  if (f.status.type == JsonType::kNumber) {
    Scanner s(f.status.value);
    if (s.FixedDigits(3, &status) && s.done()) r->status = status;
  }
  if (f.size.type == JsonType::kNumber) {
    Scanner s(f.size.value);
    if (s.Digits(18, &size) && s.done()) r->body_bytes = size;
  }
}

// The `X-Request-Id` response header, which the feed's Caddy config sets
// to {http.request.uuid} (Caddy logs each header as an array of strings):
// its first value, Caddy's own (a backend's copy is appended after it),
// when that is a plain request id; else nothing.
void ReadRequestId(const CaddyFields& f, LogRecord* r) {
  if (f.resp_headers.type != JsonType::kObject) return;
  JsonMember header;
  const JsonSlot slots[] = {{"X-Request-Id", &header}};
  if (!CollectMembers(f.resp_headers.value, slots) ||
      header.type != JsonType::kArray) {
    return;
  }
  Scanner s(header.value);
  std::string_view id;
  s.SkipBlanks();
  if (!s.Consume("[")) return;
  s.SkipBlanks();
  if (!s.Consume("\"") || !s.TakeUntil("\"", &id)) return;
  s.SkipBlanks();
  if (!(s.Consume("]") || s.Consume(",")) || !IsRequestId(id)) return;
  r->request_id = id;
}

}  // namespace

ParseResult ParseCaddyLine(std::string_view line, LogRecord* out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Scanner s(line);
  s.SkipBlanks();
  if (s.done()) return ParseResult::kEmpty;
  if (s.peek() != '{') return ParseResult::kNotRequest;

  CaddyFields f;
  const JsonSlot top[] = {{"logger", &f.logger},
                          {"ts", &f.ts},
                          {"duration", &f.duration},
                          {"request", &f.request},
                          {"status", &f.status},
                          {"size", &f.size},
                          {"resp_headers", &f.resp_headers}};
  if (!CollectMembers(line, top)) return ParseResult::kMalformed;
  if (!IsPlainString(f.logger) || !IsAccessLogger(f.logger.value)) {
    return ParseResult::kNotRequest;
  }
  LogRecord r;
  if (ParseResult t = ReadTime(f, &r.time_ms); t != ParseResult::kOk) {
    return t;
  }
  if (ParseResult q = ReadRequest(f, &r); q != ParseResult::kOk) return q;
  ReadOutcome(f, &r);
  ReadRequestId(f, &r);
  *out = r;
  return ParseResult::kOk;
}

}  // namespace mxlimit::replay
