// Address parsing and formatting for mxlimit/ip.h.
//
// The parsers report failures as static reason strings and build an
// `absl::Status` only at the top, so the success path never allocates (the
// homeserver hands us the client address text on every request).

#include "mxlimit/ip.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/internal/hex.h"
#include "src/util/quote.h"
#include "src/util/trusted_proxy.h"

namespace mxlimit {
namespace {

using internal::HexDigitValue;
using internal::IsTrustedProxy;

// Longer text is rejected before any parsing: the longest valid form is a
// bracketed IPv6 address with an IPv4 tail and a 32-byte zone (81 bytes).
constexpr size_t kMaxAddressText = 100;
constexpr size_t kMaxZone = 32;

// A failure reason; nullptr means success. Always a string literal.
using Reason = const char*;

bool IsDigit(char c) {
  return absl::ascii_isdigit(static_cast<unsigned char>(c));
}

bool IsZoneChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

absl::Status AddressError(std::string_view text, Reason reason) {
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid IP address ", internal::QuoteForError(text), ": ", reason));
}

// Exactly "a.b.c.d", each a decimal 0-255 without leading zeros. Writes four
// bytes to `out`.
Reason ParseDottedQuad(std::string_view s, uint8_t* out) {
  size_t i = 0;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (i == s.size()) return "expected 4 decimal octets separated by '.'";
      if (s[i] != '.') return "unexpected character in an IPv4 address";
      ++i;
    }
    size_t start = i;
    int value = 0;
    while (i < s.size() && IsDigit(s[i]) && i - start < 4) {
      value = value * 10 + (s[i] - '0');
      ++i;
    }
    size_t digits = i - start;
    if (digits == 0) {
      return i == s.size() || s[i] == '.'
                 ? "expected 4 decimal octets separated by '.'"
                 : "unexpected character in an IPv4 address";
    }
    if (digits > 3 || value > 255) return "an IPv4 octet is above 255";
    if (digits > 1 && s[start] == '0') {
      return "an IPv4 octet has a leading zero (ambiguous: octal or decimal)";
    }
    out[octet] = static_cast<uint8_t>(value);
  }
  if (i != s.size()) {
    return s[i] == '.' ? "an IPv4 address has exactly 4 octets"
                       : "unexpected character after an IPv4 address";
  }
  return nullptr;
}

// The groups ParseIpv6 reads, `count` of them with "::" before index `gap`
// (-1: none), written into `ip` with the gap's zero groups.
Reason PlaceIpv6Groups(const uint16_t (&groups)[8], int count, int gap,
                       IpAddress& ip) {
  if (gap < 0 && count != 8) {
    return "an IPv6 address needs 8 groups or a '::'";
  }
  if (gap >= 0 && count == 8) {
    return "'::' must stand for at least one zero group";
  }
  ip.bytes.fill(0);
  // Groups before the gap go first; those after it go to the end.
  int tail = gap < 0 ? 0 : count - gap;
  int head = count - tail;
  for (int g = 0; g < head; ++g) {
    const size_t at = 2 * static_cast<size_t>(g);
    ip.bytes[at] = static_cast<uint8_t>(groups[g] >> 8);
    ip.bytes[at + 1] = static_cast<uint8_t>(groups[g]);
  }
  for (int g = 0; g < tail; ++g) {
    const size_t at = 2 * static_cast<size_t>(8 - tail + g);
    ip.bytes[at] = static_cast<uint8_t>(groups[head + g] >> 8);
    ip.bytes[at + 1] = static_cast<uint8_t>(groups[head + g]);
  }
  return nullptr;
}

// RFC 4291 section 2.2 text forms, without brackets or zone.
Reason ParseIpv6(std::string_view s, IpAddress& ip) {
  uint16_t groups[8] = {};
  int count = 0;
  int gap = -1;  // Index in `groups` where "::" stands, if any.
  size_t i = 0;
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    gap = 0;
    i = 2;
  } else if (!s.empty() && s[0] == ':') {
    return "an IPv6 address starts with a single ':'";
  }
  while (i < s.size()) {
    if (count == 8) return "an IPv6 address has more than 8 groups";
    size_t start = i;
    int value = 0;
    while (i < s.size() && HexDigitValue(s[i]) >= 0 && i - start < 5) {
      value = value * 16 + HexDigitValue(s[i]);
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      // The last 32 bits as a dotted quad: needs room for two groups.
      if (count > 6) return "an IPv6 address has no room for an IPv4 tail";
      uint8_t quad[4];
      Reason r = ParseDottedQuad(s.substr(start), quad);
      if (r != nullptr) return r;
      groups[count++] = static_cast<uint16_t>(quad[0] << 8 | quad[1]);
      groups[count++] = static_cast<uint16_t>(quad[2] << 8 | quad[3]);
      break;
    }
    if (i == start) {
      return i == s.size() || s[i] == ':'
                 ? "an IPv6 address has an empty group"
                 : "unexpected character in an IPv6 address";
    }
    if (i - start > 4) return "an IPv6 group has more than 4 hex digits";
    groups[count++] = static_cast<uint16_t>(value);
    if (i == s.size()) break;
    if (s[i] != ':') return "unexpected character in an IPv6 address";
    ++i;
    if (i < s.size() && s[i] == ':') {
      if (gap >= 0) return "an IPv6 address has more than one '::'";
      gap = count;
      ++i;
    } else if (i == s.size()) {
      return "an IPv6 address ends with a single ':'";
    }
  }
  return PlaceIpv6Groups(groups, count, gap, ip);
}

