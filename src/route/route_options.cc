// mxlimit/route_options.h: pack names, comparing and validating
// RouteOptions. The merge itself is in route_table_builder.cc.

#include "mxlimit/route_options.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/route/route_packs.h"
#include "src/route/route_table_builder.h"

namespace mxlimit {

std::span<const std::string_view> RoutePackNames() {
  static const std::vector<std::string_view>* const kNames = [] {
    auto* names = new std::vector<std::string_view>;
    for (const internal::RoutePack& pack : internal::BuiltinRoutePacks()) {
      names->push_back(pack.name);
    }
    return names;
  }();
  return *kNames;
}

std::span<const std::string_view> DefaultRoutePackNames() {
  return internal::DefaultRoutePacks();
}

std::vector<std::string> ActiveRoutePacks(const RouteOptions& routes) {
  std::vector<std::string> active;
  for (std::string_view name : RoutePackNames()) {
    const bool wanted =
        routes.packs.empty()
            ? std::find(DefaultRoutePackNames().begin(),
                        DefaultRoutePackNames().end(),
                        name) != DefaultRoutePackNames().end()
            : std::find(routes.packs.begin(), routes.packs.end(), name) !=
                  routes.packs.end();
    if (wanted) active.emplace_back(name);
  }
  return active;
}

bool SameRouteTable(const RouteOptions& a, const RouteOptions& b) {
  return a.extra == b.extra && ActiveRoutePacks(a) == ActiveRoutePacks(b);
}

absl::Status ValidateRouteOptions(const RouteOptions& routes) {
  std::string message;
  for (const internal::RouteOptionsProblem& problem :
       internal::FindRouteOptionsProblems(routes)) {
    if (problem.warning) continue;
    absl::StrAppend(&message, message.empty() ? "" : "\n", problem.Path(), ": ",
                    problem.message);
  }
  if (message.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(message);
}

}  // namespace mxlimit
