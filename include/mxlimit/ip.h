// -----------------------------------------------------------------------------
// File: ip.h
// -----------------------------------------------------------------------------
//
// Client addresses as the limiter sees them: 16 bytes, IPv4 stored v4-mapped
// (::ffff:a.b.c.d), so one code path serves both families. Parsing never
// allocates on success and returns a clear error on garbage.
//
// Accepted text (everything else is an `InvalidArgument` error whose message
// quotes the input, escaped and cut to 64 bytes):
//
//   * IPv4: exactly four decimal octets 0-255. An octet with a leading zero
//     ("010") is rejected: inet_aton() reads it as octal (8), other parsers as
//     decimal (10), so accepting it would let an allowlist and the socket layer
//     disagree about which host is meant.
//   * IPv6: every RFC 4291 text form: eight groups of 1-4 hex digits (either
//     case), one "::" standing for one or more zero groups, an IPv4 dotted quad
//     as the last 32 bits ("::ffff:192.0.2.1", "64:ff9b::192.0.2.1").
//   * "[...]" around an IPv6 address (as in URLs and "Host:" headers); IPv4 in
//     brackets is rejected.
//   * A "%zone" suffix on IPv6 ("fe80::1%eth0"), dropped: a zone names the
//     local interface, not the client. Zones are 1-32 bytes of [A-Za-z0-9._~-].
//   * No surrounding spaces, no ports, at most 100 bytes in all.
//
// Because IPv4 is stored v4-mapped, "192.0.2.1" and "::ffff:192.0.2.1" are the
// same address: both print as "192.0.2.1" and both have `is_v4()`.
//
// Behind a reverse proxy, `ClientAddressFromForwardedFor` (X-Forwarded-For) and
// `ClientAddressFromForwarded` (RFC 7239) pick the client out of the proxies'
// header, believing only the proxies the embedder names.
//
// Example:
//   // False for "[2001:db8::1]" and for garbage; true for "10.1.2.3".
//   bool IsInternal(std::string_view address) {
//     absl::StatusOr<mxlimit::IpAddress> ip = mxlimit::ParseIpAddress(address);
//     absl::StatusOr<mxlimit::Cidr> net = mxlimit::ParseCidr("10.0.0.0/8");
//     return ip.ok() && net.ok() && net->Contains(*ip);
//   }

#ifndef MXLIMIT_IP_H_
#define MXLIMIT_IP_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mxlimit {

struct IpAddress {
  std::array<uint8_t, 16> bytes{};

  // True for v4-mapped addresses (::ffff:0:0/96), i.e. parsed from IPv4 text.
  bool is_v4() const;

  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// Inline: the limiter asks this for every request it masks.
inline bool IpAddress::is_v4() const {
  for (int i = 0; i < 10; ++i) {
    if (bytes[i] != 0) return false;
  }
  return bytes[10] == 0xff && bytes[11] == 0xff;
}

// Parses IPv4 dotted quads, IPv6 (all RFC 4291 text forms, embedded IPv4
// tails included), "[v6]" brackets, and a "%zone" suffix (dropped). Leading and
// trailing spaces are not accepted. Allocates only to build an error.
absl::StatusOr<IpAddress> ParseIpAddress(std::string_view text);

// "203.0.113.9" for v4-mapped addresses, RFC 5952 text otherwise.
std::string FormatIpAddress(const IpAddress& ip);

// Keeps the first `v4_prefix` bits of an IPv4 address (counted within its 32
// bits) or the first `v6_prefix` bits of an IPv6 address, zeroing the rest.
// A v4-mapped address keeps its ::ffff: part, so it stays `is_v4()`.
// Prefixes outside 0-32 / 0-128 are clamped into range (the YAML loader
// rejects them earlier; this is the safe treatment for code-built options).
IpAddress MaskAddress(const IpAddress& ip, int v4_prefix, int v6_prefix);

// MaskAddress with the prefixes fixed up front: the two prefixes become two
// 16-byte masks once, and each address is masked with two 64-bit ANDs, no
// branch on the prefix. For code that masks every request's address (the
// limiter's per-IP keys, the sharded limiter's shard choice).
class AddressMasker {
 public:
  AddressMasker(int v4_prefix, int v6_prefix);

