// -----------------------------------------------------------------------------
// File: route/route_packs.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit. The built-in route table is split into named
// packs, each the group of endpoints one kind of server serves. A limiter's
// table is the union of the packs its options name (plus extra templates).
//
// Each pack is one data file, src/route/packs/<name>.inc, written with the
// four macros documented in packs/spec.inc; src/route/route_table.cc turns
// every file into a `RouteTableSpec`. Rules for combining packs:
//
//   * A template listed by several active packs is one key, whose id is that
//     of its first appearance in canonical pack order.
//   * A form (MXLIMIT_ROUTE_FORM) is active when its pack is active and the
//     template it names is active (it may name another pack's template).
//   * A prefix alias (MXLIMIT_PREFIX_ALIAS) is active when its pack is
//     active, and then applies to every active template and form.
//   * MXLIMIT_MAY_BE_EMPTY names hold for every pack and extra template.
//   * Route ids are dense: active packs' templates in canonical pack order
//     (and file order within a pack), then extra templates in their order.

#ifndef MXLIMIT_ROUTE_ROUTE_PACKS_H_
#define MXLIMIT_ROUTE_ROUTE_PACKS_H_

#include <span>
#include <string_view>

#include "src/route/route_trie.h"

namespace mxlimit::internal {

struct RoutePack {
  std::string_view name;     // "spec"
  std::string_view summary;  // one line, for `normalize --list --packs`
  RouteTableSpec table;
};

// Every built-in pack in canonical order: spec, msc, synapse, dendrite,
// conduwuit, identity, push.
std::span<const RoutePack> BuiltinRoutePacks();

// The packs a limiter uses when its options name none: spec, msc, synapse.
std::span<const std::string_view> DefaultRoutePacks();

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ROUTE_ROUTE_PACKS_H_
