// -----------------------------------------------------------------------------
// File: route/route_table_builder.h
// -----------------------------------------------------------------------------
//
// NOTE: internal to mxlimit.
//
// One limiter's route table: the active built-in packs and the operator's
// extra templates (mxlimit/route_options.h) merged into one owned
// `RouteTableSpec` by the rules of src/route/route_packs.h, after every
// extra template has been checked. `RouteNormalizer` builds its trie from
// it; the config loader reads the problems one by one to give each its
// position in the file.

#ifndef MXLIMIT_ROUTE_ROUTE_TABLE_BUILDER_H_
#define MXLIMIT_ROUTE_ROUTE_TABLE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mxlimit/route_options.h"
#include "src/route/route_trie.h"

namespace mxlimit::internal {

// A merged route table. Owns the extra templates' text; the built-in rows
// are static. Neither copyable nor movable: the spec's spans point into it.
class MergedRouteTable {
 public:
  MergedRouteTable() = default;
  MergedRouteTable(const MergedRouteTable&) = delete;
  MergedRouteTable& operator=(const MergedRouteTable&) = delete;

  const RouteTableSpec& spec() const { return spec_; }
  // The pack of each RouteId ("extra" for operator templates; "" for the
  // fallback, id 0).
  std::span<const std::string_view> packs_by_id() const { return pack_of_; }
  // The options with `packs` resolved (ActiveRoutePacks).
  const RouteOptions& options() const { return options_; }
  // The matcher built from spec(): merging builds it, because only the
  // build finds some problems (a table too large for the matcher).
  const RouteTrie& trie() const { return *trie_; }

 private:
  friend class RouteTableMerger;

  RouteOptions options_;
  std::deque<std::string> owned_;  // deque: elements never move
  std::vector<std::string_view> templates_;
  std::vector<RouteFormRow> forms_;
  std::vector<PrefixAliasRow> prefix_aliases_;
  std::vector<std::string_view> may_be_empty_;
  std::vector<std::string_view> pack_of_;
  RouteTableSpec spec_;
  std::unique_ptr<const RouteTrie> trie_;
};

// One problem with a RouteOptions, where the config file would hold it.
struct RouteOptionsProblem {
  enum class Field : uint8_t {
    kRoutes,         // the table as a whole: `routes`
    kPacks,          // `routes.packs`
    kPack,           // `routes.packs[index]`
    kExtra,          // `routes.extra`
    kExtraTemplate,  // `routes.extra[index].template`
    kExtraAliasOf,   // `routes.extra[index].alias_of`
  };
  Field field = Field::kRoutes;
  size_t index = 0;
  // A doubt, not an error: the options still build a table.
  bool warning = false;
  std::string message;  // without the path

  // "routes.extra[3].template".
  std::string Path() const;
};

// Every problem of `routes`, in order of the fields (packs, then extras).
// The options build a table exactly when none is an error.
// `shown_index`, when not empty, gives for each extra entry the index that
// messages naming another entry should print (the config loader's file
// indices, which count entries it could not read).
std::vector<RouteOptionsProblem> FindRouteOptionsProblems(
    const RouteOptions& routes, std::span<const size_t> shown_index = {});

// FindRouteOptionsProblems' problems and the table they were found building,
// for a caller that needs both (the config loader checks patterns against
// the table): one merge instead of two.
struct RouteOptionsCheck {
  std::vector<RouteOptionsProblem> problems;
  // Null when a problem is an error, and for options that spell the default
  // table (IsDefaultRouteOptions), whose table is DefaultRouteTable().
  std::shared_ptr<const MergedRouteTable> table;
};
RouteOptionsCheck CheckRouteOptions(const RouteOptions& routes,
                                    std::span<const size_t> shown_index = {});

// The table of `routes`; InvalidArgument lists the problems, one per line.
absl::StatusOr<std::unique_ptr<const MergedRouteTable>> MergeRouteTable(
    const RouteOptions& routes);

// The default packs' table, built once (aborts if the built-in data is
// invalid: a broken build, caught by route_table_test).
const MergedRouteTable& DefaultRouteTable();

// True when `routes` spells the default table exactly: no extra templates,
// and no packs named or the default ones in canonical order. Its table is
// then DefaultRouteTable(), merged and checked once per process, so callers
// share that rather than merge again.
bool IsDefaultRouteOptions(const RouteOptions& routes);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_ROUTE_ROUTE_TABLE_BUILDER_H_
