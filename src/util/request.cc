#include "mxlimit/request.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "src/util/query.h"

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

namespace mxlimit {

std::chrono::nanoseconds LeaseForTimeout(std::string_view target) {
  char buf[64];
  std::string_view value;
  bool found = false;
  if (!internal::QueryParameter(target, "timeout", buf, value, found) ||
      !found || value.empty()) {
    return std::chrono::nanoseconds(0);
  }
  constexpr int64_t kHourMs = 3'600'000;
  int64_t ms = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::chrono::nanoseconds(0);
    ms = std::min(ms * 10 + (c - '0'), kHourMs);
  }
  return std::chrono::milliseconds(ms) + std::chrono::seconds(1);
}

}  // namespace mxlimit
