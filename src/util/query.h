// Query parameters of a request target, decoded as Synapse decodes them:
// the one decoder behind mxlimit::AppserviceUserId (mxlimit/appservice.h)
// and mxlimitd's `?access_token=`.
//
// Internal: not installed.

#ifndef MXLIMIT_UTIL_QUERY_H_
#define MXLIMIT_UTIL_QUERY_H_

#include <span>
#include <string_view>

namespace mxlimit::internal {

// The value of the first query parameter named `name` in `target` (the
// query ends at any '#'; a name matches once decoded, as below), decoded
// into `buffer`: `%XX` escapes, `+` as a space. Returns
// false for a malformed escape or a value longer than the buffer (with
// `found` true and `value` the raw, undecoded text); true with `found` false
// when the parameter is absent. Allocation-free.
bool QueryParameter(std::string_view target, std::string_view name,
                    std::span<char> buffer, std::string_view& value,
                    bool& found);

// Whether the query of `target` has a parameter whose name, decoded as
// above, is `name` (with or without a value). A malformed escape in a name
// is compared as written. Allocation-free.
bool QueryHasParameter(std::string_view target, std::string_view name);

// Whether `name` holds no '%', '+' or '#': it then compares byte for byte
// with the names of a query that has no escapes.
bool IsPlainQueryName(std::string_view name);

// QueryHasParameter, for a caller that found `plain_name` =
// IsPlainQueryName(name) once (a policy's query conditions).
bool QueryHasParameter(std::string_view target, std::string_view name,
                       bool plain_name);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_QUERY_H_
