// -----------------------------------------------------------------------------
// File: c.h
// -----------------------------------------------------------------------------
//
// The stable C ABI of mxlimit, for homeservers written in C, Rust, Go or
// anything else that can call C: link `libmxlimit_c.so.0` (CMake target
// `mxlimit::c`, pkg-config package `mxlimit-c`). It is C11 and compiles as
// C++ too. docs/c-api.md covers ownership, threading, errors and versioning;
// the rules in short (they hold for mxlimit/c_outcomes.h too, the request
// options, mxlimit_settle and the RateLimit fields, and for
// mxlimit/c_tiers.h, the tier assignments, which this header includes at
// its end):
//
//   * Handles are opaque (`mxlimit_limiter`); the caller owns what a function
//     hands out and gives it back with the matching free function.
//   * Every function returns an `int` status: 0 (`MXLIMIT_OK`) or one of the
//     canonical codes below. A denial is a decision, not an error. Functions
//     that can fail for a reason worth reading take an optional
//     `char** errmsg`; there is no "last error" kept per thread (a goroutine
//     may move to another OS thread between two calls).
//   * No C++ exception ever leaves the library, every pointer is checked (a
//     NULL where one is not allowed is `MXLIMIT_EINVAL`, never a crash), and
//     strings are pointer + length (no NUL needed) except file paths and file
//     names, which are NUL-terminated. A pointer with length 0 may be NULL.
//   * Structs the caller passes begin with their own size
//     (`struct_size`), so later versions can append fields without breaking
//     callers built against this header. Initialize them with the `..._INIT`
//     macros.
//   * Inputs are read during the call only and never retained.
//
// Thread safety: every function may be called from any number of threads at
// once, on one limiter too (a `mxlimit::ShardedLimiter` is inside), except
// that `mxlimit_limiter_free` must be the handle's last use.
//
// Example:
//   #include <stdio.h>
//
//   // The embedder's: answers 429 with this body, and with this
//   // Retry-After value unless it is empty.
//   void Reply429(const char* body, const char* retry_after);
//
//   mxlimit_limiter* Start(const char* path) {
//     mxlimit_limiter* limiter = NULL;
//     char* err = NULL;
//     int rc = mxlimit_limiter_new_from_file(path, NULL, &limiter, &err);
//     if (rc != MXLIMIT_OK) {  // err: every FILE:LINE:COL problem
//       fprintf(stderr, "%s\n", err ? err : mxlimit_status_name(rc));
//       mxlimit_free(err);
//     }
//     return limiter;
//   }
//
//   // Per request, on any thread; 1: pass the request on.
//   int OnRequest(mxlimit_limiter* limiter, const char* target,
//                 size_t target_len, const uint8_t client[16]) {
//     mxlimit_decision d = MXLIMIT_DECISION_INIT;
//     if (mxlimit_check(limiter, "POST", 4, target, target_len, client,
//                       NULL, 0, 1, 0, mxlimit_monotonic_now_ns(),
//                       &d) != MXLIMIT_OK || d.allowed) {
//       return 1;  // fail open on a bad argument
//     }
//     char body[MXLIMIT_LIMIT_BODY_MAX];
//     char retry[MXLIMIT_RETRY_AFTER_MAX];
//     mxlimit_format_body(&d, body, sizeof(body), NULL);
//     mxlimit_format_retry_after(&d, retry, sizeof(retry), NULL);
//     Reply429(body, retry);
//     return 0;
//   }

#ifndef MXLIMIT_C_H_
#define MXLIMIT_C_H_

#include <stddef.h>
#include <stdint.h>

// MXLIMIT_VERSION_MAJOR, _MINOR and _PATCH: the version these declarations
// come from.
#include "mxlimit/version.h"

// Every function is exported; nothing else in the library is.
#if defined(__GNUC__) || defined(__clang__)
#define MXLIMIT_C_API __attribute__((visibility("default")))
#else
#define MXLIMIT_C_API
#endif

// For C++ callers: no function throws.
#if defined(__cplusplus) && __cplusplus >= 201103L
#define MXLIMIT_C_NOEXCEPT noexcept
#else
#define MXLIMIT_C_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

// -----------------------------------------------------------------------------
// Version
// -----------------------------------------------------------------------------