void SetV4Mapped(IpAddress& ip, const uint8_t quad[4]) {
  ip.bytes.fill(0);
  ip.bytes[10] = 0xff;
  ip.bytes[11] = 0xff;
  std::copy(quad, quad + 4, ip.bytes.begin() + 12);
}

// Everything `ParseIpAddress` accepts. `zone_allowed` is false for CIDRs.
Reason ParseAddressText(std::string_view text, bool zone_allowed,
                        IpAddress& ip) {
  if (text.empty()) return "empty input";
  if (text.size() > kMaxAddressText) return "too long for an IP address";
  std::string_view s = text;
  bool bracketed = false;
  if (s.front() == '[') {
    if (s.back() != ']') return "'[' without a closing ']'";
    s = s.substr(1, s.size() - 2);
    if (s.empty()) return "nothing between '[' and ']'";
    bracketed = true;
  } else if (s.back() == ']') {
    return "']' without an opening '['";
  }
  size_t percent = s.find('%');
  if (percent != std::string_view::npos) {
    if (!zone_allowed) return "a network cannot have a %zone";
    std::string_view zone = s.substr(percent + 1);
    s = s.substr(0, percent);
    if (s.find(':') == std::string_view::npos) {
      return "a %zone is only valid on an IPv6 address";
    }
    if (zone.empty()) return "empty %zone";
    if (zone.size() > kMaxZone) return "%zone longer than 32 bytes";
    for (char c : zone) {
      if (!IsZoneChar(c)) return "a %zone may hold only [A-Za-z0-9._~-]";
    }
  }
  if (s.find(':') != std::string_view::npos) return ParseIpv6(s, ip);
  if (bracketed) return "brackets are only valid around an IPv6 address";
  uint8_t quad[4];
  Reason r = ParseDottedQuad(s, quad);
  if (r != nullptr) return r;
  SetV4Mapped(ip, quad);
  return nullptr;
}

// Zeroes every bit of `ip` after the first `bits` (0-128).
void KeepBits(IpAddress& ip, int bits) {
  int full = bits / 8;
  int rest = bits % 8;
  if (full < 16 && rest != 0) {
    ip.bytes[full] &= static_cast<uint8_t>(0xff << (8 - rest));
    ++full;
  }
  for (int i = full; i < 16; ++i) ip.bytes[i] = 0;
}

// The 8 bytes at `p` as a big-endian number, so bit order is address order.
uint64_t LoadBigEndian64(const uint8_t* p) {
#if defined(__GNUC__)
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) {
    v = __builtin_bswap64(v);
  }
  return v;
#else
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
#endif
}

// A 64-bit mask of the top `bits` (0-64) bits.
uint64_t HighBitsMask(int bits) {
  return bits == 0 ? 0 : ~uint64_t{0} << (64 - bits);
}

// Appends `v` in decimal to `out`.
void AppendDecimal(std::string& out, int v) {
  char digits[4];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) out.push_back(digits[--n]);
}

bool IsBlank(char c) {
  return absl::ascii_isblank(static_cast<unsigned char>(c));
}

// Not absl::StripAsciiWhitespace: that also strips CR, LF, VT and FF, which
// RFC 9110's OWS around list commas does not allow; a hop carrying them is
// refused, and the walk stops there (tests/util/ip_test.cc pins this).
std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// A port after an address: 1-5 decimal digits, or with `obfuscated_ok` an
// RFC 7239 obfport ("_" then letters, digits, ".", "_", "-").
bool IsPort(std::string_view s, bool obfuscated_ok) {
  if (obfuscated_ok && s.size() >= 2 && s.front() == '_') {
    return std::all_of(s.begin() + 1, s.end(), [](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
             c == '_' || c == '-';
    });
  }
  return !s.empty() && s.size() <= 5 &&
         std::all_of(s.begin(), s.end(), IsDigit);
}

