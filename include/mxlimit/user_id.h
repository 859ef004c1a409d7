// -----------------------------------------------------------------------------
// File: user_id.h
// -----------------------------------------------------------------------------
//
// What mxlimit accepts as a Matrix user ID: one rule, used by the limiter (per
// request), the YAML loader (`exempt.users`), the log replay parsers and the
// CLI, so that an ID one of them accepts is never refused by another.
//
// The rule (the Matrix spec's user identifier grammar, with the historical
// localparts the spec still requires servers to accept):
//
//   user_id     = "@" localpart ":" server_name     at most 255 bytes in all
//   localpart   = 1*( %x21-39 / %x3B-7E )           printable ASCII except ':'
//   server_name = hostname [ ":" port ]
//   hostname    = "[" IPv6 "]" / 1*( ALPHA / DIGIT / "." / "-" )
//   port        = 1*5DIGIT                          a value from 1 to 65535
//
//   * The localpart ends at the first ':'. Current IDs use only [a-z0-9._=/+-],
//     but older accounts (and bridges) hold any printable ASCII, so all of
//     0x21-0x7E except ':' is accepted. Space, control bytes, DEL and every
//     byte >= 0x80 are rejected: the spec allows no non-ASCII user IDs, and
//     accepting them in one place only let an exempt-users list and the
//     limiter disagree about who is who.
//   * A dotted IPv4 address is a hostname by this grammar. The text inside
//     "[...]" must be an RFC 4291 IPv6 address (groups, one "::", an optional
//     dotted-quad tail whose octets have no leading zero); no "%zone".
//   * The port is decimal digits only (no sign, no spaces), 1 to 5 of them,
//     with a value from 1 to 65535.
//   * Case is kept: "@Alice:example.org" and "@alice:example.org" are two IDs.
//
// `IsWellFormedUserId` answers yes or no without allocating, for the request
// path. `UserIdProblem` says why not, for error messages. Both evaluate the
// same definition, so `IsWellFormedUserId(x) == UserIdProblem(x).empty()` for
// every `x` (user_id_test checks it).
//
// Example:
//   static_assert(mxlimit::IsWellFormedUserId("@alice:example.org"));
//   static_assert(mxlimit::IsWellFormedUserId("@bot=1:[2001:db8::1]:8448"));
//   static_assert(!mxlimit::IsWellFormedUserId("@j\xC3\xBCrgen:example.org"));
//   std::string why = mxlimit::UserIdProblem("@alice");
//   // why == "no ':server' part"

#ifndef MXLIMIT_USER_ID_H_
#define MXLIMIT_USER_ID_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mxlimit/internal/hex.h"

namespace mxlimit {

// The Matrix spec caps a user ID, sigil and server name included, at 255
// bytes.
inline constexpr size_t kMaxUserIdBytes = 255;

// IsWellFormedUserId()
//
// True when `user_id` follows the rule above. Never allocates; constexpr.
//
// PERFORMANCE: one pass over the ID with a byte-class test per byte; IPv6
// literals and ports cost a second short pass over the server name. The
// limiter validates IDs of up to 40 bytes a word at a time instead
// (bucket_keys.h) and falls back to this function only for ports and IP
// literals.
constexpr bool IsWellFormedUserId(std::string_view user_id);

// UserIdProblem()
//
// Why `user_id` is not a well-formed Matrix user ID, or "" when it is one:
// a short phrase such as "no ':server' part" or "the port is not a number
// from 1 to 65535: \"99999\"", meant to be embedded after the caller's own
// (quoted) rendering of the ID. The phrase never holds raw bytes of the ID: a
// rejected byte is named by its hex value and offset, and any quoted piece is
// C-escaped and cut to 64 bytes. Allocates only when the ID is bad.
std::string UserIdProblem(std::string_view user_id);

// -----------------------------------------------------------------------------
// Implementation
// -----------------------------------------------------------------------------

namespace internal {

// The first rule a user ID breaks, in the order UserIdProblem reports them.
enum class UserIdDefect : uint8_t {
  kNone = 0,
  kNoSigil,           // empty, or does not start with '@'
  kTooLong,           // over kMaxUserIdBytes
  kNoColon,           // no ':' ends the localpart
  kEmptyLocalpart,    // "@:server"
  kLocalpartByte,     // a localpart byte outside 0x21-0x7E
  kEmptyServer,       // nothing after the ':'
  kUnclosedBracket,   // "[" without "]"
  kNotIpv6,           // "[...]" that is not an IPv6 address
  kTextAfterBracket,  // "]" followed by something other than ":port"
  kEmptyHost,         // ":port" with no hostname before it
  kHostByte,          // a hostname byte other than ALPHA / DIGIT / "." / "-"
  kEmptyPort,         // a ':' with nothing after it
  kBadPort,           // not 1-5 digits, or 0, or above 65535
};

struct UserIdCheck {
  UserIdDefect defect = UserIdDefect::kNone;
  // Offset in the ID of the byte at fault (kLocalpartByte, kHostByte,
  // kTextAfterBracket) or of the start of the part at fault (kNotIpv6: the
  // '['; kBadPort: the first port byte).
  size_t offset = 0;
};

constexpr bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

constexpr bool IsAsciiHexDigit(char c) { return HexDigitValue(c) >= 0; }

// ALPHA / DIGIT / "." / "-": a byte of a DNS name or IPv4 address.
constexpr bool IsHostnameByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  const auto lower = static_cast<unsigned char>(u | 0x20);
  return (lower >= 'a' && lower <= 'z') || IsAsciiDigit(c) || c == '.' ||
         c == '-';
}

// Printable ASCII without space: 0x21-0x7E.
constexpr bool IsVisibleAscii(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7F;
}

// Exactly four decimal octets 0-255, none with a leading zero (as
// ParseIpAddress reads IPv4).
constexpr bool IsDottedQuad(std::string_view s) {
  size_t i = 0;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
    const size_t start = i;
    int value = 0;
    while (i < s.size() && i - start < 3 && IsAsciiDigit(s[i])) {
      value = value * 10 + (s[i] - '0');
      ++i;
    }
    const size_t digits = i - start;
    if (digits == 0 || value > 255 || (digits > 1 && s[start] == '0')) {
      return false;
    }
  }
  return i == s.size();
}

