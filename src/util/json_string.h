// -----------------------------------------------------------------------------
// File: util/json_string.h
// -----------------------------------------------------------------------------
//
// A JSON string (RFC 8259 §7) for values mxlimit has validated, such as user
// IDs, networks and tier names: quotes and backslashes escaped, control
// bytes and DEL as \u00XX, every other byte as it is. (`mxlimit replay
// --json`, which writes arbitrary log bytes, has its own writer that also
// replaces invalid UTF-8.)

#ifndef MXLIMIT_UTIL_JSON_STRING_H_
#define MXLIMIT_UTIL_JSON_STRING_H_

#include <string>
#include <string_view>

namespace mxlimit::internal {

// Appends `s` to `out`, quotes included.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_JSON_STRING_H_