// One proxy hop: an address as ParseAddressText reads it, or "a.b.c.d:port",
// "[v6]:port". Unbracketed IPv6 keeps every colon: "2001:db8::1:80" is an
// address, not one with a port. False for anything else.
bool ParseHop(std::string_view hop, bool obfuscated_port_ok, IpAddress& ip) {
  if (!hop.empty() && hop.front() == '[') {
    const size_t close = hop.find(']');
    if (close != std::string_view::npos && close + 1 < hop.size()) {
      if (hop[close + 1] != ':' ||
          !IsPort(hop.substr(close + 2), obfuscated_port_ok)) {
        return false;
      }
      hop = hop.substr(0, close + 1);
    }
  } else if (const size_t colon = hop.find(':');
             colon != std::string_view::npos &&
             hop.find(':', colon + 1) == std::string_view::npos) {
    // Exactly one colon: IPv4 with a port (ParseAddressText then insists on
    // IPv4, as the part before the colon has none left).
    if (!IsPort(hop.substr(colon + 1), obfuscated_port_ok)) return false;
    hop = hop.substr(0, colon);
  }
  return ParseAddressText(hop, /*zone_allowed=*/true, ip) == nullptr;
}

// RFC 7230 tchar: the characters of a token.
bool IsTokenChar(char c) {
  if (absl::ascii_isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsForName(std::string_view name) {
  return absl::EqualsIgnoreCase(internal::ToAbsl(name), "for");
}

struct ForwardedValue {
  std::string_view text;
  bool quoted = false;
  bool escaped = false;  // a quoted string with a backslash escape
};

// The value of one forwarded-pair at s[i], a token or a quoted string,
// advancing `i` past it; false when it is neither.
bool ReadForwardedValue(std::string_view s, size_t& i, ForwardedValue& v) {
  if (i < s.size() && s[i] == '"') {
    const size_t value_start = ++i;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') {
        v.escaped = true;
        if (++i == s.size()) return false;
      }
      ++i;
    }
    if (i == s.size()) return false;  // no closing quote
    v.text = s.substr(value_start, i - value_start);
    v.quoted = true;
    ++i;
    return true;
  }
  const size_t value_start = i;
  while (i < s.size() && IsTokenChar(s[i])) ++i;
  v.text = s.substr(value_start, i - value_start);
  return !v.text.empty();
}

// One RFC 7239 forwarded-element ("for=...;by=...;proto=..."), blanks around
// it already trimmed: the address of its single `for` pair. Blanks around ";"
// are tolerated; quoted strings may hold ";" and escapes, but a `for` value
// with an escape is refused (no address needs one).
bool ParseForwardedElement(std::string_view s, IpAddress& ip) {
  bool have_for = false;
  std::string_view node;
  bool node_quoted = false;
  size_t i = 0;
  while (true) {
    while (i < s.size() && IsBlank(s[i])) ++i;
    if (i == s.size()) break;
    if (s[i] == ';') {
      ++i;
      continue;
    }
    const size_t name_start = i;
    while (i < s.size() && IsTokenChar(s[i])) ++i;
    const std::string_view name = s.substr(name_start, i - name_start);
    if (name.empty() || i == s.size() || s[i] != '=') return false;
    ++i;
    ForwardedValue value;
    if (!ReadForwardedValue(s, i, value)) return false;
    while (i < s.size() && IsBlank(s[i])) ++i;
    if (i < s.size() && s[i] != ';') return false;
    if (IsForName(name)) {
      if (have_for || value.escaped) return false;
      have_for = true;
      node = value.text;
      node_quoted = value.quoted;
    }
  }
  if (!have_for) return false;
  // A token cannot hold ':' or '[', so only IPv4 comes unquoted.
  if (!node_quoted) return ParseAddressText(node, false, ip) == nullptr;
  return ParseHop(node, /*obfuscated_port_ok=*/true, ip);
}

