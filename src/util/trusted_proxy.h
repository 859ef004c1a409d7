// Whether a peer is one of the trusted proxies: the one rule behind
// mxlimitd's check of the connection's peer and the X-Forwarded-For /
// Forwarded resolvers' check of each hop (mxlimit/ip.h).
//
// Internal: not installed.

#ifndef MXLIMIT_UTIL_TRUSTED_PROXY_H_
#define MXLIMIT_UTIL_TRUSTED_PROXY_H_

#include <span>

#include "mxlimit/ip.h"

namespace mxlimit::internal {

// Whether `peer` lies in one of `trusted_proxies`, so that what it says
// about the client (X-Forwarded-For, Forwarded, X-Real-IP) is believed.
// Allocation-free.
bool IsTrustedProxy(const IpAddress& peer,
                    std::span<const Cidr> trusted_proxies);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_TRUSTED_PROXY_H_
