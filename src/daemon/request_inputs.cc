#include "src/daemon/request_inputs.h"

#include <cstring>

#include "absl/strings/match.h"
#include "mxlimit/appservice.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/replay/log_parsers.h"
#include "src/util/query.h"
#include "src/util/trusted_proxy.h"

namespace mxlimit::daemon {
namespace {

using internal::IsTrustedProxy;
using internal::ToAbsl;

bool IsMethodToken(std::string_view m) {
  if (m.empty() || m.size() > 32) return false;
  for (char c : m) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Walks every field called `name`, last first, as one list: each field's
// walk starts from what the later fields resolved to, and stops once that is
// no longer a trusted proxy. Returns false when no such field exists.
template <typename Resolve>
bool WalkForwarded(const http::HttpRequestHead& head, std::string_view name,
                   const IpAddress& peer, std::span<const Cidr> trusted,
                   Resolve resolve, IpAddress& out) {
  bool any = false;
  IpAddress at = peer;
  for (size_t i = head.field_count; i-- > 0;) {
    const http::HttpHeaderField& f = head.fields[i];
    if (!absl::EqualsIgnoreCase(ToAbsl(f.name), ToAbsl(name))) {
      continue;
    }
    any = true;
    if (!IsTrustedProxy(at, trusted)) break;
    at = resolve(at, f.value, trusted);
  }
  out = at;
  return any;
}

}  // namespace

std::string_view XMatrixOrigin(std::string_view authorization) {
  constexpr std::string_view kScheme = "x-matrix";
  std::string_view rest = authorization;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(ToAbsl(rest), ToAbsl(kScheme)) ||
      (rest[kScheme.size()] != ' ' && rest[kScheme.size()] != '\t')) {
    return {};
  }
  rest.remove_prefix(kScheme.size());
  // Parameters: name=value or name="value", separated by commas.
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t' ||
                             rest.front() == ',')) {
      rest.remove_prefix(1);
    }
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return {};
    std::string_view name = rest.substr(0, eq);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    rest.remove_prefix(eq + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::string_view value;
    if (!rest.empty() && rest.front() == '"') {
      const size_t close = rest.find('"', 1);
      if (close == std::string_view::npos) return {};
      value = rest.substr(1, close - 1);
      rest.remove_prefix(close + 1);
    } else {
      const size_t comma = rest.find(',');
      value = rest.substr(0, comma);
      while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma);
    }
    if (absl::EqualsIgnoreCase(ToAbsl(name), "origin")) return value;
  }
  return {};
}

bool ReadOriginalRequest(const http::HttpRequestHead& head,
                         CheckProtocol protocol, const IpAddress& peer,
                         std::span<const Cidr> trusted_proxies,
                         OriginalRequest& out, std::string_view& error,
                         std::string_view envoy_target) {
  bool found = true;
  switch (protocol) {
    case CheckProtocol::kAuthRequest:
      out.method = head.Field("X-Original-Method", &found);
      if (!found || out.method.empty()) {
        error = "missing X-Original-Method";
        return false;
      }
      out.target = head.Field("X-Original-URI", &found);
      if (!found || out.target.empty()) {
        error = "missing X-Original-URI";
        return false;
      }
      break;
    case CheckProtocol::kForwardAuth:
      out.method = head.Field("X-Forwarded-Method", &found);
      if (!found || out.method.empty()) {
        error = "missing X-Forwarded-Method";
        return false;
      }
      out.target = head.Field("X-Forwarded-Uri", &found);
      if (!found || out.target.empty()) {
        error = "missing X-Forwarded-Uri";
        return false;
      }
      break;
    case CheckProtocol::kEnvoy:
      out.method = head.method;
      out.target = envoy_target;
      break;
  }
  if (!IsMethodToken(out.method)) {
    error = "malformed original method";
    return false;
  }
  out.target = OriginForm(out.target);
  if (out.target.empty() || out.target.front() != '/') {
    error = "the original target is not a request target";
    return false;
  }

  out.client = peer;
  if (IsTrustedProxy(peer, trusted_proxies) &&
      !WalkForwarded(head, "x-forwarded-for", peer, trusted_proxies,
                     ClientAddressFromForwardedFor, out.client) &&
      protocol == CheckProtocol::kAuthRequest) {
    // nginx may be set up to send X-Real-IP instead. Caddy, Traefik and
    // Envoy always set X-Forwarded-For, so through them an X-Real-IP (or a
    // Forwarded) could only be the client's own.
    const std::string_view real_ip = head.Field("X-Real-IP", &found);
    if (found) {
      absl::StatusOr<IpAddress> ip = ParseIpAddress(real_ip);
      if (!ip.ok()) {
        error = "malformed X-Real-IP from a trusted proxy";
        return false;
      }
      out.client = *ip;
    }
  }

  out.access_token = {};
  out.masquerade_user_id = {};
  out.origin = {};
  // What the client controls never fails the decision: a proxy told to let
  // requests through when the sidecar errs would let such requests through
  // unlimited. A token or user ID that cannot be decoded (a bad escape, over
  // kMaxTokenBytes) is used as sent: the token hash still keys it, and the
  // limiter gives a malformed user ID the one shared overflow bucket.
  const std::string_view auth = head.Field("Authorization", &found);
  if (found && absl::StartsWithIgnoreCase(ToAbsl(auth), "bearer ")) {
    std::string_view token = auth.substr(7);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    out.access_token = token;
  } else if (found) {
    out.origin = XMatrixOrigin(auth);
  } else {
    QueryParameter(out.target, "access_token", out.token_buffer,
                   out.access_token, found);
  }
  out.masquerade_user_id = AppserviceUserId(out.target, out.user_id_buffer);
  // Set by the proxy from the request's own Content-Length (nginx passes no
  // client header; Caddy's header_up replaces the client's copy). Envoy's
  // endpoint never reads it: it carries the client's headers. A bad value
  // is unknown (a whole burst to a byte policy), never an error.
  out.request_bytes = -1;
  if (protocol != CheckProtocol::kEnvoy) {
    const std::string_view length =
        head.Field("X-Original-Content-Length", &found);
    if (found) out.request_bytes = ParseContentLength(length);
  }
  // Only ever matched against the proxy's own log line: a client's copy
  // (Caddy forwards it when its config sets none) names no decision of
  // another client's, since ids are random and the log carries the proxy's.
  out.request_id = head.Field("X-Request-Id");
  if (!replay::IsRequestId(out.request_id)) out.request_id = {};
  return true;
}

int64_t ParseContentLength(std::string_view value) {
  if (value.empty() || value.size() > 18) return -1;
  int64_t n = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace mxlimit::daemon
