// -----------------------------------------------------------------------------
// File: http/request_head.h
// -----------------------------------------------------------------------------
//
// The head of one HTTP/1.x request (request line and header fields), parsed
// in place: every field is a view into the connection's buffer, so parsing
// allocates nothing. mxlimitd only ever answers authorization subrequests,
// which carry no body worth reading, so this is the whole of its HTTP input.
//
// Strict where leniency would let two parsers disagree about a request (RFC
// 9112 §2.2, §5, §6.3): no whitespace before a field's colon, no obsolete
// line folding, no bare CR, no NUL or other control byte in a field, at most
// one Content-Length value, and no Transfer-Encoding. Bare-LF line ends are
// read as CRLF, as RFC 9112 §2.2 lets a recipient do.
//
// Example:
//   mxlimit::http::HttpRequestHead head;
//   const mxlimit::http::HeadParse parsed =
//   mxlimit::http::ParseRequestHead(
//       "GET /_mxlimit/health HTTP/1.1\r\nHost: x\r\n\r\n", head);
//   // parsed.state == HeadParse::kComplete, head.target == "/_mxlimit/health"

#ifndef MXLIMIT_HTTP_REQUEST_HEAD_H_
#define MXLIMIT_HTTP_REQUEST_HEAD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mxlimit::http {

// Most header fields one request may carry. nginx sends the few its snippet
// sets; Caddy forwards all of the client's, which browsers keep well below.
inline constexpr size_t kMaxHeaderFields = 256;

// Longest request target accepted; a longer one is answered 414.
inline constexpr size_t kMaxTargetBytes = 64 * 1024;

struct HttpHeaderField {
  std::string_view name;
  std::string_view value;  // optional whitespace around it removed
};

struct HttpRequestHead {
  std::string_view method;
  std::string_view target;
  int minor_version = 1;  // HTTP/1.<minor_version>
  std::array<HttpHeaderField, kMaxHeaderFields> fields;
  size_t field_count = 0;
  // -1 when the request has no Content-Length.
  int64_t content_length = -1;
  // Whether the connection stays open after the response (HTTP/1.1 unless
  // "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
  bool keep_alive = true;

  // The value of the first field called `name` (ASCII case-insensitive), or
  // an empty view with `found` false.
  std::string_view Field(std::string_view name, bool* found = nullptr) const;
};

struct HeadParse {
  enum State { kIncomplete, kComplete, kError };
  State state = kIncomplete;
  // kComplete: bytes of the head, blank line included.
  size_t head_bytes = 0;
  // kError: the HTTP status to answer (400, 414, 431, 501, 505) and why.
  int status = 0;
  std::string_view reason;
};

// Parses the request head at the start of `buffer`. kIncomplete when the
// blank line ending the head has not arrived yet (the caller bounds how long
// it waits and how many bytes it buffers); `head` is only meaningful after
// kComplete.
HeadParse ParseRequestHead(std::string_view buffer, HttpRequestHead& head);

// Where the blank line ending a head is in `buffer`, searching from `from`
// (bytes before it were searched already), as the offset just past it; 0
// when it has not arrived.
size_t FindHeadEnd(std::string_view buffer, size_t from);

}  // namespace mxlimit::http

#endif  // MXLIMIT_HTTP_REQUEST_HEAD_H_
