// -----------------------------------------------------------------------------
// File: route.h
// -----------------------------------------------------------------------------
//
// `mxlimit::RouteNormalizer` maps a raw HTTP request target to the Matrix
// endpoint it addresses. Client-chosen identifiers in the path (room IDs,
// event IDs, transaction IDs, user IDs, …) become fixed placeholders, so one
// endpoint is one rate-limit key however many identifiers a client invents.
// Every target that matches no known endpoint maps to one shared fallback.
//
// Example:
//   mxlimit::RouteNormalizer normalizer;
//   mxlimit::Route r = normalizer.Normalize(
//       "PUT", "/_matrix/client/r0/rooms/!a%3Ab.c/send/m.room.message/t1");
//   // r.key == "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}"
//
// (Declarations fixed by the foundation; the route-normalizer issue fills in
// the table, the matcher and the documentation of every rule.)

#ifndef MXLIMIT_ROUTE_H_
#define MXLIMIT_ROUTE_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace mxlimit {

// Dense id of a route key: 0 is the fallback, known routes are 1..size()-1.
// Stable for a given build of the library.
using RouteId = uint16_t;

inline constexpr RouteId kFallbackRouteId = 0;
// The key every unknown target shares.
inline constexpr std::string_view kFallbackRouteKey = "<fallback>";

struct Route {
  RouteId id = kFallbackRouteId;
  // Points into the normalizer's own storage: valid as long as it lives.
  std::string_view key = kFallbackRouteKey;
  bool known = false;
};

// The path part of a raw request target: everything before the first '?' or
// '#'. Policies match this "raw query-free path" besides the route key.
constexpr std::string_view QueryFreePath(std::string_view target) {
  size_t end = target.find_first_of("?#");
  return end == std::string_view::npos ? target : target.substr(0, end);
}

}  // namespace mxlimit

#endif  // MXLIMIT_ROUTE_H_
