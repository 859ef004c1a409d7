// -----------------------------------------------------------------------------
// File: internal/absl_compat.h
// -----------------------------------------------------------------------------
//
// The one boundary between std and abseil string views. Debian's abseil
// (20220623) has its own `absl::string_view`, distinct from `std::string_view`
// and not convertible from it. mxlimit's public API speaks std types only and
// converts here, at the point where it hands text to abseil (StrCat, hash map
// lookups with heterogeneous keys).

#ifndef MXLIMIT_INTERNAL_ABSL_COMPAT_H_
#define MXLIMIT_INTERNAL_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace mxlimit::internal {

inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

inline std::string_view FromAbsl(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_ABSL_COMPAT_H_
