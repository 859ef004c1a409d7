// -----------------------------------------------------------------------------
// File: appservice.h
// -----------------------------------------------------------------------------
//
// Which user an application service's request acts for. An appservice
// authenticates as its sender bot and names the user it acts as (a puppet)
// in the `user_id` query parameter; docs/embedding.md ("Exempt requests")
// asks an embedder to charge such a request to that user when the
// registration says `rate_limited: true`. mxlimitd and `mxlimit replay` both
// read the parameter through this function, so they charge the same user.
//
// Example:
//   // Who a request made with an appservice's `as_token` is charged as: ""
//   // for nobody (exempt: the sender itself, or a puppet of a registration
//   // with `rate_limited: false`), else the puppet.
//   std::string_view ChargedUser(std::string_view target, bool rate_limited,
//                                std::span<char> buffer) {
//     std::string_view puppet = mxlimit::AppserviceUserId(target, buffer);
//     return rate_limited ? puppet : std::string_view();
//   }

#ifndef MXLIMIT_APPSERVICE_H_
#define MXLIMIT_APPSERVICE_H_

#include <span>
#include <string_view>

namespace mxlimit {

// AppserviceUserId()
//
// The first `user_id` parameter of `target`'s query (after the '?', before
// any '#'), decoded as Synapse decodes a query string: `%XX` escapes (either
// case) and `+` as a space, so `?user_id=%40a+b%3Ax` names "@a b:x". Returns
// "" when the target has no `user_id` parameter or an empty one: the sender
// acts for itself.
//
// A value that cannot be decoded (a '%' without two hex digits, or more
// bytes than `buffer` holds) is returned as sent, still encoded. It is then
// not a well-formed user ID, so a limiter charges it to the shared overflow
// bucket: a client never earns exemption by sending a broken escape.
//
// The result views `buffer` or `target`. Allocation-free.
std::string_view AppserviceUserId(std::string_view target,
                                  std::span<char> buffer);

}  // namespace mxlimit

#endif  // MXLIMIT_APPSERVICE_H_
