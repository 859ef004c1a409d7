#include "mxlimit/request.h"

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace mxlimit {

std::string_view OriginForm(std::string_view target) {
  if (!target.empty() && target.front() == '/') return target;
  const absl::string_view t(target.data(), target.size());
  for (absl::string_view scheme : {"http://", "https://"}) {
    if (!absl::StartsWithIgnoreCase(t, scheme)) continue;
    const std::string_view rest = target.substr(scheme.size());
    const size_t slash = rest.find_first_of("/?#");
    if (slash == std::string_view::npos || rest[slash] != '/') return target;
    return rest.substr(slash);
  }
  return target;
}

}  // namespace mxlimit
