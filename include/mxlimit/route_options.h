// -----------------------------------------------------------------------------
// File: route_options.h
// -----------------------------------------------------------------------------
//
// Which routes a limiter knows: the built-in route packs it uses and the
// extra templates its operator adds (the `routes:` section of the config
// file, `LimiterConfig::routes` in code). A limiter's route table is built
// once from these options; its route ids key the buckets, so the options are
// fixed for the limiter's life (`Limiter::Reload` refuses a change).
//
// Example:
//   mxlimit::RouteOptions DendriteRoutes() {
//     mxlimit::RouteOptions routes;
//     routes.packs = {"spec", "msc", "dendrite"};
//     routes.extra.push_back(
//         {"/_matrix/client/unstable/org.example.msc9999/rooms/{roomId}/things",
//          ""});
//     // Another spelling of the same endpoint: one key, one budget.
//     routes.extra.push_back(
//         {"/_matrix/client/unstable/org.example.msc9999.v2/rooms/{roomId}/"
//          "things",
//          "/_matrix/client/unstable/org.example.msc9999/rooms/{roomId}/things"});
//     return routes;  // ValidateRouteOptions(routes).ok()
//   }
//
// docs/routes.md lists the packs and their keys; docs/config.md, "routes",
// every rule `ValidateRouteOptions` checks.

#ifndef MXLIMIT_ROUTE_OPTIONS_H_
#define MXLIMIT_ROUTE_OPTIONS_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace mxlimit {

// One operator-defined route template.
struct ExtraRoute {
  // The template, in the built-in table's syntax: literal segments and
  // `{name}` placeholders, each matching one raw segment. Written under a
  // version alias prefix that spells one stable prefix ("/_matrix/client/r0/
  // ...", "/_matrix/media/v1/..."), it is keyed as its stable spelling
  // ("/_matrix/client/v3/...") and served under every spelling of it.
  std::string route_template;
  // Empty: the template is a route key of its own (pack "extra"). Otherwise
  // the active template (built-in or extra) whose key it shares: requests in
  // either spelling then charge one bucket.
  std::string alias_of;

  friend bool operator==(const ExtraRoute&, const ExtraRoute&) = default;
};

struct RouteOptions {
  // Built-in packs by name (RoutePackNames()), in any order: ids follow the
  // canonical pack order whatever the order here. Empty means
  // DefaultRoutePackNames().
  std::vector<std::string> packs;
  // Operator templates; their keys get the ids after the packs' keys, in
  // this order.
  std::vector<ExtraRoute> extra;

  // Limits ValidateRouteOptions enforces.
  static constexpr size_t kMaxExtraRoutes = 4096;
  static constexpr size_t kMaxTemplateBytes = 2048;

  friend bool operator==(const RouteOptions&, const RouteOptions&) = default;
};

// Every built-in pack, in canonical order: spec, msc, synapse, dendrite,
// conduwuit, identity, push.
std::span<const std::string_view> RoutePackNames();

// The packs used when `RouteOptions::packs` is empty: spec, msc, synapse.
std::span<const std::string_view> DefaultRoutePackNames();

// The packs `routes` selects, in canonical order, each once (the default
// packs when it names none). Unknown names are left out.
std::vector<std::string> ActiveRoutePacks(const RouteOptions& routes);

// True when both options build the same route table: the same set of packs
// (order and repetition aside, an empty list being the default packs) and
// the same extra templates in the same order.
bool SameRouteTable(const RouteOptions& a, const RouteOptions& b);

// OK, or InvalidArgument listing every problem, one per line, each naming
// the field as the config file spells it ("routes.extra[3].template: ...").
// The rules (docs/config.md): a known pack name; an extra template starts
// with '/', has no empty ("//"), "." or ".." segment, no '?' or '#', no
// placeholder in its first segment, at most RouteOptions::kMaxTemplateBytes
// bytes; it is not listed twice and does not match exactly the paths of
// another active template, form or version spelling; `alias_of` names an
// active route key with the same placeholders; at most kMaxExtraRoutes
// extra templates, and the whole table fits a RouteId.
//
// NOTE: an extra template identical to an active built-in one (after the
// version fold above) is not an error: the built-in key serves it (a later
// release may add a template an operator added first), and the config loader
// warns.
absl::Status ValidateRouteOptions(const RouteOptions& routes);

}  // namespace mxlimit

#endif  // MXLIMIT_ROUTE_OPTIONS_H_
