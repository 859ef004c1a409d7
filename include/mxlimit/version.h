// -----------------------------------------------------------------------------
// File: version.h
// -----------------------------------------------------------------------------
//
// The library's version, at compile time and as linked (they differ only when
// an embedder's headers and library come from different installs).

#ifndef MXLIMIT_VERSION_H_
#define MXLIMIT_VERSION_H_

#include <string_view>

#define MXLIMIT_VERSION_MAJOR 0
#define MXLIMIT_VERSION_MINOR 1
#define MXLIMIT_VERSION_PATCH 0

namespace mxlimit {

inline constexpr std::string_view kVersion = "0.1.0";

// The version of the library that was linked in.
std::string_view LinkedVersion();

}  // namespace mxlimit

#endif  // MXLIMIT_VERSION_H_
