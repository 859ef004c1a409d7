// -----------------------------------------------------------------------------
// File: version.h
// -----------------------------------------------------------------------------
//
// The library's version, at compile time and as linked (they differ only when
// an embedder's headers and library come from different installs).
//
// The three numbers below are the only place the version is written: kVersion
// is spelled from them, and CMake reads them for project(VERSION), so the
// package version file, `mxlimit --version` and its golden test follow. The
// C ABI (c.h) includes this header for them, so the macros are plain C; the
// rest is C++17 and hidden from C and older C++.

#ifndef MXLIMIT_VERSION_H_
#define MXLIMIT_VERSION_H_

#define MXLIMIT_VERSION_MAJOR 0
#define MXLIMIT_VERSION_MINOR 1
#define MXLIMIT_VERSION_PATCH 0

#if defined(__cplusplus) && __cplusplus >= 201703L

#include <string_view>

// Spell the numbers above "MAJOR.MINOR.PATCH": JOIN_ expands them, SPELL_
// stringizes the result (both undefined below).
#define MXLIMIT_VERSION_SPELL_(major, minor, patch) #major "." #minor "." #patch
#define MXLIMIT_VERSION_JOIN_(major, minor, patch) \
  MXLIMIT_VERSION_SPELL_(major, minor, patch)

namespace mxlimit {

// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
inline constexpr std::string_view kVersion = MXLIMIT_VERSION_JOIN_(
    MXLIMIT_VERSION_MAJOR, MXLIMIT_VERSION_MINOR, MXLIMIT_VERSION_PATCH);

// The version of the library that was linked in.
std::string_view LinkedVersion();

}  // namespace mxlimit

#undef MXLIMIT_VERSION_JOIN_
#undef MXLIMIT_VERSION_SPELL_

#endif  // C++17

#endif  // MXLIMIT_VERSION_H_
