// -----------------------------------------------------------------------------
// File: policy/route_glob.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// Compile-time reasoning about which raw-path patterns can ever see the paths
// of a route, so that `PolicySet::Resolve` may skip the raw-path walk for
// requests whose resolution their route alone decides:
//
//   * `RouteFormGlob` turns one request shape of a route (a template such as
//     "/_matrix/client/r0/rooms/{roomId}/state") into a canonical '*' glob
//     that matches the canonical form of every path served as that shape.
//   * `GlobsOverlap` decides whether a pattern and a form glob share a
//     matching text.
//
// A pattern that does not overlap any of a route's form globs matches none of
// its canonical paths. Both functions may over-approximate (say "may
// overlap" or refuse a form) but never under-approximate: that direction
// only costs the shortcut, the other would drop a policy.

#ifndef MXLIMIT_POLICY_ROUTE_GLOB_H_
#define MXLIMIT_POLICY_ROUTE_GLOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mxlimit::internal {

// In a form glob, a placeholder: zero or more bytes other than '/' (a
// placeholder matches one segment, and a canonical segment never decodes to
// '/'). Route templates hold no NUL byte, so it cannot be a literal.
inline constexpr char kSegmentStar = '\0';

// The canonical glob of a route form: the form in canonical form
// (internal/canonical_path.h), each `{name}` segment a kSegmentStar. nullopt
// when the glob could miss a served path: a literal segment holding '%' (its
// escapes would decode) or a NUL byte, a placeholder where a version fold
// could depend on its bytes (the first two segments, or the next two under
// `/_matrix/client` and `/_matrix/media`), or a form not starting with '/'.
std::optional<std::string> RouteFormGlob(std::string_view form);

// The bytes of a form glob before its first '*' or kSegmentStar.
std::string_view FormGlobHead(std::string_view glob);

// True if some text matches both the pattern `pattern` (each '*' matches zero
// or more bytes, every other byte itself: GlobMatch's language) and the form
// glob `form` (RouteFormGlob's: '*' as in patterns, kSegmentStar as above).
// Exact: literal heads and tails are compared first, then a search over
// position pairs, O(|pattern| * |form|), a row of 64 positions at a time for
// forms under 64 bytes. Compile time only. `search` picks the search for
// tests (kRows needs a form under 64 bytes).
enum class OverlapSearch : uint8_t { kAuto, kRows, kCells };
bool GlobsOverlap(std::string_view pattern, std::string_view form,
                  OverlapSearch search = OverlapSearch::kAuto);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_POLICY_ROUTE_GLOB_H_
