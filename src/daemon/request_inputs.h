// -----------------------------------------------------------------------------
// File: daemon/request_inputs.h
// -----------------------------------------------------------------------------
//
// What an authorization subrequest says about the request it stands for: the
// original method and target (from the proxy's headers), the client address
// (the socket peer, or what a trusted proxy forwarded), and the access token
// with any appservice `?user_id=`. Everything is a view into the subrequest
// or into a caller's buffer: reading the inputs allocates nothing.
//
// Example:
//   // nginx at 127.0.0.1 sent X-Original-Method, X-Original-URI and
//   // X-Forwarded-For for a client at 203.0.113.9.
//   bool Read(const mxlimit::http::HttpRequestHead& head,
//             const mxlimit::IpAddress& nginx,
//             mxlimit::daemon::OriginalRequest& out) {
//     const mxlimit::Cidr proxies[] = {*mxlimit::ParseCidr("127.0.0.1/32")};
//     std::string_view error;
//     return mxlimit::daemon::ReadOriginalRequest(
//         head, mxlimit::daemon::CheckProtocol::kAuthRequest, nginx, proxies,
//         out, error);
//   }

#ifndef MXLIMIT_DAEMON_REQUEST_INPUTS_H_
#define MXLIMIT_DAEMON_REQUEST_INPUTS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mxlimit/ip.h"
#include "mxlimit/request.h"
#include "src/http/request_head.h"
#include "src/util/query.h"

namespace mxlimit::daemon {

// Longest access token or `?user_id=` read; longer ones are a 400. Real
// tokens are tens of bytes, user IDs at most 255.
inline constexpr size_t kMaxTokenBytes = 1024;

struct OriginalRequest {
  std::string_view method;
  std::string_view target;  // raw, still percent-encoded
  IpAddress client;
  // Empty when the request carries no access token (or a non-Bearer
  // Authorization such as federation's X-Matrix).
  std::string_view access_token;
  // `?user_id=` as mxlimit::AppserviceUserId reads it: who an appservice
  // acts as. Empty if absent.
  std::string_view masquerade_user_id;
  // The `origin` of `Authorization: X-Matrix ...` (a federation request), as
  // sent: unverified, so the limiter binds it to the client's network.
  // Empty without one.
  std::string_view origin;
  // X-Original-Content-Length, the request body's length as the proxy saw
  // it (`Request::request_bytes`); -1 when absent or not a decimal number
  // of at most 18 digits.
  int64_t request_bytes = -1;
  // X-Request-Id, the proxy's id for the request (nginx $request_id, Caddy
  // {http.request.uuid}), which the completion feed's access-log line
  // carries too (src/daemon/feed_sink.h); empty when absent or not a plain id
  // (replay::IsRequestId).
  std::string_view request_id;
  // Backing store for decoded query values.
  std::array<char, kMaxTokenBytes> token_buffer{};
  std::array<char, kMaxTokenBytes> user_id_buffer{};
};

// Which proxy asks, by the endpoint it asks at. Each proxy forwards some of
// the client's own headers (Caddy's forward_auth copies all of them), so a
// decision believes only the headers that proxy sets itself: a client's copy
// of another proxy's header is never read.
enum class CheckProtocol {
  // nginx auth_request (/_mxlimit/auth_request): X-Original-Method,
  // X-Original-URI; the client from X-Forwarded-For, else X-Real-IP.
  kAuthRequest,
  // Caddy forward_auth, Traefik ForwardAuth (/_mxlimit/forward_auth):
  // X-Forwarded-Method, X-Forwarded-Uri, X-Forwarded-For.
  kForwardAuth,
  // Envoy's HTTP ext_authz (/_mxlimit/forward_auth<target>): the check's own
  // method, the target its path carries, X-Forwarded-For.
  kEnvoy,
};

// The `origin` parameter of an `Authorization` value of the X-Matrix scheme
// (`X-Matrix origin="a.example",destination=...,key=...,sig=...`; the scheme
// and parameter names in any case, the value quoted or not), or empty when
// `authorization` is another scheme or names no origin. A view into
// `authorization`; never fails, never allocates.
std::string_view XMatrixOrigin(std::string_view authorization);

// Fills `out` from the subrequest. False with `error` set (a fixed message
// naming the header) when an input the proxy sets is missing or malformed:
//   - method and target: as `protocol` says; the method an HTTP token, the
//     target in origin form ("/..."; an absolute-form target loses its
//     scheme and authority, see `OriginForm`);
//   - client: the socket peer; when the peer is in `trusted_proxies`, the
//     rightmost untrusted hop of X-Forwarded-For (see
//     `ClientAddressFromForwardedFor`), else, for nginx only, the address in
//     X-Real-IP;
//   - token: `Authorization: Bearer`, else `?access_token=`; `user_id`:
//     `?user_id=`. These are the client's and never fail: a value that
//     cannot be percent-decoded, or is longer than kMaxTokenBytes decoded, is
//     used as sent.
// `envoy_target` is the target carried in the path (kEnvoy only).
bool ReadOriginalRequest(const http::HttpRequestHead& head,
                         CheckProtocol protocol, const IpAddress& peer,
                         std::span<const Cidr> trusted_proxies,
                         OriginalRequest& out, std::string_view& error,
                         std::string_view envoy_target = {});

// A Content-Length value: 1 to 18 decimal digits; -1 for anything else.
int64_t ParseContentLength(std::string_view value);

// The query decoder (src/util/query.h), for callers of this header.
using internal::QueryParameter;

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_REQUEST_INPUTS_H_
