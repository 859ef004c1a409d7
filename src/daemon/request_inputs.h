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
//   bool Read(const mxlimit::daemon::HttpRequestHead& head,
//             const mxlimit::IpAddress& nginx,
//             mxlimit::daemon::OriginalRequest& out) {
//     const mxlimit::Cidr proxies[] = {*mxlimit::ParseCidr("127.0.0.1/32")};
//     std::string_view error;
//     return mxlimit::daemon::ReadOriginalRequest(head, nginx, proxies, out,
//                                                 error);
//   }

#ifndef MXLIMIT_DAEMON_REQUEST_INPUTS_H_
#define MXLIMIT_DAEMON_REQUEST_INPUTS_H_

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "mxlimit/ip.h"
#include "src/daemon/http_head.h"

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
  // `?user_id=`, percent-decoded: who an appservice acts as. Empty if absent.
  std::string_view masquerade_user_id;
  // Backing store for decoded query values.
  std::array<char, kMaxTokenBytes> token_buffer{};
  std::array<char, kMaxTokenBytes> user_id_buffer{};
};

// Fills `out` from the subrequest. False with `error` set (a fixed message
// naming the header) when an input the proxy sets is missing or malformed:
//   - method: X-Original-Method (nginx), else X-Forwarded-Method (Caddy,
//     Traefik), else, when `path_target` is given, the subrequest's own
//     method (Envoy's HTTP ext_authz); an HTTP token;
//   - target: X-Original-URI, else X-Forwarded-Uri, else `path_target`; in
//     origin form ("/..."; an absolute-form target loses its scheme and
//     authority);
//   - client: the socket peer; when the peer is in `trusted_proxies`, the
//     rightmost untrusted hop of X-Forwarded-For, else of Forwarded, else the
//     address in X-Real-IP (see `ClientAddressFromForwardedFor`);
//   - token: `Authorization: Bearer`, else `?access_token=`; `user_id`:
//     `?user_id=`. These are the client's and never fail: a value that
//     cannot be percent-decoded, or is longer than kMaxTokenBytes decoded, is
//     used as sent.
bool ReadOriginalRequest(const HttpRequestHead& head, const IpAddress& peer,
                         std::span<const Cidr> trusted_proxies,
                         OriginalRequest& out, std::string_view& error,
                         std::string_view path_target = {});

// `target` in origin form: itself when it starts with '/', the part from the
// path on for an http(s) absolute-form target, else empty.
std::string_view OriginForm(std::string_view target);

// The percent-decoded value of the query parameter `name` in `target` into
// `buffer`. Returns false for a malformed escape or a value longer than the
// buffer (with `found` true and `value` the raw, undecoded text); true with
// `found` false when the parameter is absent.
bool QueryParameter(std::string_view target, std::string_view name,
                    std::span<char> buffer, std::string_view& value,
                    bool& found);

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_REQUEST_INPUTS_H_