  // MaskAddress(ip, v4_prefix, v6_prefix).
  IpAddress Apply(const IpAddress& ip) const {
    uint64_t high, low;
    std::memcpy(&high, ip.bytes.data(), 8);
    std::memcpy(&low, ip.bytes.data() + 8, 8);
    // v4-mapped: ten zero bytes, then 0xFF 0xFF (memory order).
    static constexpr uint8_t kMappedMarker[4] = {0, 0, 0xFF, 0xFF};
    uint32_t marker, mid;
    std::memcpy(&marker, kMappedMarker, 4);
    std::memcpy(&mid, ip.bytes.data() + 8, 4);
    const Mask& m = high == 0 && mid == marker ? v4_ : v6_;
    high &= m.high;
    low &= m.low;
    IpAddress out;
    std::memcpy(out.bytes.data(), &high, 8);
    std::memcpy(out.bytes.data() + 8, &low, 8);
    return out;
  }

 private:
  // The first N bits of an address set, as two words in the address's own
  // byte order (so a plain AND applies them).
  struct Mask {
    uint64_t high = 0;  // bytes 0-7
    uint64_t low = 0;   // bytes 8-15
  };
  static Mask FirstBits(int bits);

  Mask v4_;
  Mask v6_;
};

// A network: address and prefix length. IPv4 networks are stored v4-mapped with
// the prefix counted in IPv4 bits (0-32); IPv6 prefixes are 0-128.
//
// An IPv4 network contains only v4-mapped addresses. An IPv6 network compares
// all 128 bits, so one that covers ::ffff:0:0/96 (e.g. "::/0") also contains
// IPv4 clients, exactly as a dual-stack socket would report them.
struct Cidr {
  IpAddress base;
  int prefix_len = 0;
  bool v4 = false;

  // True when the first `prefix_len` bits of `ip` equal those of `base` (bits
  // of `base` beyond the prefix are ignored, so hand-built values work too).
  bool Contains(const IpAddress& ip) const;

