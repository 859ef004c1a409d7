// The built-in route table: src/route/route_table.inc turned into the arrays a
// RouteTableSpec views. Each array includes the .inc once, keeping the lines
// of one kind and dropping the rest, so the table stays in one file.

#include "src/route/route_trie.h"

namespace mxlimit::internal {
namespace {

constexpr std::string_view kTemplates[] = {
#define MXLIMIT_ROUTE(route_template) route_template,
#define MXLIMIT_ROUTE_FORM(form, route_template)
#define MXLIMIT_PREFIX_ALIAS(alias_prefix, stable_prefix)
#define MXLIMIT_MAY_BE_EMPTY(name)
#include "route_table.inc"
#undef MXLIMIT_ROUTE
#undef MXLIMIT_ROUTE_FORM
#undef MXLIMIT_PREFIX_ALIAS
#undef MXLIMIT_MAY_BE_EMPTY
};

constexpr RouteFormRow kForms[] = {
#define MXLIMIT_ROUTE(route_template)
#define MXLIMIT_ROUTE_FORM(form, route_template) {form, route_template},
#define MXLIMIT_PREFIX_ALIAS(alias_prefix, stable_prefix)
#define MXLIMIT_MAY_BE_EMPTY(name)
#include "route_table.inc"
#undef MXLIMIT_ROUTE
#undef MXLIMIT_ROUTE_FORM
#undef MXLIMIT_PREFIX_ALIAS
#undef MXLIMIT_MAY_BE_EMPTY
};

constexpr PrefixAliasRow kPrefixAliases[] = {
#define MXLIMIT_ROUTE(route_template)
#define MXLIMIT_ROUTE_FORM(form, route_template)
#define MXLIMIT_PREFIX_ALIAS(alias_prefix, stable_prefix) \
  {alias_prefix, stable_prefix},
#define MXLIMIT_MAY_BE_EMPTY(name)
#include "route_table.inc"
#undef MXLIMIT_ROUTE
#undef MXLIMIT_ROUTE_FORM
#undef MXLIMIT_PREFIX_ALIAS
#undef MXLIMIT_MAY_BE_EMPTY
};

constexpr std::string_view kMayBeEmpty[] = {
#define MXLIMIT_ROUTE(route_template)
#define MXLIMIT_ROUTE_FORM(form, route_template)
#define MXLIMIT_PREFIX_ALIAS(alias_prefix, stable_prefix)
#define MXLIMIT_MAY_BE_EMPTY(name) name,
#include "route_table.inc"
#undef MXLIMIT_ROUTE
#undef MXLIMIT_ROUTE_FORM
#undef MXLIMIT_PREFIX_ALIAS
#undef MXLIMIT_MAY_BE_EMPTY
};

constexpr RouteTableSpec kBuiltinTable{kTemplates, kForms, kPrefixAliases,
                                       kMayBeEmpty};

}  // namespace

const RouteTableSpec& BuiltinRouteTable() { return kBuiltinTable; }

}  // namespace mxlimit::internal