// The walk both resolvers share (see ip.h); `parse_hop` reads one hop with
// its blanks trimmed.
template <typename ParseHopFn>
IpAddress WalkForwardedHops(const IpAddress& peer, std::string_view header,
                            std::span<const Cidr> trusted,
                            ParseHopFn parse_hop) {
  if (!IsTrustedProxy(peer, trusted)) return peer;
  IpAddress last_trusted = peer;
  std::string_view rest = header;
  bool more = !rest.empty();
  for (int hops = 0; more; ++hops) {
    if (hops == kMaxForwardedHops) return UnidentifiedClient();
    // Look for the comma only as far back as a hop may reach, so that one
    // huge hop costs kMaxForwardedHopText bytes, not the header's length.
    const size_t window = std::min(rest.size(), kMaxForwardedHopText + 1);
    const size_t comma = rest.substr(rest.size() - window).rfind(',');
    std::string_view hop;
    if (comma != std::string_view::npos) {
      const size_t at = rest.size() - window + comma;
      hop = rest.substr(at + 1);
      rest = rest.substr(0, at);
    } else if (rest.size() <= kMaxForwardedHopText) {
      hop = rest;
      more = false;
    } else {
      return UnidentifiedClient();  // A hop too long to be one.
    }
    hop = TrimBlanks(hop);
    if (hop.empty()) continue;
    IpAddress ip;
    if (!parse_hop(hop, ip)) return UnidentifiedClient();
    if (!IsTrustedProxy(ip, trusted)) return ip;
    last_trusted = ip;
  }
  return last_trusted;
}

}  // namespace

IpAddress UnidentifiedClient() {
  IpAddress ip;
  ip.bytes[0] = 0x01;
  return ip;
}

absl::StatusOr<IpAddress> ParseIpAddress(std::string_view text) {
  IpAddress ip;
  Reason r = ParseAddressText(text, /*zone_allowed=*/true, ip);
  if (r != nullptr) return AddressError(text, r);
  return ip;
}

std::string FormatIpAddress(const IpAddress& ip) {
  std::string out;
  out.reserve(39);  // Longest RFC 5952 form.
  if (ip.is_v4()) {
    for (int i = 12; i < 16; ++i) {
      if (i > 12) out.push_back('.');
      AppendDecimal(out, ip.bytes[i]);
    }
    return out;
  }
  uint16_t groups[8];
  for (size_t g = 0; g < 8; ++g) {
    groups[g] =
        static_cast<uint16_t>(ip.bytes[2 * g] << 8 | ip.bytes[2 * g + 1]);
  }
  // RFC 5952 4.2: "::" replaces the longest run of two or more zero groups,
  // the first such run on a tie.
  int best_start = -1;
  int best_len = 1;
  for (int g = 0; g < 8;) {
    if (groups[g] != 0) {
      ++g;
      continue;
    }
    int start = g;
    while (g < 8 && groups[g] == 0) ++g;
    if (g - start > best_len) {
      best_start = start;
      best_len = g - start;
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  for (int g = 0; g < 8; ++g) {
    if (g == best_start) {
      out += "::";
      g += best_len - 1;
      continue;
    }
    if (g > 0 && g != best_start + best_len) out.push_back(':');
    // RFC 5952 4.1 and 4.3: lower case, no leading zeros.
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      int nibble = (groups[g] >> shift) & 0xf;
      if (nibble != 0 || started || shift == 0) {
        out.push_back(kHex[nibble]);
        started = true;
      }
    }
  }
  return out;
}

IpAddress MaskAddress(const IpAddress& ip, int v4_prefix, int v6_prefix) {
  IpAddress out = ip;
  if (ip.is_v4()) {
    KeepBits(out, 96 + std::clamp(v4_prefix, 0, 32));
  } else {
    KeepBits(out, std::clamp(v6_prefix, 0, 128));
  }
  return out;
}

AddressMasker::AddressMasker(int v4_prefix, int v6_prefix)
    : v4_(FirstBits(96 + std::clamp(v4_prefix, 0, 32))),
      v6_(FirstBits(std::clamp(v6_prefix, 0, 128))) {}

AddressMasker::Mask AddressMasker::FirstBits(int bits) {
  IpAddress ones;
  ones.bytes.fill(0xFF);
  KeepBits(ones, bits);
  Mask m;
  std::memcpy(&m.high, ones.bytes.data(), 8);
  std::memcpy(&m.low, ones.bytes.data() + 8, 8);
  return m;
}

bool Cidr::Contains(const IpAddress& ip) const {
  // Two 64-bit compares under a mask: this runs once per exempt network on
  // every request.
  const uint64_t ip_high = LoadBigEndian64(&ip.bytes[0]);
  const uint64_t ip_low = LoadBigEndian64(&ip.bytes[8]);
  const uint64_t base_low = LoadBigEndian64(&base.bytes[8]);
  if (v4) {
    // The address must be v4-mapped whatever `base` holds above its low 32
    // bits; then the prefix counts within those 32 bits.
    const int bits = std::clamp(prefix_len, 0, 32);
    const uint64_t mask = HighBitsMask(bits) >> 32;
    return ip_high == 0 && (ip_low >> 32) == 0xffff &&
           ((ip_low ^ base_low) & mask) == 0;
  }
  const int bits = std::clamp(prefix_len, 0, 128);
  const uint64_t base_high = LoadBigEndian64(&base.bytes[0]);
  return ((ip_high ^ base_high) & HighBitsMask(std::min(bits, 64))) == 0 &&
         ((ip_low ^ base_low) & HighBitsMask(std::max(bits - 64, 0))) == 0;
}

absl::StatusOr<Cidr> ParseCidr(std::string_view text) {
  auto error = [text](std::string_view reason) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid CIDR ", internal::QuoteForError(text), ": ",
                     internal::ToAbsl(reason)));
  };
  // The 100-byte address limit plus "/128".
  if (text.size() > kMaxAddressText + 4) return error("too long for a CIDR");
  size_t slash = text.rfind('/');
  std::string_view address_text = text.substr(0, slash);
  Cidr cidr;
  Reason r = ParseAddressText(address_text, /*zone_allowed=*/false, cidr.base);
  if (r != nullptr) return error(r);
  // Text without ':' is IPv4; IPv6 text may still spell a v4-mapped address.
  const bool v4_text = address_text.find(':') == std::string_view::npos;
  const int max_prefix = v4_text ? 32 : 128;
  int prefix = max_prefix;
  if (slash != std::string_view::npos) {
    std::string_view digits = text.substr(slash + 1);
    if (digits.empty()) return error("empty prefix length after '/'");
    if (digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), IsDigit)) {
      return error(v4_text
                       ? "the prefix length must be a number from 0 to 32"
                       : "the prefix length must be a number from 0 to 128");
    }
    if (digits.size() > 1 && digits[0] == '0') {
      return error("the prefix length has a leading zero");
    }
    prefix = 0;
    for (char c : digits) prefix = prefix * 10 + (c - '0');
    if (prefix > max_prefix) {
      return error(absl::StrCat("prefix length ", prefix,
                                v4_text ? " is above 32, the IPv4 maximum"
                                        : " is above 128, the IPv6 maximum"));
    }
  }
  cidr.v4 = v4_text;
  if (!v4_text && cidr.base.is_v4() && prefix >= 96) {
    // A v4-mapped network spelled in IPv6: store it as its IPv4 spelling.
    cidr.v4 = true;
    prefix -= 96;
  }
  cidr.prefix_len = prefix;
  KeepBits(cidr.base, cidr.v4 ? 96 + prefix : prefix);
  return cidr;
}