// The end of the run of at most 4 hex digits at s[i].
constexpr size_t HexGroupEnd(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && j - i < 4 && IsAsciiHexDigit(s[j])) ++j;
  return j;
}

// RFC 4291 IPv6 text without brackets or zone: up to eight groups of 1-4 hex
// digits, at most one "::" standing for one or more zero groups, and an
// optional dotted quad as the last 32 bits. Accepts what ParseIpAddress
// accepts for such text (user_id_test compares the two).
constexpr bool IsIpv6Text(std::string_view s) {
  const size_t n = s.size();
  if (n < 2 || n > 45) return false;  // "::" .. a full form with IPv4 tail
  size_t i = 0;
  int groups = 0;  // 16-bit groups written out; a dotted quad counts two
  bool gap = false;
  if (s[0] == ':') {
    if (s[1] != ':') return false;
    gap = true;
    i = 2;
    if (i == n) return true;
  }
  while (true) {
    const size_t j = HexGroupEnd(s, i);
    if (j == i) return false;  // ":::" or a stray ':'
    if (j < n && s[j] == '.') {
      // A dotted quad: the last piece, and it needs two groups of room.
      if (groups > 6 || !IsDottedQuad(s.substr(i))) return false;
      groups += 2;
      break;
    }
    if (j < n && IsAsciiHexDigit(s[j])) return false;  // 5+ hex digits
    if (++groups > 8) return false;
    if (j == n) break;
    if (s[j] != ':') return false;
    if (j + 1 < n && s[j + 1] == ':') {
      if (gap) return false;  // a second "::"
      gap = true;
      i = j + 2;
      if (i == n) break;
    } else {
      i = j + 1;
      if (i == n) return false;  // a trailing single ':'
    }
  }
  return gap ? groups <= 7 : groups == 8;
}

// 1-5 decimal digits with a value from 1 to 65535.
constexpr bool IsPort(std::string_view s) {
  if (s.empty() || s.size() > 5) return false;
  uint32_t value = 0;
  for (char c : s) {
    if (!IsAsciiDigit(c)) return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

// The server name part of an ID, starting at `id[start]` (after the ':').
constexpr UserIdCheck CheckServerName(std::string_view id, size_t start) {
  using D = UserIdDefect;
  const size_t n = id.size();
  if (start == n) return {D::kEmptyServer, start};
  size_t port_colon = n;  // where ":port" starts; n when there is none
  if (id[start] == '[') {
    const size_t close = id.find(']', start);
    if (close == std::string_view::npos) return {D::kUnclosedBracket, start};
    if (!IsIpv6Text(id.substr(start + 1, close - start - 1))) {
      return {D::kNotIpv6, start};
    }
    if (close + 1 < n) {
      if (id[close + 1] != ':') return {D::kTextAfterBracket, close + 1};
      port_colon = close + 1;
    }
  } else {
    size_t i = start;
    for (; i < n && id[i] != ':'; ++i) {
      if (!IsHostnameByte(id[i])) return {D::kHostByte, i};
    }
    if (i == start) return {D::kEmptyHost, start};
    port_colon = i;
  }
  if (port_colon == n) return {};
  if (port_colon + 1 == n) return {D::kEmptyPort, port_colon};
  if (!IsPort(id.substr(port_colon + 1))) {
    return {D::kBadPort, port_colon + 1};
  }
  return {};
}

// The definition behind IsWellFormedUserId and UserIdProblem.
constexpr UserIdCheck CheckUserId(std::string_view id) {
  using D = UserIdDefect;
  if (id.empty() || id[0] != '@') return {D::kNoSigil, 0};
  if (id.size() > kMaxUserIdBytes) return {D::kTooLong, kMaxUserIdBytes};
  size_t i = 1;
  for (; i < id.size() && id[i] != ':'; ++i) {
    if (!IsVisibleAscii(id[i])) return {D::kLocalpartByte, i};
  }
  if (i == id.size()) return {D::kNoColon, i};
  if (i == 1) return {D::kEmptyLocalpart, 1};
  return CheckServerName(id, i + 1);
}

}  // namespace internal

constexpr bool IsWellFormedUserId(std::string_view user_id) {
  return internal::CheckUserId(user_id).defect == internal::UserIdDefect::kNone;
}

// Longest server name accepted as a federation origin, in bytes.
inline constexpr size_t kMaxServerNameBytes = 255;

// A server name as the spec's grammar has it (a hostname, a dotted quad or a
// bracketed IPv6 literal, optionally with ":port"), at most
// kMaxServerNameBytes: the rule for `Request::origin`.
constexpr bool IsWellFormedServerName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxServerNameBytes &&
         internal::CheckServerName(name, 0).defect ==
             internal::UserIdDefect::kNone;
}

}  // namespace mxlimit

#endif  // MXLIMIT_USER_ID_H_
