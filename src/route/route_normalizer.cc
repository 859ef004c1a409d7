// RouteNormalizer: the public face of the route trie built from a route
// table (route_table_builder.h: packs in src/route/packs/*.inc plus extra
// templates).

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "mxlimit/route.h"
#include "src/route/route_table_builder.h"
#include "src/route/route_trie.h"

namespace mxlimit {
namespace {

std::shared_ptr<const internal::MergedRouteTable> MergeOrDie(
    const RouteOptions& routes) {
  absl::StatusOr<std::unique_ptr<const internal::MergedRouteTable>> table =
      internal::MergeRouteTable(routes);
  if (!table.ok()) {
    std::fprintf(stderr, "mxlimit: invalid route options:\n%s\n",
                 std::string(table.status().message()).c_str());
    std::abort();
  }
  return *std::move(table);
}

// The default table is static: shared without being owned, so a limiter
// with the default routes costs no merge and no trie build.
std::shared_ptr<const internal::MergedRouteTable> SharedDefaultTable() {
  return std::shared_ptr<const internal::MergedRouteTable>(
      std::shared_ptr<void>(), &internal::DefaultRouteTable());
}

}  // namespace

RouteNormalizer::RouteNormalizer() : RouteNormalizer(SharedDefaultTable()) {}

RouteNormalizer::RouteNormalizer(const RouteOptions& routes)
    : RouteNormalizer(internal::IsDefaultRouteOptions(routes)
                          ? SharedDefaultTable()
                          : MergeOrDie(routes)) {}

RouteNormalizer::RouteNormalizer(
    std::shared_ptr<const internal::MergedRouteTable> table)
    : table_(std::move(table)), trie_(&table_->trie()) {}

absl::StatusOr<std::unique_ptr<RouteNormalizer>> RouteNormalizer::Create(
    const RouteOptions& routes) {
  if (internal::IsDefaultRouteOptions(routes)) {
    return std::unique_ptr<RouteNormalizer>(
        new RouteNormalizer(SharedDefaultTable()));
  }
  absl::StatusOr<std::unique_ptr<const internal::MergedRouteTable>> table =
      internal::MergeRouteTable(routes);
  if (!table.ok()) return table.status();
  return std::unique_ptr<RouteNormalizer>(new RouteNormalizer(
      std::shared_ptr<const internal::MergedRouteTable>(*std::move(table))));
}

RouteNormalizer::~RouteNormalizer() = default;

Route RouteNormalizer::Normalize(std::string_view /*method*/,
                                 std::string_view target) const noexcept {
  const RouteId id = trie_->Match(target);
  return Route{id, trie_->keys()[id], id != kFallbackRouteId};
}

RouteId RouteNormalizer::Match(std::string_view target,
                               size_t* path_size) const noexcept {
  return trie_->Match(target, path_size);
}

size_t RouteNormalizer::size() const { return trie_->keys().size(); }

std::string_view RouteNormalizer::key(RouteId id) const {
  std::span<const std::string_view> all = trie_->keys();
  return id < all.size() ? all[id] : kFallbackRouteKey;
}

std::span<const std::string_view> RouteNormalizer::keys() const {
  return trie_->keys();
}

std::span<const RouteForm> RouteNormalizer::forms() const {
  return trie_->forms();
}

std::string_view RouteNormalizer::pack(RouteId id) const {
  std::span<const std::string_view> packs = table_->packs_by_id();
  return id < packs.size() ? packs[id] : std::string_view();
}

const RouteOptions& RouteNormalizer::options() const {
  return table_->options();
}

}  // namespace mxlimit