// The version as one number, (major << 16) | (minor << 8) | patch, so that
// versions compare as integers.
#define MXLIMIT_VERSION_NUMBER               \
  (((uint32_t)MXLIMIT_VERSION_MAJOR << 16) | \
   ((uint32_t)MXLIMIT_VERSION_MINOR << 8) | (uint32_t)MXLIMIT_VERSION_PATCH)

// mxlimit_version()
//
// The version of the library actually loaded, encoded as
// `MXLIMIT_VERSION_NUMBER`. It differs from the macro when the program runs
// against another build than it was compiled with; within one major version
// (one SONAME) a newer library serves every older caller.
MXLIMIT_C_API uint32_t mxlimit_version(void) MXLIMIT_C_NOEXCEPT;

// -----------------------------------------------------------------------------
// Status codes
// -----------------------------------------------------------------------------
//
// The canonical codes of absl::Status (and gRPC), with the same numbers, so
// the set is closed: no other value is ever returned. The ones the library
// returns today are marked; treat any nonzero value as an error.
typedef enum mxlimit_status {
  MXLIMIT_OK = 0,
  MXLIMIT_ECANCELLED = 1,
  MXLIMIT_EUNKNOWN = 2,
  // Returned: a NULL or malformed argument, a config file with errors.
  MXLIMIT_EINVAL = 3,
  MXLIMIT_EDEADLINE = 4,
  // Returned: the config file does not exist; no such tier
  // (mxlimit_set_tier), no runtime assignment to clear (mxlimit_clear_tier).
  MXLIMIT_ENOTFOUND = 5,
  MXLIMIT_EEXIST = 6,
  // Returned: the config file may not be read.
  MXLIMIT_EPERM = 7,
  // Returned: out of memory (or of file descriptors); the cap on runtime
  // tier assignments reached (mxlimit_set_tier). absl's kResourceExhausted.
  MXLIMIT_ENOMEM = 8,
  // Returned: a reload that would change what only a restart can (the
  // `tables` section, a coarser `client_prefix`); reading a directory.
  MXLIMIT_EPRECONDITION = 9,
  MXLIMIT_EABORTED = 10,
  // Returned: a caller's buffer is too small (the formatting functions).
  MXLIMIT_ERANGE = 11,
  MXLIMIT_EUNIMPLEMENTED = 12,
  // Returned: a bug in mxlimit (an unexpected exception was caught).
  MXLIMIT_EINTERNAL = 13,
  // Returned: an I/O error reading the config file.
  MXLIMIT_EUNAVAILABLE = 14,
  MXLIMIT_EDATALOSS = 15,
  MXLIMIT_EUNAUTHENTICATED = 16
} mxlimit_status;

// mxlimit_status_name()
//
// The name of a status code, "MXLIMIT_EINVAL" for 3; "MXLIMIT_E?" for a value
// that is not one. Never NULL; the string is static.
MXLIMIT_C_API const char* mxlimit_status_name(int status) MXLIMIT_C_NOEXCEPT;

// mxlimit_free()
//
// Frees what the library allocated for the caller: error messages and the
// metrics text. NULL is fine.
MXLIMIT_C_API void mxlimit_free(void* p) MXLIMIT_C_NOEXCEPT;

// -----------------------------------------------------------------------------
// The limiter
// -----------------------------------------------------------------------------

// An opaque handle: a thread-safe limiter with its tables and policies.
typedef struct mxlimit_limiter mxlimit_limiter;

// Options for a new limiter, beyond what the policy file says. Fields may be
// appended in later versions; a library told of fields it does not know
// (`struct_size` larger than its own) refuses them with `MXLIMIT_EINVAL`
// unless they are all zero.
typedef struct mxlimit_options {
  // sizeof(mxlimit_options), set by `MXLIMIT_OPTIONS_INIT`.
  uint32_t struct_size;
  // How many independent engines (each behind its own lock) the tables are
  // spread over: a power of two from 1 to 256, or 0 for the default: 256,
  // fewer when a table's capacity would leave a shard under 64 buckets.
  uint32_t shards;
} mxlimit_options;

// The defaults: `mxlimit_options options = MXLIMIT_OPTIONS_INIT;`. Passing
// NULL for the options means the same.
#define MXLIMIT_OPTIONS_INIT \
  { sizeof(mxlimit_options), 0 }

