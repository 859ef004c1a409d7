// -----------------------------------------------------------------------------
// File: c_tiers.h
// -----------------------------------------------------------------------------
//
// The part of mxlimit's stable C ABI about tiers (docs/policies.md, "Tiers";
// docs/config.md, `tiers`): putting a user or a network in one of the
// policy file's tiers while running, taking it out, and listing who is in
// which. A request's tier comes back in `mxlimit_decision.tier`.
// mxlimit/c.h includes this header at its end, so `#include "mxlimit/c.h"`
// is all an embedder needs; this one alone works too (it includes c.h).
// c.h's rules (status codes, strings as pointer + length, the optional
// `char** errmsg`, threading) hold here; docs/c-api.md, "Tiers", shows them
// in use.
//
// These calls are for an admin endpoint or a moderation tool, not the
// request path: they take a lock over the whole limiter's tier directory and
// allocate. A check made after one returns sees its effect.
//
// Example:
//   #include <stdio.h>
//   #include <string.h>
//
//   // An admin command: "@bridge:example.org" gets the `bridge` tier (the
//   // policy file's `tiers: { bridge: { scale: 10 } }`) for a day.
//   int PromoteBridge(mxlimit_limiter* limiter) {
//     const char* who = "@bridge:example.org";
//     char* err = NULL;
//     int rc = mxlimit_set_tier(limiter, who, strlen(who), "bridge", 6,
//                               24 * 3600 * 1000, &err);
//     if (rc != MXLIMIT_OK) {  // e.g. MXLIMIT_ENOTFOUND: no such tier
//       fprintf(stderr, "%s\n", err ? err : mxlimit_status_name(rc));
//       mxlimit_free(err);
//     }
//     return rc;
//   }

#ifndef MXLIMIT_C_TIERS_H_
#define MXLIMIT_C_TIERS_H_

#include <stddef.h>
#include <stdint.h>

// mxlimit_limiter, the status codes, MXLIMIT_C_API. When c.h is the one
// included, this is a no-op (its guard is set) and its declarations are
// already in scope.
#include "mxlimit/c.h"

#ifdef __cplusplus
extern "C" {
#endif

// mxlimit_set_tier()
//
// Puts `subject` in the tier named `tier` (one the policy file defines under
// `tiers:`) from now on, beside the file's `tiers.assign` and before it for
// the same subject; replaces an earlier runtime assignment of the subject.
// `subject` is a Matrix user ID ("@bridge:example.org") or a network or
// address ("2001:db8:bad::/48", "198.51.100.7"); a user's assignment beats a
// network's, a longer prefix a shorter. The subject's next request is
// checked against the tier's rates; its buckets are kept (a tier changes
// rates, never bucket keys). A reload keeps the assignment while the new
// file still defines the tier.
//
// `expires_in_ms` > 0: the assignment ends by itself that many milliseconds
// from now on the steady clock (CLOCK_MONOTONIC, the clock of
// mxlimit_monotonic_now_ns; a caller that passes its own clock's `now_ns` to
// the checks should use the same one, or expiries and checks will
// disagree). 0: it lasts until mxlimit_clear_tier. Negative: an error.
//
// Errors (with a message in `*errmsg` when `errmsg` is not NULL; free it
// with mxlimit_free):
//   MXLIMIT_EINVAL     a NULL `limiter`, a NULL string with a nonzero
//                      length, a negative `expires_in_ms`, or a subject
//                      that is neither a user ID nor a network
//   MXLIMIT_ENOTFOUND  the policy file defines no tier named `tier`
//   MXLIMIT_ENOMEM     the cap on runtime assignments held at once
//                      (100,000; absl's kResourceExhausted) is reached
//                      (expired ones do not count), or out of memory
MXLIMIT_C_API int mxlimit_set_tier(mxlimit_limiter* limiter,
                                   const char* subject, size_t subject_len,
                                   const char* tier, size_t tier_len,
                                   int64_t expires_in_ms,
                                   char** errmsg) MXLIMIT_C_NOEXCEPT;

// mxlimit_clear_tier()
//
// Ends the runtime assignment of `subject` (written as for
// mxlimit_set_tier; a network is found whichever way it was written, e.g.
// "10.1.2.3/8" is "10.0.0.0/8"). The policy file's assignment of the same
// subject, if any, applies again.
//
// Errors: MXLIMIT_EINVAL as for mxlimit_set_tier; MXLIMIT_ENOTFOUND when the
// subject has no runtime assignment (the file's cannot be cleared: edit the
// file and reload; one that expired may still be held, and is then cleared
// without error); MXLIMIT_ENOMEM.
MXLIMIT_C_API int mxlimit_clear_tier(mxlimit_limiter* limiter,
                                     const char* subject, size_t subject_len,
                                     char** errmsg) MXLIMIT_C_NOEXCEPT;

// mxlimit_list_tiers()
//
// Every assignment in force now, the file's and the runtime ones, as a JSON
// array in a malloc'd, NUL-terminated string at `*out_json` (free it with
// mxlimit_free), sorted by kind (users first), subject, then the file's
// before a runtime one; a subject may appear twice, once for each. Each
// element is one object, with its members in this order:
//
//   {"kind":"user","subject":"@bridge:example.org","tier":"bridge",
//    "runtime":true,"expires_in_ms":86400000}
//
//   kind           "user" or "network"
//   subject        the user ID, or the network in canonical form
//                  ("2001:db8:bad::/48"; an address as a /32 or /128)
//   tier           the tier's name
//   runtime        true: set by mxlimit_set_tier; false: the file's
//                  `tiers.assign`
//   expires_in_ms  only for a runtime assignment that expires: the
//                  milliseconds left, rounded up (at least 1)
//
// Strings are JSON-escaped. An empty list is "[]". Later versions may append
// members to the objects: a reader skips those it does not know.
//
// Errors: MXLIMIT_EINVAL (NULL `limiter` or `out_json`), MXLIMIT_ENOMEM;
// `*out_json` is then NULL.
MXLIMIT_C_API int mxlimit_list_tiers(mxlimit_limiter* limiter, char** out_json,
                                     char** errmsg) MXLIMIT_C_NOEXCEPT;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MXLIMIT_C_TIERS_H_