  friend bool operator==(const Cidr&, const Cidr&) = default;
};

// Parses "10.0.0.0/8", "2001:db8::/32", or a bare address (a host route: /32
// or /128). The address part is anything `ParseIpAddress` accepts except a
// zone; the prefix is plain decimal (no sign, no leading zero) within 0-32 for
// IPv4 and 0-128 for IPv6.
//
// Host bits set ("10.1.2.3/8") are accepted and cleared: operators write that
// meaning the network, and a `StatusOr` cannot carry a warning. The result is
// then 10.0.0.0/8. IPv6 text for a v4-mapped network ("::ffff:10.0.0.0/104")
// gives the same `Cidr` as its IPv4 spelling ("10.0.0.0/8").
absl::StatusOr<Cidr> ParseCidr(std::string_view text);

// "10.0.0.0/8", "2001:db8::/32": the network address and the prefix length.
std::string FormatCidr(const Cidr& cidr);

// The client as a per-IP bucket sees it: the address masked to the table's
// prefixes, written as a network ("2001:db8:bad:cafe::/64"), or as a bare
// address when the prefix keeps every bit ("192.0.2.1" at /32). For reports.
std::string FormatClientPrefix(const IpAddress& ip, int v4_prefix,
                               int v6_prefix);

// -----------------------------------------------------------------------------
// Client addresses behind reverse proxies
// -----------------------------------------------------------------------------
//
// Behind a reverse proxy the socket peer is the proxy, and the client is named
// in a header that every proxy on the way appends to. Anyone can send that
// header, so it is believed only from `trusted_proxies` (the networks of the
// proxies you run) and read from the right: each trusted proxy appends the
// address it saw, so the first hop from the right that is not a trusted proxy
// is the client. Hops further left were written by the client itself and prove
// nothing; believing them would let every client pick a fresh address (and a
// fresh budget) per request.
//
// The walk, for both functions below:
//
//   * An untrusted `peer` is the answer; the header is not even read.
//   * Hops are read from the right. A trusted hop is skipped; the first
//     untrusted hop is the answer.
//   * The answer is otherwise the last trusted address reached: the leftmost
//     hop when every hop is trusted, `peer` when the header is empty or blank.
//   * A hop that is not an address ("unknown", an RFC 7239 obfuscated
//     identifier such as "_hidden", a host name, garbage) stops the walk, and
//     the answer is `UnidentifiedClient()`: a trusted proxy handed over a
//     client it does not name. An attacker therefore cannot choose the
//     answer with a malformed hop; every such request shares the one
//     unidentified client's budget, and the proxy that handed it over is
//     never charged for it (its own requests, a balancer's health probe say,
//     keep their own budget).
//   * Empty hops ("a,,b", a trailing comma) are skipped, as HTTP list syntax
//     wants.
//
// Several instances of the header form one list: join their values with ","
// in the order received before the call (HTTP allows proxies to add a header
// instance instead of appending to the last one).
//
// Both functions accept the same address text as `ParseIpAddress`, so IPv4 and
// IPv6 hops mix freely and a trusted network matches the v4-mapped spelling of
// its addresses too.
//
// NOTE: at most `kMaxForwardedHops` hops (empty ones included) are examined,
// and a hop of more than `kMaxForwardedHopText` bytes counts as unreadable; a
// walk that reaches the cap with hops left answers `UnidentifiedClient()`, as
// for an unreadable hop. The work is therefore bounded whatever the header's
// length (a 64 KiB header costs as much as its last hops), and no real proxy
// chain comes near the cap.
//
// Neither function allocates (the header is only viewed) and neither can
// fail: every input, hostile or not, resolves to an address as above.
//
// Example:
//   // 10.0.0.0/8 holds our load balancers; the client sent its own guess
//   // first.
//   mxlimit::IpAddress Client(const mxlimit::IpAddress& peer) {  // 10.1.2.3
//     const mxlimit::Cidr proxies[] = {*mxlimit::ParseCidr("10.0.0.0/8")};
//     // 203.0.113.7: the first hop from the right that is not ours.
//     return mxlimit::ClientAddressFromForwardedFor(
//         peer, "198.51.100.1, 203.0.113.7:51234, 10.4.5.6", proxies);
//   }

// The address a request is charged as when a trusted proxy handed over a hop
// that names no client (see above): `100::`, in the discard-only prefix
// 100::/64 (RFC 6666), which no real client can connect from. It prints as
// "100::" in logs, `explain` and replay reports.
IpAddress UnidentifiedClient();

// How many hops, counted from the right, the resolvers examine at most.
inline constexpr int kMaxForwardedHops = 64;

// Longest hop (blanks included) the resolvers read; longer ones are
// unreadable. Far above any address with a port, or an RFC 7239 element with
// for=, by=, host= and proto=.
inline constexpr size_t kMaxForwardedHopText = 512;

// The client behind `peer`, read from an X-Forwarded-For value: hops separated
// by commas, blanks (spaces, tabs) around them ignored. A hop is an address as
// `ParseIpAddress` reads it, optionally with a port, which is dropped:
// "192.0.2.1:5678", "[2001:db8::1]:443", "[2001:db8::1]" and "2001:db8::1"
// are all accepted. An unbracketed IPv6 hop is never read as having a port.
IpAddress ClientAddressFromForwardedFor(const IpAddress& peer,
                                        std::string_view header,
                                        std::span<const Cidr> trusted_proxies);

// The same walk over an RFC 7239 `Forwarded` value: elements separated by
// commas, each a ";"-separated list of name=value pairs, of which only `for`
// (any case) counts: for=192.0.2.60;proto=http;by=203.0.113.43, or quoted,
// for="[2001:db8::1]:4711". Ports, numeric or obfuscated ("_abc"), are
// dropped. An element without exactly one `for`, with a `for` that is not an
// address (for=unknown, for=_hidden), or that is not well formed (an open
// quote, a missing "=") is an unreadable hop. A quoted value holding a comma
// splits its element and so makes it unreadable too: addresses never hold
// commas, and the split errs towards stopping the walk, never past it.
IpAddress ClientAddressFromForwarded(const IpAddress& peer,
                                     std::string_view header,
                                     std::span<const Cidr> trusted_proxies);

}  // namespace mxlimit

#endif  // MXLIMIT_IP_H_
