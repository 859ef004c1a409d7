// The built-in route packs: each src/route/packs/<name>.inc turned into the
// arrays a RouteTableSpec views (route_pack_arrays.inc does it per file).

#include "src/route/route_packs.h"

namespace mxlimit::internal {
namespace {

// clang-format off
namespace spec {
#define MXLIMIT_PACK_FILE "packs/spec.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace spec
namespace msc {
#define MXLIMIT_PACK_FILE "packs/msc.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace msc
namespace synapse {
#define MXLIMIT_PACK_FILE "packs/synapse.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace synapse
namespace dendrite {
#define MXLIMIT_PACK_FILE "packs/dendrite.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace dendrite
namespace conduwuit {
#define MXLIMIT_PACK_FILE "packs/conduwuit.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace conduwuit
namespace identity {
#define MXLIMIT_PACK_FILE "packs/identity.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace identity
namespace push {
#define MXLIMIT_PACK_FILE "packs/push.inc"
#include "route_pack_arrays.inc"
#undef MXLIMIT_PACK_FILE
}  // namespace push
// clang-format on

constexpr RoutePack kPacks[] = {
    {"spec",
     "the Matrix spec's homeserver APIs: client-server, media, federation, "
     "key, application service; every version spelling",
     spec::kTable},
    {"msc", "unstable MSC spellings clients and servers still send or serve",
     msc::kTable},
    {"synapse",
     "Synapse-only routes and forms: /_synapse/client, the admin API, "
     "/_synapse/mas, /health",
     synapse::kTable},
    {"dendrite",
     "Dendrite-only routes: /_dendrite/admin and /monitor, peeks, its MSCs",
     dendrite::kTable},
    {"conduwuit",
     "continuwuity, tuwunel and conduwuit-only routes: admin and "
     "server-specific endpoints",
     conduwuit::kTable},
    {"identity", "the identity service API (Sydent and other identity servers)",
     identity::kTable},
    {"push", "the push gateway API (Sygnal and other push gateways)",
     push::kTable},
};

constexpr std::string_view kDefaultPacks[] = {"spec", "msc", "synapse"};

}  // namespace

std::span<const RoutePack> BuiltinRoutePacks() { return kPacks; }

std::span<const std::string_view> DefaultRoutePacks() { return kDefaultPacks; }

}  // namespace mxlimit::internal