std::string FormatCidr(const Cidr& cidr) {
  // An IPv6 network whose base happens to be v4-mapped (hand-built) must not
  // print as IPv4 text with an IPv6 prefix length.
  std::string out = !cidr.v4 && cidr.base.is_v4()
                        ? absl::StrCat("::ffff:", FormatIpAddress(cidr.base))
                        : FormatIpAddress(cidr.base);
  out.push_back('/');
  AppendDecimal(out, cidr.prefix_len);
  return out;
}

std::string FormatClientPrefix(const IpAddress& ip, int v4_prefix,
                               int v6_prefix) {
  Cidr net;
  net.v4 = ip.is_v4();
  net.prefix_len =
      std::clamp(net.v4 ? v4_prefix : v6_prefix, 0, net.v4 ? 32 : 128);
  net.base = MaskAddress(ip, v4_prefix, v6_prefix);
  if (net.prefix_len == (net.v4 ? 32 : 128)) return FormatIpAddress(net.base);
  return FormatCidr(net);
}

bool internal::IsTrustedProxy(const IpAddress& peer,
                              std::span<const Cidr> trusted_proxies) {
  for (const Cidr& net : trusted_proxies) {
    if (net.Contains(peer)) return true;
  }
  return false;
}

IpAddress ClientAddressFromForwardedFor(const IpAddress& peer,
                                        std::string_view header,
                                        std::span<const Cidr> trusted_proxies) {
  return WalkForwardedHops(
      peer, header, trusted_proxies, [](std::string_view hop, IpAddress& ip) {
        return ParseHop(hop, /*obfuscated_port_ok=*/false, ip);
      });
}

IpAddress ClientAddressFromForwarded(const IpAddress& peer,
                                     std::string_view header,
                                     std::span<const Cidr> trusted_proxies) {
  return WalkForwardedHops(peer, header, trusted_proxies,
                           ParseForwardedElement);
}

}  // namespace mxlimit
