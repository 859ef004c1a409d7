// The pieces of the Matrix 429 answer, written into the caller's buffer with
// the snprintf contract (length always reported, written only when it fits,
// NUL-terminated) but never truncated: half a header value is worse than
// none.

#include <chrono>
#include <cstring>
#include <span>

#include "mxlimit/c.h"
#include "mxlimit/matrix_response.h"
#include "src/c/c_handle.h"

namespace mxlimit::c_api {
namespace {

static_assert(MXLIMIT_BODY_MAX == kLimitExceededBodyMaxBytes + 1);
static_assert(MXLIMIT_RETRY_AFTER_MAX == kRetryAfterValueMaxBytes + 1);

// Writes `n` bytes of `piece` and a NUL into the caller's buffer if they fit.
int Deliver(const char* piece, size_t n, char* buf, size_t cap, size_t* len) {
  if (len != nullptr) *len = n;
  if (cap < n + 1) return MXLIMIT_ERANGE;
  std::memcpy(buf, piece, n);
  buf[n] = '\0';
  return MXLIMIT_OK;
}

bool ArgumentsOk(const mxlimit_decision* decision, const char* buf,
                 size_t cap) {
  return decision != nullptr && decision->struct_size >= kFirstDecisionSize &&
         (buf != nullptr || cap == 0);
}

}  // namespace
}  // namespace mxlimit::c_api

extern "C" {

int mxlimit_format_retry_after(const mxlimit_decision* decision, char* buf,
                               size_t cap, size_t* len) noexcept {
  if (!mxlimit::c_api::ArgumentsOk(decision, buf, cap)) return MXLIMIT_EINVAL;
  char piece[mxlimit::kRetryAfterValueMaxBytes];
  const size_t n = mxlimit::WriteRetryAfterValue(
      std::chrono::nanoseconds(decision->retry_after_ns), decision->never != 0,
      piece);
  return mxlimit::c_api::Deliver(piece, n, buf, cap, len);
}

int mxlimit_format_body(const mxlimit_decision* decision, char* buf, size_t cap,
                        size_t* len) noexcept {
  if (!mxlimit::c_api::ArgumentsOk(decision, buf, cap)) return MXLIMIT_EINVAL;
  char piece[mxlimit::kLimitExceededBodyMaxBytes];
  const size_t n = mxlimit::WriteLimitExceededBody(
      std::chrono::nanoseconds(decision->retry_after_ns), decision->never != 0,
      piece);
  return mxlimit::c_api::Deliver(piece, n, buf, cap, len);
}

}  // extern "C"
