// -----------------------------------------------------------------------------
// File: internal/hex.h
// -----------------------------------------------------------------------------
//
// The value of one hexadecimal digit, for every reader of `%XX` escapes and
// hex text (paths, query values, store URLs, IPv6 addresses, key files): one
// rule, inline, so a hot path pays no call.
//
// Internal: embedders must not rely on it.

#ifndef MXLIMIT_INTERNAL_HEX_H_
#define MXLIMIT_INTERNAL_HEX_H_

namespace mxlimit::internal {

// 0-15 for `0-9`, `a-f` and `A-F`; -1 for any other byte.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_HEX_H_
