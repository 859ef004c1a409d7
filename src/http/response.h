// -----------------------------------------------------------------------------
// File: http/response.h
// -----------------------------------------------------------------------------
//
// One HTTP/1.1 response as mxlimitd's handlers fill it and its server writes
// it: a status, a few headers and a body, with small values copied into the
// response's own scratch space so that answering allocates nothing.
//
// Example:
//   mxlimit::http::HttpResponse r;
//   r.status = 429;
//   r.AddHeader("Retry-After", r.Keep("7"));
//   std::string wire;
//   mxlimit::http::SerializeResponse(r, /*close=*/false, wire);

#ifndef MXLIMIT_HTTP_RESPONSE_H_
#define MXLIMIT_HTTP_RESPONSE_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace mxlimit::http {

// The reason phrase of `status` for a status line ("Not Found"), "Unknown"
// for a code mxlimitd never sends.
std::string_view ReasonPhrase(int status);

// The answer to one request. The handler fills it; header values and the
// body must point into `scratch`, into `owned`, or into storage that
// outlives the call (string literals).
struct HttpResponse {
  struct Header {
    std::string_view name;
    std::string_view value;
  };
  // The sidecar's largest answer has six (a denial with the RateLimit
  // fields and the feed mark); room for two more.
  static constexpr size_t kMaxHeaders = 8;

  int status = 200;
  // When above 0, the worker sends this answer only after holding it that
  // long (a delayed admission), with no thread blocked; the connection's
  // next request waits behind it. The handler hears of the end of every
  // hold through `HttpHandler::OnHeldAnswerDone`.
  std::chrono::nanoseconds hold{0};
  std::string_view content_type;
  std::array<Header, kMaxHeaders> headers{};
  size_t header_count = 0;
  std::string_view body;
  // Small values without allocating: `Keep` copies into it.
  std::array<char, 2048> scratch{};
  size_t scratch_used = 0;
  // Large bodies (metrics); its capacity is kept between requests.
  std::string owned;

  void Reset();
  // Adds a header; ignored past `kMaxHeaders`.
  void AddHeader(std::string_view name, std::string_view value);
  // A copy of `text` in `scratch`, or an empty view if it does not fit.
  std::string_view Keep(std::string_view text);
};

// Appends the whole response (status line, Content-Length unless 204, the
// headers, "Connection: close" when `close`, the body) to `out`. Within
// `out`'s capacity this does not allocate.
void SerializeResponse(const HttpResponse& r, bool close, std::string& out);

}  // namespace mxlimit::http

#endif  // MXLIMIT_HTTP_RESPONSE_H_
