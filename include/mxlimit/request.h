// -----------------------------------------------------------------------------
// File: request.h
// -----------------------------------------------------------------------------
//
// `mxlimit::Request`: one HTTP request as `Limiter` and `ShardedLimiter` see
// it. Views only, so building one copies nothing.
//
// Example:
//   mxlimit::Request MessageSend() {
//     mxlimit::Request req;
//     req.method = "PUT";
//     req.target =
//         "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/1";
//     req.client = *mxlimit::ParseIpAddress("203.0.113.9");
//     req.user_id = "@alice:example.org";
//     return req;  // views: the strings must outlive the Check
//   }

#ifndef MXLIMIT_REQUEST_H_
#define MXLIMIT_REQUEST_H_

#include <chrono>
#include <cstdint>
#include <string_view>

#include "mxlimit/ip.h"

namespace mxlimit {

// One HTTP request as the limiter sees it. Views only: nothing is copied.
// The flags sit together, so the struct is two cache lines, and the fields
// that 0.1.0's scopes, delays and outcomes added come after `cost`: the
// earlier fields keep their order and offsets (a designated initializer
// naming them still compiles).
struct Request {
  std::string_view method;
  // The raw request target as received: path, optional ?query and #fragment,
  // still percent-encoded.
  std::string_view target;
  // The client address (the socket peer, or a trusted X-Forwarded-For).
  IpAddress client;
  // The authenticated Matrix user ID; empty when anonymous.
  std::string_view user_id;
  // Set for requests the embedder trusts (application services, admins):
  // neither checked nor charged.
  bool exempt = false;
  // True once the embedder has verified the request's signature against the
  // origin's keys: its buckets are keyed by the name alone. Unverified (as
  // mxlimitd, which sees only headers, always is), the name is bound to the
  // client's network, so a forged origin cannot spend the real server's
  // budget.
  bool origin_verified = false;
  // True when the embedder can hold this request for a `Decision::delay`
  // (mxlimitd below its `--max-held`, replay). False, the default, so that an
  // embedder that reads only `Decision::allowed` never lets a delayed
  // request through early: policies with `on_limit: delay` then deny it as
  // `deny` policies do.
  bool may_delay = false;
  // How many requests this one counts as. Must be >= 0 for Check/Peek; a
  // negative cost in Charge refunds.
  int64_t cost = 1;
  // The request body's length (its Content-Length), what policies with
  // `cost: request_bytes` charge (an empty body still needs a byte of room);
  // -1 when unknown (a chunked upload), which they charge a whole burst, so
  // that hiding the length never slips past a quota.
  int64_t request_bytes = -1;
  // When above 0, the leases this request takes (in-flight policies) end
  // by themselves after at most this long, instead of the policy's `lease`.
  // For an embedder that cannot see the request finish and knows it ends
  // sooner: mxlimitd sets a /sync long-poll's `timeout` plus one second.
  std::chrono::nanoseconds max_lease{0};
  // The server a federation request comes from (`Authorization: X-Matrix
  // origin=...`); empty for client requests. Origin-scope policies apply
  // only when it is set.
  std::string_view origin = {};
  // The account the request is about, which only the embedder can read from
  // the body: the user a login names, the invitee of an invite. Empty:
  // target-scope policies do not apply. (Named `target_user` because
  // `target` is the request target above.)
  std::string_view target_user = {};
};

// How a request ended, for `Limiter::Settle`: what policies charged on the
// response (`charge: response`, `cost: response_bytes`) are charged by.
struct Completion {
  // The HTTP status answered (200, 401, ...).
  int status = 0;
  // The response body's length in bytes, as sent.
  int64_t body_bytes = 0;
};

// `target` in origin form, as `Request::target` wants it: an absolute-form
// target ("http://host/_matrix/client/v3/login?x", RFC 9112 section 3.2.2;
// scanners and forward-proxy probes send them, and servers must accept them)
// loses its scheme ("http://" or "https://", any case) and authority; any
// other target is returned as it is (origin form, "*", or an absolute form
// without a path, which then matches no route). A view into `target`; never
// allocates. mxlimitd, `mxlimit replay` and `explain` all read targets
// through it, so every spelling of a request is judged alike.
std::string_view OriginForm(std::string_view target);

// What `Request::max_lease` should be for an embedder that never sees a
// request end (mxlimitd, `mxlimit replay`): the `timeout` query parameter
// of `target` (a /sync long-poll's, in milliseconds) plus one second; 0,
// meaning the policy's own lease, when there is none or it is not a plain
// decimal number. Values past an hour count as an hour. Never allocates.
std::chrono::nanoseconds LeaseForTimeout(std::string_view target);

}  // namespace mxlimit

#endif  // MXLIMIT_REQUEST_H_
