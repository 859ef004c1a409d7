// -----------------------------------------------------------------------------
// File: c_outcomes.h
// -----------------------------------------------------------------------------
//
// The part of mxlimit's stable C ABI about a request's outcome: the
// per-request options (the request body's length) and the calls that take
// them, mxlimit_settle, which charges the response once it is known, and
// the RateLimit header fields of a decision. mxlimit/c.h includes this
// header at its end, so `#include "mxlimit/c.h"` is all an embedder needs;
// this one alone works too (it includes c.h). c.h's rules (status codes,
// strings as pointer + length, `struct_size`, threading) hold here;
// docs/c-api.md, "Request bytes, responses and the policy's own error" and
// "The 429 answer and the RateLimit fields", shows them in use.

#ifndef MXLIMIT_C_OUTCOMES_H_
#define MXLIMIT_C_OUTCOMES_H_

#include <stddef.h>
#include <stdint.h>

// mxlimit_limiter, mxlimit_decision, MXLIMIT_C_API. When c.h is the one
// included, this is a no-op (its guard is set) and its declarations are
// already in scope.
#include "mxlimit/c.h"

#ifdef __cplusplus
extern "C" {
#endif

// -----------------------------------------------------------------------------
// Per request, with options
// -----------------------------------------------------------------------------

// Per-request inputs beyond the flat arguments, all plain integers (so a Go
// caller may pass one from its own memory: cgo refuses only structs that
// hold Go pointers), for mxlimit_check_ex, mxlimit_peek_ex,
// mxlimit_charge_ex and mxlimit_settle. Fields may be appended in later
// versions, under the rules of `mxlimit_options`: a library told of fields
// it does not know refuses them with `MXLIMIT_EINVAL` unless they are all
// zero.
typedef struct mxlimit_request_options {
  // sizeof(mxlimit_request_options), set by `MXLIMIT_REQUEST_OPTIONS_INIT`.
  uint32_t struct_size;
  // The request body's length in bytes (its Content-Length), what policies
  // with `cost: request_bytes` charge (an empty body still needs a byte of
  // room); -1 when unknown (a chunked upload), which they charge a whole
  // burst, so that hiding the length never slips past a quota. The calls
  // without options pass -1.
  int64_t request_bytes;
} mxlimit_request_options;

// The defaults: `mxlimit_request_options o = MXLIMIT_REQUEST_OPTIONS_INIT;`.
// Passing NULL for the options means the same.
#define MXLIMIT_REQUEST_OPTIONS_INIT \
  { sizeof(mxlimit_request_options), -1 }

// mxlimit_check_ex(), mxlimit_peek_ex(), mxlimit_charge_ex()
//
// mxlimit_check_subjects, mxlimit_peek_subjects and
// mxlimit_charge_subjects with the per-request inputs of
// `mxlimit_request_options` (the request's body length); `options` may be
// NULL: the defaults, which make them the `_subjects` calls exactly. Errors
// as for those, and `MXLIMIT_EINVAL` for an `options->struct_size` smaller
// than the first version's or with fields this library does not know set.
MXLIMIT_C_API int mxlimit_check_ex(
    mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, const mxlimit_request_options* options,
    int64_t now_ns, mxlimit_decision* out) MXLIMIT_C_NOEXCEPT;
MXLIMIT_C_API int mxlimit_peek_ex(
    const mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, const mxlimit_request_options* options,
    int64_t now_ns, mxlimit_decision* out) MXLIMIT_C_NOEXCEPT;
MXLIMIT_C_API int mxlimit_charge_ex(
    mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, const mxlimit_request_options* options,
    int64_t now_ns) MXLIMIT_C_NOEXCEPT;

// mxlimit_settle()
//
// Charges what the response of an admitted request costs, once it is known:
// the policies charged on the response (`charge: response` with its
// `status:` list, `cost: response_bytes`) that apply to the request and list
// `status` (or list none), each by its cost (`cost`, the request's bytes, or
// `body_bytes`). Their buckets were only checked at the decision. A response
// may cost more than its bucket held: the bucket then goes into debt, by at
// most one more burst, and denies until it has refilled past it. Pass the
// request exactly as it was checked (the same strings, cost, flags and
// options), its HTTP `status` and the response body's length `body_bytes`,
// once per admitted request whose decision `settles`; for others it charges
// nothing. Allocates nothing.
//
// Errors as for mxlimit_charge_ex (any cost, status and body length are
// accepted; a negative charge is skipped, never refunded).
MXLIMIT_C_API int mxlimit_settle(
    mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, const mxlimit_request_options* options,
    int status, int64_t body_bytes, int64_t now_ns) MXLIMIT_C_NOEXCEPT;

// -----------------------------------------------------------------------------
// The RateLimit header fields
// -----------------------------------------------------------------------------

// Buffer sizes that always suffice for the two RateLimit field values,
// terminating NUL included.
#define MXLIMIT_RATELIMIT_POLICY_MAX 264
#define MXLIMIT_RATELIMIT_MAX 239

// mxlimit_format_ratelimit_headers()
//
// The values of the `RateLimit-Policy` and `RateLimit` header fields
// (draft-ietf-httpapi-ratelimit-headers-10; docs/rate.md) for a decision of
// the fourth version or later, as the C++ FormatRateLimitHeaders writes
// them, e.g. `"message-send";q=10;w=50` and `"message-send";r=9;t=0`: send
// both on allowed and denied answers when the policy file says
// `response_headers: ratelimit`. Stores their lengths in `*policy_len` and
// `*ratelimit_len` (each may be NULL); both 0 means "send neither field"
// (exempt, no limited policy applied, or `never`). If both buffers leave
// room for their value and a NUL, writes them and returns `MXLIMIT_OK`;
// otherwise writes nothing and returns `MXLIMIT_ERANGE`.
// `MXLIMIT_RATELIMIT_POLICY_MAX` and `MXLIMIT_RATELIMIT_MAX` always suffice.
// Allocates nothing. `MXLIMIT_EINVAL` for a NULL `decision`, a
// `struct_size` of an earlier version, a NULL buffer with a nonzero
// capacity, or a NULL `quota_policy` with a nonzero length.
MXLIMIT_C_API int mxlimit_format_ratelimit_headers(
    const mxlimit_decision* decision, char* policy_buf, size_t policy_cap,
    size_t* policy_len, char* ratelimit_buf, size_t ratelimit_cap,
    size_t* ratelimit_len) MXLIMIT_C_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MXLIMIT_C_OUTCOMES_H_