// mxlimit_limiter_new_from_file()
//
// Loads the YAML policy file at `path` (docs/config.md; an empty file means
// the built-in policies and default tables) and builds a limiter. On success
// stores the handle in `*out` (free it with `mxlimit_limiter_free`) and
// returns `MXLIMIT_OK`. On failure stores NULL in `*out` and, if `errmsg` is
// not NULL, a malloc'd message in `*errmsg` (free it with `mxlimit_free`):
// for a file with errors, every error, one per line, each as
// "FILE:LINE:COL: field: got VALUE, expected WHAT". When `errmsg` is not
// NULL, `*errmsg` is NULL after a success.
//
// Errors: `MXLIMIT_EINVAL` (NULL `path` or `out`, bad options, errors in the
// file), `MXLIMIT_ENOTFOUND`, `MXLIMIT_EPERM` and the other codes of a failed
// read, `MXLIMIT_ENOMEM`.
MXLIMIT_C_API int mxlimit_limiter_new_from_file(
    const char* path, const mxlimit_options* options, mxlimit_limiter** out,
    char** errmsg) MXLIMIT_C_NOEXCEPT;

// mxlimit_limiter_new_from_yaml()
//
// As `mxlimit_limiter_new_from_file`, from the `len` bytes of policy file
// text at `text` (which may be NULL when `len` is 0: the defaults).
// `file_name` names the text in error messages; NULL means "<yaml>".
MXLIMIT_C_API int mxlimit_limiter_new_from_yaml(
    const char* text, size_t len, const char* file_name,
    const mxlimit_options* options, mxlimit_limiter** out,
    char** errmsg) MXLIMIT_C_NOEXCEPT;

// mxlimit_limiter_reload_file()
//
// Loads the policy file at `path` and installs its policies in `limiter`.
// On any error (the errors of `mxlimit_limiter_new_from_file`, and
// `MXLIMIT_EPRECONDITION` for a change only a restart can make) nothing
// changes: the old policies stay in force. Unchanged policies keep their
// buckets. May run while other threads check.
MXLIMIT_C_API int mxlimit_limiter_reload_file(mxlimit_limiter* limiter,
                                              const char* path,
                                              char** errmsg) MXLIMIT_C_NOEXCEPT;

// mxlimit_limiter_reload_yaml()
//
// As `mxlimit_limiter_reload_file`, from text, as in
// `mxlimit_limiter_new_from_yaml`.
MXLIMIT_C_API int mxlimit_limiter_reload_yaml(mxlimit_limiter* limiter,
                                              const char* text, size_t len,
                                              const char* file_name,
                                              char** errmsg) MXLIMIT_C_NOEXCEPT;

// mxlimit_limiter_free()
//
// Frees the limiter and everything it owns, including the strings its
// decisions point to. NULL is fine. No other call on `limiter` may run at the
// same time or follow.
MXLIMIT_C_API void mxlimit_limiter_free(mxlimit_limiter* limiter)
    MXLIMIT_C_NOEXCEPT;

// -----------------------------------------------------------------------------
// Per request
// -----------------------------------------------------------------------------

// `flags` of mxlimit_check, mxlimit_peek and mxlimit_charge.
// The embedder trusts this request (an application service, an admin): it is
// neither checked nor charged.
#define MXLIMIT_EXEMPT 1u
// The caller can hold this request for `mxlimit_decision.delay_ns` before
// passing it on: policies with `on_limit: delay` may then admit it late
// instead of denying it. Without it they deny (docs/policies.md, "Delay
// before deny").
#define MXLIMIT_MAY_DELAY 2u
// The `origin` of mxlimit_check_subjects is verified (the request's X-Matrix
// signature checked out): its buckets are keyed by the name alone, not bound
// to the client's network.
#define MXLIMIT_ORIGIN_VERIFIED 4u

// `mxlimit_decision.limited_by`: which table the denying bucket is in.
#define MXLIMIT_SCOPE_NONE 0
#define MXLIMIT_SCOPE_IP 1
#define MXLIMIT_SCOPE_USER 2
// A federation origin server, a room (the route's room segment: requests
// through this API have one wherever the route has a room placeholder) and a
// target account (docs/config.md, "scope").
#define MXLIMIT_SCOPE_ORIGIN 3
#define MXLIMIT_SCOPE_ROOM 4
#define MXLIMIT_SCOPE_TARGET 5

