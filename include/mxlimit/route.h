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
//   std::string_view SendKey(const mxlimit::RouteNormalizer& normalizer) {
//     mxlimit::Route r = normalizer.Normalize(
//         "PUT", "/_matrix/client/r0/rooms/!a%3Ab.c/send/m.room.message/t1");
//     // "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}"
//     return r.key;
//   }
//
// The rules, in short (docs/routes.md has the full list of keys and aliases):
//
//   * A key is a template from the route table written as a path, e.g.
//     `/_matrix/client/v3/rooms/{roomId}/state`. It never contains a byte of
//     the request's variable segments. The table is the union of the
//     built-in packs a `RouteOptions` selects (src/route/packs/*.inc; by
//     default spec, msc and synapse) and the operator's extra templates.
//   * The target is matched as received: the path before the first '?' or
//     '#', split at '/', each segment still percent-encoded, so `%2F` inside
//     a room ID stays inside its segment. A literal segment matches its own
//     bytes, or any spelling whose escapes decode to them as the canonical
//     form of policy matching decodes them (`%73ync` is `sync`, `Sync` is
//     not; an escaped '/', '?', '#' or '%' stays an escape and matches no
//     literal): every spelling of a known route is that route.
//   * A placeholder matches one segment of one or more bytes; only
//     `{stateKey}` may be empty (`/state/{eventType}/` is the empty state
//     key). Raw UTF-8, `+` and broken percent-encoding are just bytes.
//   * Where a literal and a placeholder could both match, the literal wins
//     (`/query/directory` over `/query/{queryType}`).
//   * Version aliases coalesce: r0, api/v1 and unstable spellings of a
//     client-server endpoint, r0 and v1 spellings of legacy media, and the
//     unstable MSC spellings listed in the table get the stable key.
//   * Extra request forms a homeserver serves as the same endpoint (send or
//     redact without a txn ID, state without a state key, optional trailing
//     slashes on some federation routes, legacy key-id forms) get that
//     endpoint's key.
//   * Everything else is the fallback: unknown paths, an empty or repeated
//     '/' ("//"), a trailing '/' where the endpoint has none, a "." or ".."
//     segment, a suffix after a known route (Synapse's unanchored regexes
//     accept some; mxlimit does not, so a suffix cannot mint a key — it
//     lands on the one fallback key, and raw-path policies still see it), a
//     target that does not start with '/' (absolute-form, '*'), and any
//     target whose path holds a C0 control byte, space or DEL.
//
// Thread safety: a constructed `RouteNormalizer` is immutable. Share one by
// reference (or pointer) among any number of threads; `Normalize` takes no
// lock and allocates nothing.

#ifndef MXLIMIT_ROUTE_H_
#define MXLIMIT_ROUTE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mxlimit/route_options.h"

namespace mxlimit {

// Dense id of a route key: 0 is the fallback, known routes are 1..size()-1.
// Stable for a given build of the library.
using RouteId = uint16_t;

inline constexpr RouteId kFallbackRouteId = 0;
// The key every unknown target shares.
inline constexpr std::string_view kFallbackRouteKey = "<fallback>";

// Route component of a bucket key for `share_threshold: true` policies: every
// route under the pattern shares one counter per client. Never a real route
// id (a policy set refuses route tables that large).
inline constexpr RouteId kSharedBucketRoute = 0xFFFF;

// One request shape a route is served under: the route's own template, an
// extra form or a version-alias spelling, in template syntax (each `{name}`
// segment stands for one raw segment). `RouteNormalizer::forms()` lists them
// all; `PolicySet::Compile` reads them to learn which raw-path patterns can
// ever see a route's paths.
struct RouteForm {
  RouteId id = kFallbackRouteId;
  std::string pattern;  // "/_matrix/client/r0/rooms/{roomId}/state"
};

struct Route {
  RouteId id = kFallbackRouteId;
  // Points into the normalizer's own storage: valid as long as it lives.
  std::string_view key = kFallbackRouteKey;
  bool known = false;
};

// The path part of a raw request target: everything before the first '?' or
// '#'. Policies match this "raw query-free path" besides the route key.
//
// PERFORMANCE: one plain scan. (libstdc++'s `find_first_of` calls memchr over
// the set of delimiters once per byte of the target, which cost more than the
// whole route lookup.)
constexpr std::string_view QueryFreePath(std::string_view target) {
  size_t end = 0;
  while (end < target.size() && target[end] != '?' && target[end] != '#') {
    ++end;
  }
  return target.substr(0, end);
}

namespace internal {
class MergedRouteTable;
class RouteTrie;
}  // namespace internal

// -----------------------------------------------------------------------------
// RouteNormalizer
// -----------------------------------------------------------------------------
//
// Built once from a route table (RouteOptions: built-in packs plus extra
// templates): a segment trie of about a thousand nodes for the default
// packs, built in about a millisecond, so every `Limiter` may own one.
// Afterwards it is read-only.
//
// Neither copyable (nothing needs a second trie; share by reference) nor
// movable: a `Route::key` points into the normalizer, and a moved-from
// normalizer would be a trap on the hot path.
class RouteNormalizer {
 public:
  // The default packs (DefaultRoutePackNames()), no extra templates. Shares
  // one table built on first use, so it costs next to nothing.
  RouteNormalizer();
  // The table of `routes` (options that spell the default table share it,
  // as the default constructor does).
  // REQUIRES: ValidateRouteOptions(routes).ok(). Otherwise prints the
  // problems to stderr and aborts, as for a broken built-in table: the
  // config loader and `Limiter::Create` validate first; use `Create` for
  // options nobody has checked.
  explicit RouteNormalizer(const RouteOptions& routes);
  // The table of `routes`, or InvalidArgument listing every problem
  // (ValidateRouteOptions).
  static absl::StatusOr<std::unique_ptr<RouteNormalizer>> Create(
      const RouteOptions& routes);
  ~RouteNormalizer();

