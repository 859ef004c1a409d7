#include "src/http/response.h"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace mxlimit::http {

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    case 401:
      return "Unauthorized";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

namespace {

void AppendNumber(std::string& out, uint64_t n) {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof(digits), n);
  out.append(digits, static_cast<size_t>(r.ptr - digits));
}

}  // namespace

void SerializeResponse(const HttpResponse& r, bool close, std::string& out) {
  out.append("HTTP/1.1 ");
  AppendNumber(out, static_cast<uint64_t>(r.status));
  out.push_back(' ');
  out.append(ReasonPhrase(r.status));
  out.append("\r\n");
  if (r.status != 204) {
    out.append("Content-Length: ");
    AppendNumber(out, r.body.size());
    out.append("\r\n");
  }
  if (!r.content_type.empty()) {
    out.append("Content-Type: ");
    out.append(r.content_type);
    out.append("\r\n");
  }
  for (size_t i = 0; i < r.header_count; ++i) {
    out.append(r.headers[i].name);
    out.append(": ");
    out.append(r.headers[i].value);
    out.append("\r\n");
  }
  if (close) out.append("Connection: close\r\n");
  out.append("\r\n");
  if (r.status != 204) out.append(r.body);
}

void HttpResponse::Reset() {
  status = 200;
  hold = std::chrono::nanoseconds(0);
  content_type = {};
  header_count = 0;
  body = {};
  scratch_used = 0;
  owned.clear();
}

void HttpResponse::AddHeader(std::string_view name, std::string_view value) {
  if (header_count == kMaxHeaders) return;
  headers[header_count++] = {name, value};
}

std::string_view HttpResponse::Keep(std::string_view text) {
  if (scratch.size() - scratch_used < text.size()) return {};
  char* at = scratch.data() + scratch_used;
  std::memcpy(at, text.data(), text.size());
  scratch_used += text.size();
  return {at, text.size()};
}

}  // namespace mxlimit::http
