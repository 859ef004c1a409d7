// -----------------------------------------------------------------------------
// File: matrix_response.h
// -----------------------------------------------------------------------------
//
// The pieces of the HTTP 429 answer a Matrix homeserver sends when the limiter
// says no:
//
//   * the JSON body
//       {"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests",
//        "retry_after_ms":N}
//     (one line, no spaces), N being the wait in milliseconds rounded up;
//   * the `Retry-After` header value (Matrix spec v1.10 and later): the wait
//     in whole seconds, rounded up.
//
// Rounding is always up, so a client that waits exactly what it is told never
// arrives early and gets denied again. Negative waits count as zero.
//
// "Never": when no wait helps (the request's cost exceeds the burst, or the
// policy blocks the route), the body omits `retry_after_ms`, which the spec
// makes optional, and no `Retry-After` header should be sent (the value
// functions produce nothing). A made-up wait would only invite a retry loop.
//
// Each piece comes in two forms: `Write…` into a caller's buffer, which never
// allocates (size the buffer with the `k…MaxBytes` constants), and a
// convenient `std::string` form.
//
// Example:
//   struct Response {  // the embedder's
//     void SetHeader(std::string_view name, std::string_view value);
//     void Send(int status, std::string_view type, std::string_view body);
//   };
//
//   // With `Decision::retry_after` and `Decision::never`; allocates nothing.
//   void TooManyRequests(Response& response, std::chrono::nanoseconds wait,
//                        bool never) {
//     char body[mxlimit::kLimitExceededBodyMaxBytes];
//     size_t n = mxlimit::WriteLimitExceededBody(wait, never, body);
//     char retry[mxlimit::kRetryAfterValueMaxBytes];
//     size_t m = mxlimit::WriteRetryAfterValue(wait, never, retry);
//     if (m > 0) {
//       response.SetHeader("Retry-After", std::string_view(retry, m));
//     }
//     response.Send(429, "application/json", std::string_view(body, n));
//   }

#ifndef MXLIMIT_MATRIX_RESPONSE_H_
#define MXLIMIT_MATRIX_RESPONSE_H_

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "mxlimit/limit_error.h"

