// RouteNormalizer: the public face of the route trie built from the built-in
// table (src/route/packs/*.inc).

#include <cstdio>
#include <cstdlib>
#include <string>

#include "mxlimit/route.h"
#include "src/route/route_trie.h"

namespace mxlimit {
namespace {

std::unique_ptr<const internal::RouteTrie> BuildBuiltinTrie() {
  absl::StatusOr<internal::RouteTrie> trie =
      internal::RouteTrie::Build(internal::BuiltinRouteTable());
  if (!trie.ok()) {
    // The table is compiled in and route_normalizer_test builds it, so this
    // is a broken build, not a runtime condition a caller could handle.
    std::fprintf(stderr, "mxlimit: built-in route table is invalid: %s\n",
                 std::string(trie.status().message()).c_str());
    std::abort();
  }
  return std::make_unique<const internal::RouteTrie>(*std::move(trie));
}

}  // namespace

RouteNormalizer::RouteNormalizer() : trie_(BuildBuiltinTrie()) {}

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

}  // namespace mxlimit
