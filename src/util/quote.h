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

// `text` C-escaped, whole: a control byte becomes `\n`, `\t` or `\x1b`, and
// so does every byte from 0x7F up (the C1 controls U+0080-U+009F among them,
// whose UTF-8 some terminals obey), backslashes and quotes get a backslash.
// Printable ASCII is unchanged, so ordinary input reads as typed, while
// nothing in `text` can end a line of output or steer a terminal. For what a
// tool echoes of its input (`mxlimit explain`'s request line).
inline std::string EscapeForOutput(std::string_view text) {
  return absl::CHexEscape(ToAbsl(text));
}

// `"text"` C-escaped (`EscapeForOutput`); longer text is cut to
// kQuotedValueBytes and followed by its full length:
// `"aaaa..." (65536 bytes)`.
inline std::string QuoteForError(std::string_view text) {
  if (text.size() <= kQuotedValueBytes) {
    return absl::StrCat("\"", EscapeForOutput(text), "\"");
  }
  return absl::StrCat("\"", EscapeForOutput(text.substr(0, kQuotedValueBytes)),
                      "...\" (", text.size(), " bytes)");
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_UTIL_QUOTE_H_
