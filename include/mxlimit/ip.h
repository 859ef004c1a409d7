// -----------------------------------------------------------------------------
// File: ip.h
// -----------------------------------------------------------------------------
//
// Client addresses as the limiter sees them: 16 bytes, IPv4 stored v4-mapped
// (::ffff:a.b.c.d), so one code path serves both families. Parsing never
// allocates on success and returns a clear error on garbage.
//
// Example:
//   absl::StatusOr<mxlimit::IpAddress> ip = mxlimit::ParseIpAddress("[2001:db8::1]");
//   absl::StatusOr<mxlimit::Cidr> net = mxlimit::ParseCidr("10.0.0.0/8");
//   bool inside = net->Contains(*ip);

#ifndef MXLIMIT_IP_H_
#define MXLIMIT_IP_H_

#include <array>
#include <cstdint>
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

// Parses IPv4 dotted quads, IPv6 (all RFC 4291 text forms, embedded IPv4
// tails included), "[v6]" brackets, and a "%zone" suffix (dropped). Leading and
// trailing spaces are not accepted. Allocates only to build an error.
absl::StatusOr<IpAddress> ParseIpAddress(std::string_view text);

// "203.0.113.9" for v4-mapped addresses, RFC 5952 text otherwise.
std::string FormatIpAddress(const IpAddress& ip);

// Keeps the first `v4_prefix` bits of an IPv4 address (counted within its 32
// bits) or the first `v6_prefix` bits of an IPv6 address, zeroing the rest.
IpAddress MaskAddress(const IpAddress& ip, int v4_prefix, int v6_prefix);

// A network: address and prefix length. IPv4 networks are stored v4-mapped with
// the prefix counted in IPv4 bits (0-32); IPv6 prefixes are 0-128.
struct Cidr {
  IpAddress base;
  int prefix_len = 0;
  bool v4 = false;

  bool Contains(const IpAddress& ip) const;
};

// Parses "10.0.0.0/8", "2001:db8::/32", or a bare address (a host route).
absl::StatusOr<Cidr> ParseCidr(std::string_view text);

}  // namespace mxlimit

#endif  // MXLIMIT_IP_H_
