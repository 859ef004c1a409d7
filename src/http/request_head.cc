#include "src/http/request_head.h"

#include <cstring>

#include "absl/strings/match.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::http {
namespace {

// RFC 9110 §5.6.2 tchar.
constexpr bool IsTokenChar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9')) {
    return true;
  }
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

constexpr bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Field names and list options compare ASCII case-insensitively (RFC 9110).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(internal::ToAbsl(a), internal::ToAbsl(b));
}

// A field value may hold visible bytes, obs-text (0x80-0xFF), spaces and
// tabs; anything else (NUL, CR, other controls, DEL) is refused.
bool IsFieldValue(std::string_view v) {
  for (unsigned char c : v) {
    if (c == '\t' || c == ' ') continue;
    if (c < 0x21 || c == 0x7F) return false;
  }
  return true;
}

std::string_view TrimBlanks(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
    v.remove_prefix(1);
  }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
    v.remove_suffix(1);
  }
  return v;
}

// One line of the head, without its CRLF (or bare LF). False for a bare CR
// inside the line.
bool NextLine(std::string_view& rest, std::string_view& line) {
  const size_t lf = rest.find('\n');
  if (lf == std::string_view::npos) return false;
  line = rest.substr(0, lf);
  rest.remove_prefix(lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line.find('\r') == std::string_view::npos;
}

HeadParse Error(int status, std::string_view reason) {
  HeadParse p;
  p.state = HeadParse::kError;
  p.status = status;
  p.reason = reason;
  return p;
}

bool ParseContentLength(std::string_view v, int64_t& out) {
  if (v.empty() || v.size() > 18) return false;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  out = n;
  return true;
}

// Whether the comma-separated Connection value lists `option`.
bool ListsOption(std::string_view value, std::string_view option) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (EqualsIgnoreCase(TrimBlanks(value.substr(0, comma)), option)) {
      return true;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// Reads one header field line into `head`: kError if it is malformed,
// otherwise a default (kIncomplete) result meaning "go on".
HeadParse ParseField(std::string_view line, HttpRequestHead& head) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Error(400, "obsolete line folding");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return Error(400, "header field without a colon");
  }
  const std::string_view name = line.substr(0, colon);
  if (!IsToken(name)) return Error(400, "malformed header field name");
  const std::string_view value = TrimBlanks(line.substr(colon + 1));
  if (!IsFieldValue(value)) {
    return Error(400, "control byte in a header field value");
  }
  if (head.field_count == kMaxHeaderFields) {
    return Error(431, "more than 256 header fields");
  }
  head.fields[head.field_count++] = {name, value};

  if (EqualsIgnoreCase(name, "content-length")) {
    int64_t n = 0;
    if (!ParseContentLength(value, n) ||
        (head.content_length >= 0 && head.content_length != n)) {
      return Error(400, "malformed or conflicting Content-Length");
    }
    head.content_length = n;
  } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
    return Error(501, "Transfer-Encoding is not accepted");
  } else if (EqualsIgnoreCase(name, "connection")) {
    if (ListsOption(value, "close")) {
      head.keep_alive = false;
    } else if (ListsOption(value, "keep-alive")) {
      head.keep_alive = true;
    }
  }
  return HeadParse{};
}

}  // namespace

std::string_view HttpRequestHead::Field(std::string_view name,
                                        bool* found) const {
  for (size_t i = 0; i < field_count; ++i) {
    if (EqualsIgnoreCase(fields[i].name, name)) {
      if (found != nullptr) *found = true;
      return fields[i].value;
    }
  }
  if (found != nullptr) *found = false;
  return {};
}

size_t FindHeadEnd(std::string_view buffer, size_t from) {
  // The terminator is "\n\r\n" or "\n\n"; step back far enough that one
  // split across two reads is still seen.
  size_t i = from >= 2 ? from - 2 : 0;
  while (i < buffer.size()) {
    const void* hit = std::memchr(buffer.data() + i, '\n', buffer.size() - i);
    if (hit == nullptr) return 0;
    const size_t lf =
        static_cast<size_t>(static_cast<const char*>(hit) - buffer.data());
    if (lf + 1 < buffer.size() && buffer[lf + 1] == '\n') return lf + 2;
    if (lf + 2 < buffer.size() && buffer[lf + 1] == '\r' &&
        buffer[lf + 2] == '\n') {
      return lf + 3;
    }
    i = lf + 1;
  }
  return 0;
}

HeadParse ParseRequestHead(std::string_view buffer, HttpRequestHead& head) {
  // RFC 9112 §2.2: blank lines before the request line are ignored.
  size_t skip = 0;
  while (skip < buffer.size() &&
         (buffer[skip] == '\r' || buffer[skip] == '\n')) {
    ++skip;
  }
  const size_t end = FindHeadEnd(buffer, skip);
  if (end == 0) return HeadParse{};
  std::string_view rest = buffer.substr(skip, end - skip);

  std::string_view line;
  if (!NextLine(rest, line)) return Error(400, "bare CR in the request line");
  // method SP request-target SP HTTP-version
  const size_t sp1 = line.find(' ');
  const size_t sp2 =
      sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) {
    return Error(400, "malformed request line");
  }
  head = HttpRequestHead{};
  head.method = line.substr(0, sp1);
  head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(head.method)) return Error(400, "malformed method");
  if (head.target.size() > kMaxTargetBytes) {
    return Error(414, "request target over 64 KiB");
  }
  if (head.target.empty()) return Error(400, "empty request target");
  for (unsigned char c : head.target) {
    if (c < 0x21 || c > 0x7E) return Error(400, "malformed request target");
  }
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1.") {
    return version.substr(0, 5) == "HTTP/"
               ? Error(505, "only HTTP/1.x is served")
               : Error(400, "malformed HTTP version");
  }
  if (version[7] != '0' && version[7] != '1') {
    return Error(505, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  head.minor_version = version[7] - '0';
  head.keep_alive = head.minor_version == 1;

  while (NextLine(rest, line)) {
    if (line.empty()) break;  // the blank line that ends the head
    if (HeadParse bad = ParseField(line, head);
        bad.state == HeadParse::kError) {
      return bad;
    }
  }
  if (!rest.empty() || !line.empty()) {
    return Error(400, "bare CR in a header field");
  }
  HeadParse done;
  done.state = HeadParse::kComplete;
  done.head_bytes = end;
  return done;
}

}  // namespace mxlimit::http