// Most leases one decision holds (`mxlimit_decision.leases`).
#define MXLIMIT_MAX_LEASES 4

// `mxlimit_decision.remaining` when no limited policy applied.
#define MXLIMIT_UNLIMITED_REMAINING INT64_MAX

// What the limiter says about one request. The caller owns the struct and sets
// `struct_size` (`MXLIMIT_DECISION_INIT` does); the library fills the fields
// it knows, up to `struct_size` bytes, and zeroes any beyond them. A denial is
// a normal result: the call still returns `MXLIMIT_OK`.
//
// The strings (`policy`, `route_key`, `shadow_policy`, `errcode`, `info_uri`,
// `quota_policy`, `tier`) are not NUL-terminated, never NULL (an empty one
// points at ""), and belong to the limiter: they stay valid, unchanged, until
// `mxlimit_limiter_free`, across reloads. (The limiter keeps one copy of every
// policy name, errcode, info_uri and tier name it has ever loaded, so that
// memory grows only with strings never seen before; route keys are built
// in.)
typedef struct mxlimit_decision {
  // sizeof(mxlimit_decision), set by the caller.
  uint32_t struct_size;
  // 1 if the request may proceed.
  uint8_t allowed;
  // Denied and no wait helps: the cost exceeds the policy's burst, or the
  // policy blocks the route. Send no Retry-After.
  uint8_t never;
  // The request was exempt (flag, address or user): nothing was checked.
  uint8_t exempt;
  // A shadow-mode policy would have denied; `allowed` is not affected.
  uint8_t shadow_denied;
  // MXLIMIT_SCOPE_*: the table of the policy that denied.
  uint8_t limited_by;
  // Exact wait until the same request would pass, in nanoseconds; 0 when
  // allowed or `never`.
  int64_t retry_after_ns;
  // Requests of cost 1 left after this one over every enforcing policy that
  // applied (the smallest), or MXLIMIT_UNLIMITED_REMAINING.
  int64_t remaining;
  // The policy that denied (empty when allowed).
  const char* policy;
  size_t policy_len;
  // The normalized route, e.g. "/_matrix/client/v3/login", or "<fallback>".
  const char* route_key;
  size_t route_key_len;
  // The first shadow policy that would have denied (empty if none).
  const char* shadow_policy;
  size_t shadow_policy_len;
  // Appended after 0.1.0 (a caller built against 0.1.0 passes a smaller
  // struct_size and never sees it): allowed, but only after this wait, in
  // nanoseconds; hold the request that long, then pass it on. 0 for every
  // decision but a delayed admission (MXLIMIT_MAY_DELAY); `policy` then names
  // the policy that delayed it.
  int64_t delay_ns;
  // Appended after `delay_ns` (third version): the leases an admitted
  // request took, one per
  // in-flight policy (`concurrency:`) that applied; give them back with
  // mxlimit_release when the request is done. A lease never released ends
  // by itself after its policy's `lease`. `lease_count` is 0 for every
  // other decision. (A caller built before these fields passes a smaller
  // `struct_size`: its leases are released at once, since it could never
  // give them back, so in-flight limits do not apply to its requests.)
  uint64_t leases[MXLIMIT_MAX_LEASES];
  uint32_t lease_count;
  // Appended after `lease_count` (fourth version; a caller built before
  // passes a smaller `struct_size` and never sees them, and its 429 body
  // stays M_LIMIT_EXCEEDED's).
  //
  // The Matrix error of a denial: the denying policy's `errcode`, or
  // "M_LIMIT_EXCEEDED" when it names none; MSC4335's `info_uri` (empty when
  // the policy sets none) and `can_upgrade` (MXLIMIT_CAN_UPGRADE_*). Empty
  // and MXLIMIT_CAN_UPGRADE_UNSET when allowed. mxlimit_format_body writes
  // them. The strings follow the rules of `policy` above.
  const char* errcode;
  size_t errcode_len;
  const char* info_uri;
  size_t info_uri_len;
  // The RateLimit header fields' quota (mxlimit_format_ratelimit_headers):
  // the policy the fields describe (on a denial the denying one, otherwise
  // the enforcing policy with the smallest `remaining`; empty when no
  // limited policy applied or the request was exempt), a string as
  // `policy`; its burst in `quota_unit`s (an in-flight policy: its limit);
  // its emission interval (one unit comes back every `quota_interval_ns`;
  // 0 for an in-flight policy); and the wait until a request of cost 1
  // fits (0 while `remaining` is at least 1; on a denial `retry_after_ns`).
  const char* quota_policy;
  size_t quota_policy_len;
  int64_t quota_burst;
  int64_t quota_interval_ns;
  int64_t quota_next_ns;
  // MXLIMIT_QUOTA_*: what `quota_burst` counts.
  uint8_t quota_unit;
  // MXLIMIT_CAN_UPGRADE_*, with `errcode`.
  uint8_t can_upgrade;
  // 1 if a policy that applied is charged on the response (`charge:
  // response`, `cost: response_bytes`): only then does mxlimit_settle
  // charge anything for this request, so a caller that
  // must keep a request until it completes keeps only these (and those with
  // leases).
  uint8_t settles;
  // Appended after `settles` (fifth version; a caller built before passes a
  // smaller `struct_size` and never sees it): the tier the request was
  // checked in (its user's or its address's: the policy file's
  // `tiers.assign`, or mxlimit_set_tier of mxlimit/c_tiers.h), whose rates
  // applied; empty when none, and for a request exempt by MXLIMIT_EXEMPT
  // or `exempt:` (no tier is looked up). An exempt tier's members are
  // exempt with their tier named. A string as `policy`.
  const char* tier;
  size_t tier_len;
} mxlimit_decision;