  RouteNormalizer(const RouteNormalizer&) = delete;
  RouteNormalizer& operator=(const RouteNormalizer&) = delete;
  RouteNormalizer(RouteNormalizer&&) = delete;
  RouteNormalizer& operator=(RouteNormalizer&&) = delete;

  // RouteNormalizer::Normalize()
  //
  // The route `target` is served as. `target` is the raw request target as
  // received: path, optional `?query`, optional `#fragment` (both ignored).
  // Unknown targets get `{kFallbackRouteId, kFallbackRouteKey, false}`.
  //
  // `method` does not change the key. The key is what a policy charges, and
  // Matrix paths name endpoints without the method: GET and PUT on
  // `/rooms/{roomId}/state/{eventType}/{stateKey}` are one resource, and
  // policies pick methods themselves (`Policy::methods`). So HEAD is keyed as
  // GET, and a method a route does not serve (answered 405 by the server)
  // gets that route's key rather than minting a new one.
  //
  // PERFORMANCE: one pass over the path bytes plus one hash probe per
  // segment; no allocation, no exception, whatever the input.
  Route Normalize(std::string_view method,
                  std::string_view target) const noexcept;

  // RouteNormalizer::Match()
  //
  // `Normalize` without building a Route, for a limiter's hot path: the
  // route id of `target`, and in `*path_size` the length of its query-free
  // path (the bytes before any `?` or `#`), both from the same single pass.
  RouteId Match(std::string_view target, size_t* path_size) const noexcept;

  // Number of RouteIds, the fallback included: ids are 0..size()-1.
  size_t size() const;

  // The key of `id`; key(kFallbackRouteId) == kFallbackRouteKey. An id of
  // size() or more (never returned by Normalize) also yields the fallback key.
  std::string_view key(RouteId id) const;

  // Every key indexed by RouteId, fallback first. For precomputing per-route
  // policy candidates, `mxlimit normalize --list` and the docs.
  std::span<const std::string_view> keys() const;

  // Every request shape the normalizer serves, each with its route id: a
  // target is served as a known route exactly when its query-free path is
  // one of these with every placeholder replaced by one segment and every
  // literal segment spelled as itself or with escapes that decode to it
  // (so the canonical form of the path is the form's, placeholders aside).
  // For precomputing per-route policy resolution (`PolicySet::Compile`).
  std::span<const RouteForm> forms() const;

  // The pack `id`'s key comes from ("spec", "synapse", ...), "extra" for an
  // operator's template, "" for the fallback and ids of size() or more. A
  // key listed by several active packs belongs to the first in canonical
  // order.
  std::string_view pack(RouteId id) const;

  // The options this table was built from, `packs` resolved: the active
  // packs in canonical order. `Limiter::Reload` compares them.
  const RouteOptions& options() const;

 private:
  explicit RouteNormalizer(std::shared_ptr<const internal::MergedRouteTable> t);

  // Owns the trie and the keys' text; the default table is shared.
  std::shared_ptr<const internal::MergedRouteTable> table_;
  const internal::RouteTrie* trie_;
};

}  // namespace mxlimit

#endif  // MXLIMIT_ROUTE_H_
