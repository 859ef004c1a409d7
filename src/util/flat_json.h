// -----------------------------------------------------------------------------
// File: util/flat_json.h
// -----------------------------------------------------------------------------
//
// mxlimitd's admin API bodies (and `mxlimit admin`'s reading of its
// answers): one JSON object (RFC 8259) whose values
// are strings, integers, booleans or null, never arrays or objects. That is
// all the API takes, so nothing deeper is parsed: a hostile body costs one
// pass over its bytes, no recursion. Duplicate names are an error (RFC 8259
// leaves them undefined; two parsers could read different values). And
// `JsonString` writes a JSON string for the answers.
//
// Example:
//   absl::StatusOr<mxlimit::internal::FlatJson> body =
//       mxlimit::internal::ParseFlatJson(R"({"tier": "bridge"})");
//   const mxlimit::internal::JsonValue* tier = body->Find("tier");

#ifndef MXLIMIT_UTIL_FLAT_JSON_H_
#define MXLIMIT_UTIL_FLAT_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace mxlimit::internal {

struct JsonValue {
  enum Kind { kString, kInteger, kBool, kNull };
  Kind kind = kNull;
  std::string text;     // kString: decoded UTF-8
  int64_t integer = 0;  // kInteger
  bool boolean = false;
};

class FlatJson {
 public:
  // The member called `name`, or null.
  const JsonValue* Find(std::string_view name) const;
  const std::vector<std::pair<std::string, JsonValue>>& members() const {
    return members_;
  }

 private:
  friend absl::StatusOr<FlatJson> ParseFlatJson(std::string_view text);
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// InvalidArgument naming what is wrong and where (a byte offset). Numbers
// must be integers within int64 (no fraction or exponent).
absl::StatusOr<FlatJson> ParseFlatJson(std::string_view text);

// `s` as a JSON string, quotes included; control bytes escaped.
std::string JsonString(std::string_view s);

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_FLAT_JSON_H_