namespace mxlimit {

inline constexpr std::string_view kLimitExceededErrcode = "M_LIMIT_EXCEEDED";

namespace matrix_response_internal {

inline constexpr std::string_view kBodyHead =
    R"({"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests")";
inline constexpr std::string_view kRetryField = R"(,"retry_after_ms":)";
// Digits of the largest int64_t.
inline constexpr size_t kMaxInt64Digits = 19;

// ceil(ns / unit), 0 for ns <= 0. No overflow: the quotient only shrinks.
constexpr int64_t CeilDiv(int64_t ns, int64_t unit) {
  if (ns <= 0) return 0;
  return ns / unit + (ns % unit != 0 ? 1 : 0);
}

inline size_t WriteDecimal(int64_t v, char* first, char* last) {
  std::to_chars_result r = std::to_chars(first, last, v);
  return r.ec == std::errc() ? static_cast<size_t>(r.ptr - first) : 0;
}

}  // namespace matrix_response_internal

// Largest body `WriteLimitExceededBody` produces.
inline constexpr size_t kLimitExceededBodyMaxBytes =
    matrix_response_internal::kBodyHead.size() +
    matrix_response_internal::kRetryField.size() +
    matrix_response_internal::kMaxInt64Digits + 1;

// Largest value `WriteRetryAfterValue` produces.
inline constexpr size_t kRetryAfterValueMaxBytes =
    matrix_response_internal::kMaxInt64Digits;

// The wait in milliseconds, rounded up; 0 for zero or negative waits.
constexpr int64_t RetryAfterMilliseconds(std::chrono::nanoseconds wait) {
  return matrix_response_internal::CeilDiv(wait.count(), 1'000'000);
}

// The wait in whole seconds, rounded up; 0 for zero or negative waits.
constexpr int64_t RetryAfterSeconds(std::chrono::nanoseconds wait) {
  return matrix_response_internal::CeilDiv(wait.count(), 1'000'000'000);
}

// Writes the 429 JSON body into `out` and returns its length, or returns 0
// and writes nothing when `out` is shorter than the body (a buffer of
// `kLimitExceededBodyMaxBytes` always suffices). With `never`, the body has
// no `retry_after_ms`. Never allocates.
inline size_t WriteLimitExceededBody(std::chrono::nanoseconds wait, bool never,
                                     std::span<char> out) {
  using namespace matrix_response_internal;
  char buf[kLimitExceededBodyMaxBytes];
  char* p = buf;
  std::memcpy(p, kBodyHead.data(), kBodyHead.size());
  p += kBodyHead.size();
  if (!never) {
    std::memcpy(p, kRetryField.data(), kRetryField.size());
    p += kRetryField.size();
    p += WriteDecimal(RetryAfterMilliseconds(wait), p, buf + sizeof(buf));
  }
  *p++ = '}';
  const size_t n = static_cast<size_t>(p - buf);
  if (out.size() < n) return 0;
  std::memcpy(out.data(), buf, n);
  return n;
}

inline std::string LimitExceededBody(std::chrono::nanoseconds wait,
                                     bool never) {
  char buf[kLimitExceededBodyMaxBytes];
  return std::string(buf, WriteLimitExceededBody(wait, never, buf));
}

// Largest body `WriteLimitBody` produces for an errcode and info_uri of at
// most `errcode_bytes` and `uri_bytes` (a policy's are at most 64 and
// 1024: kLimitBodyMaxBytes suffices for any).
constexpr size_t LimitBodyMaxBytes(size_t errcode_bytes, size_t uri_bytes) {
  return kLimitExceededBodyMaxBytes + errcode_bytes + uri_bytes +
         sizeof(R"(,"info_uri":"","can_upgrade":false)");
}
inline constexpr size_t kLimitBodyMaxBytes = LimitBodyMaxBytes(64, 1024);

// WriteLimitExceededBody with the policy's error: its errcode instead of
// M_LIMIT_EXCEEDED (the same body when it names none), then MSC4335's
// `info_uri` and `can_upgrade` where set, e.g.
//   {"errcode":"M_USER_LIMIT_EXCEEDED","error":"Too many requests",
//    "retry_after_ms":N,"info_uri":"https://...","can_upgrade":true}
// Returns 0 and writes nothing when `out` is too short. Never allocates.
inline size_t WriteLimitBody(const LimitError& error,
                             std::chrono::nanoseconds wait, bool never,
                             std::span<char> out) {
  using namespace matrix_response_internal;
  if (error.errcode.empty() || error.errcode == kLimitExceededErrcode) {
    return WriteLimitExceededBody(wait, never, out);
  }
  char head[kLimitExceededBodyMaxBytes];
  size_t n = WriteLimitExceededBody(wait, never, head) - 1;  // drop the '}'
  constexpr std::string_view kOld = kLimitExceededErrcode;
  constexpr size_t kCodeAt = sizeof(R"({"errcode":")") - 1;
  const std::string_view rest(head + kCodeAt + kOld.size(),
                              n - kCodeAt - kOld.size());
  const std::string_view uri_head = R"(,"info_uri":")";
  const std::string_view upgrade_head = R"(,"can_upgrade":)";
  using Upgrade = LimitError::Upgrade;
  const std::string_view upgrade =
      error.can_upgrade == Upgrade::kUnset
          ? ""
          : (error.can_upgrade == Upgrade::kYes ? "true" : "false");
  const size_t total =
      kCodeAt + error.errcode.size() + rest.size() +
      (error.info_uri.empty() ? 0
                              : uri_head.size() + error.info_uri.size() + 1) +
      (upgrade.empty() ? 0 : upgrade_head.size() + upgrade.size()) + 1;
  if (out.size() < total) return 0;
  char* p = out.data();
  auto put = [&p](std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  };
  put(std::string_view(head, kCodeAt));
  put(error.errcode);
  put(rest);
  if (!error.info_uri.empty()) {
    put(uri_head);
    put(error.info_uri);
    put("\"");
  }
  if (!upgrade.empty()) {
    put(upgrade_head);
    put(upgrade);
  }
  put("}");
  return total;
}

// Writes the `Retry-After` header value (decimal seconds, rounded up, never
// negative) into `out` and returns its length. Returns 0, meaning "send no
// Retry-After header", with `never`, and also (writing nothing) when `out` is
// too short (`kRetryAfterValueMaxBytes` always suffices). Never allocates.
inline size_t WriteRetryAfterValue(std::chrono::nanoseconds wait, bool never,
                                   std::span<char> out) {
  if (never) return 0;
  char buf[kRetryAfterValueMaxBytes];
  const size_t n = matrix_response_internal::WriteDecimal(
      RetryAfterSeconds(wait), buf, buf + sizeof(buf));
  if (out.size() < n) return 0;
  std::memcpy(out.data(), buf, n);
  return n;
}

// The `Retry-After` value as a string; empty (send no header) with `never`.
inline std::string RetryAfterValue(std::chrono::nanoseconds wait, bool never) {
  char buf[kRetryAfterValueMaxBytes];
  return std::string(buf, WriteRetryAfterValue(wait, never, buf));
}

}  // namespace mxlimit

#endif  // MXLIMIT_MATRIX_RESPONSE_H_
