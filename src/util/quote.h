// -----------------------------------------------------------------------------
// File: util/quote.h
// -----------------------------------------------------------------------------
//
// Quoting user input inside error messages. Messages name the bad value, but
// the value may be 64 KiB of garbage or hold NUL bytes and terminal escapes:
// `QuoteForError` escapes it and cuts it to a fixed length, so a message stays
// one short, printable line whatever the input.

#ifndef MXLIMIT_UTIL_QUOTE_H_
#define MXLIMIT_UTIL_QUOTE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"

namespace mxlimit::internal {

// How many bytes of a bad value an error message quotes.
inline constexpr size_t kQuotedValueBytes = 64;

// `"text"` C-escaped; longer text is cut to kQuotedValueBytes and followed by
// its full length: `"aaaa..." (65536 bytes)`.
inline std::string QuoteForError(std::string_view text) {
  if (text.size() <= kQuotedValueBytes) {
    return absl::StrCat("\"", absl::CHexEscape(ToAbsl(text)), "\"");
  }
  return absl::StrCat(
      "\"", absl::CHexEscape(ToAbsl(text.substr(0, kQuotedValueBytes))),
      "...\" (", text.size(), " bytes)");
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_QUOTE_H_