// `mxlimit_decision.quota_unit`: the unit of the quota, as the RateLimit
// fields' `qu` parameter names it.
#define MXLIMIT_QUOTA_REQUESTS 0
#define MXLIMIT_QUOTA_CONTENT_BYTES 1
#define MXLIMIT_QUOTA_CONCURRENT_REQUESTS 2

// `mxlimit_decision.can_upgrade`: MSC4335's field, left out of the body
// (unset), or sent as false or true.
#define MXLIMIT_CAN_UPGRADE_UNSET 0
#define MXLIMIT_CAN_UPGRADE_NO 1
#define MXLIMIT_CAN_UPGRADE_YES 2

// `mxlimit_decision d = MXLIMIT_DECISION_INIT;`
#define MXLIMIT_DECISION_INIT                                           \
  {                                                                     \
    sizeof(mxlimit_decision), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
        {0, 0, 0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0       \
  }

// mxlimit_check()
//
// Decides whether one HTTP request may proceed and, if it may, charges it to
// every bucket it touches (all or nothing). Allocates nothing.
//
//   method, method_len    the HTTP method, e.g. "PUT"
//   target, target_len    the raw request target as received: path, optional
//                         ?query, still percent-encoded
//   client                16 bytes: the client's IPv6 address, or its IPv4
//                         address v4-mapped (::ffff:a.b.c.d); see
//                         mxlimit_parse_ip
//   user_id, user_id_len  the authenticated Matrix user ID; length 0 when
//                         anonymous
//   cost                  how many requests this one counts as, >= 0
//   flags                 0 or MXLIMIT_EXEMPT
//   now_ns                now, in nanoseconds of the caller's monotonic clock
//                         (mxlimit_monotonic_now_ns, or any clock that never
//                         goes back; an earlier time grants nothing)
//   out                   filled with the decision
//
// Errors: `MXLIMIT_EINVAL` for a NULL `limiter`, `client` or `out`, a NULL
// string with a nonzero length, a negative cost, an unknown flag, or an
// `out->struct_size` smaller than the first version's. `*out` is then left
// as it was.
MXLIMIT_C_API int mxlimit_check(mxlimit_limiter* limiter, const char* method,
                                size_t method_len, const char* target,
                                size_t target_len, const uint8_t client[16],
                                const char* user_id, size_t user_id_len,
                                int64_t cost, uint32_t flags, int64_t now_ns,
                                mxlimit_decision* out) MXLIMIT_C_NOEXCEPT;

// mxlimit_peek()
//
// What `mxlimit_check` would answer, without charging, admitting or counting
// anything. The same arguments and errors.
MXLIMIT_C_API int mxlimit_peek(const mxlimit_limiter* limiter,
                               const char* method, size_t method_len,
                               const char* target, size_t target_len,
                               const uint8_t client[16], const char* user_id,
                               size_t user_id_len, int64_t cost, uint32_t flags,
                               int64_t now_ns,
                               mxlimit_decision* out) MXLIMIT_C_NOEXCEPT;

// mxlimit_charge()
//
// Charges `cost` to every bucket the request touches without checking (for
// costs known only after the work is done), or refunds with a negative
// `cost`. The arguments and errors of `mxlimit_check`, without a decision;
// any cost is accepted.
MXLIMIT_C_API int mxlimit_charge(mxlimit_limiter* limiter, const char* method,
                                 size_t method_len, const char* target,
                                 size_t target_len, const uint8_t client[16],
                                 const char* user_id, size_t user_id_len,
                                 int64_t cost, uint32_t flags,
                                 int64_t now_ns) MXLIMIT_C_NOEXCEPT;

// mxlimit_check_subjects(), mxlimit_peek_subjects(),
// mxlimit_charge_subjects()
//
// mxlimit_check, mxlimit_peek and mxlimit_charge with the two subjects only
// the embedder knows (docs/config.md, "scope"):
//
//   origin, origin_len    a federation request's origin server, from its
//                         `Authorization: X-Matrix origin=`; with
//                         MXLIMIT_ORIGIN_VERIFIED once the signature checked
//                         out; length 0 for a client request
//   target_user, target_user_len
//                         the account the request is about (the user a login
//                         names, the invitee of an invite); length 0 when
//                         unknown: target-scope policies do not apply
//
// Either string may be NULL with length 0. The room needs nothing: it is the
// route's room segment. Errors as for the calls they extend.
MXLIMIT_C_API int mxlimit_check_subjects(
    mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, int64_t now_ns,
    mxlimit_decision* out) MXLIMIT_C_NOEXCEPT;
MXLIMIT_C_API int mxlimit_peek_subjects(
    const mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, int64_t now_ns,
    mxlimit_decision* out) MXLIMIT_C_NOEXCEPT;
MXLIMIT_C_API int mxlimit_charge_subjects(
    mxlimit_limiter* limiter, const char* method, size_t method_len,
    const char* target, size_t target_len, const uint8_t client[16],
    const char* user_id, size_t user_id_len, const char* origin,
    size_t origin_len, const char* target_user, size_t target_user_len,
    int64_t cost, uint32_t flags, int64_t now_ns) MXLIMIT_C_NOEXCEPT;

// mxlimit_check_ex(), mxlimit_peek_ex(), mxlimit_charge_ex(),
// mxlimit_settle() and their `mxlimit_request_options`: in
// mxlimit/c_outcomes.h, which this header includes at its end.

// mxlimit_release()
//
// Gives back the `count` leases at `leases` (a decision's `leases` and
// `lease_count`) once the request they were taken for is done, so that the
// next request of the same in-flight bucket may start; also ends every lease
// whose time is up at `now_ns`. A lease that already ended, or was released
// before, is skipped: releasing twice is harmless. Allocates nothing.
// `MXLIMIT_EINVAL` for a NULL `limiter`, or NULL `leases` with a nonzero
// `count`, or `count` above MXLIMIT_MAX_LEASES.
MXLIMIT_C_API int mxlimit_release(mxlimit_limiter* limiter,
                                  const uint64_t* leases, size_t count,
                                  int64_t now_ns) MXLIMIT_C_NOEXCEPT;

// -----------------------------------------------------------------------------
// Helpers
// -----------------------------------------------------------------------------

// mxlimit_parse_ip()
//
// Parses an IPv4 or IPv6 address (every RFC 4291 form, "[v6]", a "%zone"
// suffix, which is dropped; no port, no spaces) from the `len` bytes at `text`
// into the 16 bytes at `out` (IPv4 v4-mapped). `MXLIMIT_EINVAL` for anything
// else, `out` then unchanged. Allocates nothing for a valid address.
MXLIMIT_C_API int mxlimit_parse_ip(const char* text, size_t len,
                                   uint8_t out[16]) MXLIMIT_C_NOEXCEPT;

// mxlimit_monotonic_now_ns()
//
// Now, in nanoseconds of the steady clock (CLOCK_MONOTONIC), for callers
// without a monotonic clock of their own.
MXLIMIT_C_API int64_t mxlimit_monotonic_now_ns(void) MXLIMIT_C_NOEXCEPT;

// Buffer sizes that always suffice, terminating NUL included.
#define MXLIMIT_RETRY_AFTER_MAX 20
#define MXLIMIT_BODY_MAX 96

// mxlimit_format_retry_after()
//
// The `Retry-After` header value for a denial: the wait in whole seconds,
// rounded up. Stores its length in `*len` (if `len` is not NULL); 0 means
// "send no Retry-After header" (a `never` decision). If `cap` leaves room for
// the value and a terminating NUL, writes both and returns `MXLIMIT_OK`;
// otherwise writes nothing and returns `MXLIMIT_ERANGE`, so a caller may
// ask for the length first with `buf` NULL and `cap` 0. A buffer of
// `MXLIMIT_RETRY_AFTER_MAX` bytes always suffices. Allocates nothing.
// `MXLIMIT_EINVAL` for a NULL `decision`, or a NULL `buf` with `cap` > 0.
MXLIMIT_C_API int mxlimit_format_retry_after(const mxlimit_decision* decision,
                                             char* buf, size_t cap,
                                             size_t* len) MXLIMIT_C_NOEXCEPT;

// The largest 429 body with a policy's own error (an errcode of up to 64
// bytes, an info_uri of up to 1024, can_upgrade), terminating NUL included.
#define MXLIMIT_LIMIT_BODY_MAX 1219

// mxlimit_format_body()
//
// The JSON body of the 429 answer, as `mxlimit_format_retry_after` writes the
// header value:
//   {"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests",
//    "retry_after_ms":N}
// on one line, N the wait in milliseconds rounded up, without
// `retry_after_ms` for a `never` decision. With a decision of the fourth
// version or later whose `errcode` is a policy's own (MSC4335), that errcode
// instead, then `info_uri` and `can_upgrade` where set:
//   {"errcode":"M_USER_LIMIT_EXCEEDED","error":"Too many requests",
//    "retry_after_ms":N,"info_uri":"https://...","can_upgrade":true}
// (the C++ WriteLimitBody's bytes exactly). `MXLIMIT_BODY_MAX` bytes
// suffice for every M_LIMIT_EXCEEDED body, `MXLIMIT_LIMIT_BODY_MAX` for any.
// `MXLIMIT_EINVAL` also for an `errcode` or `info_uri` NULL with a nonzero
// length, longer than a policy's may be, or holding a quote, backslash or
// control byte, and for an unknown `can_upgrade`.
MXLIMIT_C_API int mxlimit_format_body(const mxlimit_decision* decision,
                                      char* buf, size_t cap,
                                      size_t* len) MXLIMIT_C_NOEXCEPT;

// mxlimit_format_ratelimit_headers(): in mxlimit/c_outcomes.h.

// mxlimit_metrics_prometheus()
//
// The limiter's counters in the Prometheus text format (table sizes,
// admissions, evictions, per-policy allowed, denied, shadow-denied and
// denied by another policy) as a malloc'd, NUL-terminated string in `*out`
// (free it with `mxlimit_free`), its length in `*len` if `len` is not NULL. For
// a metrics endpoint: it allocates and takes every shard's lock in turn.
// Errors: `MXLIMIT_EINVAL` (NULL `limiter` or `out`), `MXLIMIT_ENOMEM`; `*out`
// is then NULL.
MXLIMIT_C_API int mxlimit_metrics_prometheus(const mxlimit_limiter* limiter,
                                             char** out,
                                             size_t* len) MXLIMIT_C_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

// What follows a decision (the request body's length, the response's
// charge, the RateLimit fields), and the tier assignments, kept in headers
// of their own so that each stays readable; included here so that c.h alone
// still declares the whole ABI. Last: they need the declarations above.
#include "mxlimit/c_outcomes.h"  // IWYU pragma: export
#include "mxlimit/c_tiers.h"     // IWYU pragma: export

#endif  // MXLIMIT_C_H_
