#include "mxlimit/ip.h"

#include <arpa/inet.h>

#include <cstring>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/util/trusted_proxy.h"

namespace mxlimit {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

IpAddress Ip(std::string_view text) {
  absl::StatusOr<IpAddress> ip = ParseIpAddress(text);
  EXPECT_TRUE(ip.ok()) << ip.status();
  return ip.ok() ? *ip : IpAddress{};
}

Cidr Net(std::string_view text) {
  absl::StatusOr<Cidr> net = ParseCidr(text);
  EXPECT_TRUE(net.ok()) << net.status();
  return net.ok() ? *net : Cidr{};
}

// The address `text` parses to, printed back.
std::string RoundTrip(std::string_view text) {
  return FormatIpAddress(Ip(text));
}

std::string ParseError(std::string_view text) {
  absl::StatusOr<IpAddress> ip = ParseIpAddress(text);
  EXPECT_FALSE(ip.ok()) << "accepted " << testing::PrintToString(text);
  if (ip.ok()) return "";
  EXPECT_EQ(ip.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(ip.status().message());
}

std::string CidrError(std::string_view text) {
  absl::StatusOr<Cidr> net = ParseCidr(text);
  EXPECT_FALSE(net.ok()) << "accepted " << text;
  if (net.ok()) return "";
  EXPECT_EQ(net.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(net.status().message());
}

// The one "is this peer trusted" rule (issue #31): mxlimitd's check of the
// connection's peer and the resolvers' check of each hop.
TEST(IsTrustedProxyTest, AnyListedNetworkAndNothingElse) {
  const Cidr nets[] = {*ParseCidr("10.0.0.0/8"), *ParseCidr("2001:db8::/32")};
  EXPECT_TRUE(internal::IsTrustedProxy(*ParseIpAddress("10.1.2.3"), nets));
  EXPECT_TRUE(internal::IsTrustedProxy(*ParseIpAddress("2001:db8::1"), nets));
  EXPECT_FALSE(internal::IsTrustedProxy(*ParseIpAddress("11.0.0.1"), nets));
  EXPECT_FALSE(
      internal::IsTrustedProxy(*ParseIpAddress("::ffff:11.0.0.1"), nets));
  EXPECT_FALSE(internal::IsTrustedProxy(*ParseIpAddress("10.1.2.3"), {}));
}

TEST(ParseIpAddressTest, Ipv4IsStoredV4Mapped) {
  IpAddress ip = Ip("192.0.2.1");
  IpAddress want;
  want.bytes = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
  EXPECT_EQ(ip, want);
  EXPECT_TRUE(ip.is_v4());
  EXPECT_EQ(Ip("::ffff:192.0.2.1"), want);
  EXPECT_EQ(Ip("::FFFF:c000:0201"), want);
}

TEST(ParseIpAddressTest, Ipv4Forms) {
  EXPECT_EQ(RoundTrip("0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(RoundTrip("255.255.255.255"), "255.255.255.255");
  EXPECT_EQ(RoundTrip("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(RoundTrip("127.0.0.1"), "127.0.0.1");
}

TEST(ParseIpAddressTest, RejectsBadIpv4WithAReason) {
  EXPECT_THAT(ParseError("256.1.1.1"), HasSubstr("above 255"));
  EXPECT_THAT(ParseError("1.2.3.1000"), HasSubstr("above 255"));
  EXPECT_THAT(ParseError("1.2.3"), HasSubstr("expected 4 decimal octets"));
  EXPECT_THAT(ParseError("1.2.3."), HasSubstr("expected 4 decimal octets"));
  EXPECT_THAT(ParseError("1..2.3"), HasSubstr("expected 4 decimal octets"));
  EXPECT_THAT(ParseError(".1.2.3"), HasSubstr("expected 4 decimal octets"));
  EXPECT_THAT(ParseError("1.2.3.4.5"), HasSubstr("exactly 4 octets"));
  EXPECT_THAT(ParseError("01.2.3.4"), HasSubstr("leading zero"));
  EXPECT_THAT(ParseError("1.2.3.00"), HasSubstr("leading zero"));
  EXPECT_THAT(ParseError("1.2.3.4:80"), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("1.2.3.x"), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("-1.2.3.4"), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("1.2.3.4 "), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError(" 1.2.3.4"), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("[1.2.3.4]"), HasSubstr("only valid around an IPv6"));
  EXPECT_THAT(ParseError("1.2.3.4%eth0"), HasSubstr("only valid on an IPv6"));
  EXPECT_THAT(ParseError(""), HasSubstr("empty input"));
  EXPECT_THAT(ParseError("localhost"), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("16843009"), HasSubstr("above 255"));
}

TEST(ParseIpAddressTest, Ipv6FullAndCompressedForms) {
  EXPECT_EQ(RoundTrip("2001:0db8:0000:0000:0000:0000:0000:0001"),
            "2001:db8::1");
  EXPECT_EQ(RoundTrip("2001:db8:0:0:0:0:0:1"), "2001:db8::1");
  EXPECT_EQ(RoundTrip("2001:DB8::1"), "2001:db8::1");
  EXPECT_EQ(RoundTrip("::"), "::");
  EXPECT_EQ(RoundTrip("::1"), "::1");
  EXPECT_EQ(RoundTrip("1::"), "1::");
  EXPECT_EQ(RoundTrip("fe80::"), "fe80::");
  EXPECT_EQ(RoundTrip("1:2:3:4:5:6:7::"), "1:2:3:4:5:6:7:0");
  EXPECT_EQ(RoundTrip("::2:3:4:5:6:7:8"), "0:2:3:4:5:6:7:8");
  EXPECT_EQ(RoundTrip("1:2:3:4:5:6:7:8"), "1:2:3:4:5:6:7:8");
  EXPECT_EQ(RoundTrip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
}

TEST(ParseIpAddressTest, Ipv6EmbeddedIpv4Tails) {
  EXPECT_EQ(RoundTrip("::ffff:1.2.3.4"), "1.2.3.4");
  EXPECT_EQ(RoundTrip("64:ff9b::1.2.3.4"), "64:ff9b::102:304");
  EXPECT_EQ(RoundTrip("::1.2.3.4"), "::102:304");
  EXPECT_EQ(RoundTrip("1:2:3:4:5:6:1.2.3.4"), "1:2:3:4:5:6:102:304");
  EXPECT_FALSE(Ip("64:ff9b::1.2.3.4").is_v4());
  EXPECT_THAT(ParseError("1:2:3:4:5:6:7:1.2.3.4"), HasSubstr("no room"));
  EXPECT_THAT(ParseError("::ffff:1.2.3.256"), HasSubstr("above 255"));
  EXPECT_THAT(ParseError("::ffff:1.2.3"), HasSubstr("4 decimal octets"));
  EXPECT_THAT(ParseError("::1.2.3.4:5"), HasSubstr("unexpected character"));
}

TEST(ParseIpAddressTest, BracketsAndZones) {
  EXPECT_EQ(Ip("[2001:db8::1]"), Ip("2001:db8::1"));
  EXPECT_EQ(Ip("fe80::1%eth0"), Ip("fe80::1"));
  EXPECT_EQ(Ip("[fe80::1%25]"), Ip("fe80::1"));
  EXPECT_EQ(Ip("fe80::1%br-lan.10"), Ip("fe80::1"));
  EXPECT_THAT(ParseError("[2001:db8::1"), HasSubstr("without a closing"));
  EXPECT_THAT(ParseError("2001:db8::1]"), HasSubstr("without an opening"));
  EXPECT_THAT(ParseError("[2001:db8::1]:443"), HasSubstr("without a closing"));
  EXPECT_THAT(ParseError("[]"), HasSubstr("nothing between"));
  EXPECT_THAT(ParseError("fe80::1%"), HasSubstr("empty %zone"));
  EXPECT_THAT(ParseError("fe80::1%eth 0"), HasSubstr("[A-Za-z0-9._~-]"));
  EXPECT_THAT(ParseError("fe80::1%" + std::string(33, 'a')),
              HasSubstr("longer than 32"));
}

TEST(ParseIpAddressTest, RejectsBadIpv6WithAReason) {
  EXPECT_THAT(ParseError(":"), HasSubstr("single ':'"));
  EXPECT_THAT(ParseError(":1::"), HasSubstr("starts with a single ':'"));
  EXPECT_THAT(ParseError("1::2:"), HasSubstr("ends with a single ':'"));
  EXPECT_THAT(ParseError(":::"), HasSubstr("empty group"));
  EXPECT_THAT(ParseError("1:::2"), HasSubstr("empty group"));
  EXPECT_THAT(ParseError("1::2::3"), HasSubstr("more than one '::'"));
  EXPECT_THAT(ParseError("1:2:3:4:5:6:7"), HasSubstr("8 groups or a '::'"));
  EXPECT_THAT(ParseError("1:2:3:4:5:6:7:8:9"), HasSubstr("more than 8"));
  EXPECT_THAT(ParseError("1:2:3:4:5:6:7:8::"), HasSubstr("at least one zero"));
  EXPECT_THAT(ParseError("::1:2:3:4:5:6:7:8"), HasSubstr("at least one zero"));
  EXPECT_THAT(ParseError("12345::"), HasSubstr("more than 4 hex digits"));
  EXPECT_THAT(ParseError("2001:db8::g"), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("2001:db8:: 1"), HasSubstr("unexpected character"));
}

TEST(ParseIpAddressTest, ErrorNamesTheInput) {
  EXPECT_EQ(ParseError("300.1.1.1"),
            "invalid IP address \"300.1.1.1\": an IPv4 octet is above 255");
}

TEST(ParseIpAddressTest, NulBytesAreRejectedAndEscaped) {
  using std::string_literals::operator""s;
  std::string with_nul = "1.2.3.4\0"s;
  EXPECT_THAT(ParseError(with_nul),
              AllOf(HasSubstr("\\x00"), HasSubstr("unexpected character")));
  EXPECT_THAT(ParseError("1.2\0.3.4"s), HasSubstr("1.2\\x00.3.4"));
  EXPECT_THAT(ParseError("::1\0"s), HasSubstr("unexpected character"));
  EXPECT_THAT(ParseError("fe80::1%eth\0"s), HasSubstr("[A-Za-z0-9._~-]"));
}

TEST(ParseIpAddressTest, HugeGarbageGivesAShortMessage) {
  std::string garbage(64 * 1024, 'z');
  garbage[100] = '\xff';
  std::string message = ParseError(garbage);
  EXPECT_LT(message.size(), 200u);
  EXPECT_THAT(message, HasSubstr("(65536 bytes)"));
  EXPECT_THAT(message, HasSubstr("too long"));
  // Long but otherwise valid-looking text is cut off by length, too.
  EXPECT_THAT(ParseError(std::string(101, '1')), HasSubstr("too long"));
}

TEST(FormatIpAddressTest, FollowsRfc5952) {
  // 4.2.1: the longest run of zero groups is shortened.
  EXPECT_EQ(RoundTrip("2001:db8:0:0:1:0:0:0"), "2001:db8:0:0:1::");
  // 4.2.2: a single zero group is not shortened.
  EXPECT_EQ(RoundTrip("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");
  // 4.2.3: on a tie the first run is shortened.
  EXPECT_EQ(RoundTrip("2001:0:0:1:0:0:1:1"), "2001::1:0:0:1:1");
  EXPECT_EQ(RoundTrip("2001:db8::aaaa:0:0:1"), "2001:db8::aaaa:0:0:1");
  // 4.1 and 4.3: no leading zeros, lower case.
  EXPECT_EQ(RoundTrip("2001:0DB8:00AB:000C::0001"), "2001:db8:ab:c::1");
}

// The precomputed form agrees with MaskAddress for every prefix pair,
// including out-of-range ones (clamped), on v4-mapped and IPv6 addresses.
TEST(AddressMaskerTest, AgreesWithMaskAddress) {
  std::mt19937_64 rng(23);
  for (int v4 = -1; v4 <= 33; ++v4) {
    for (int v6 : {-5, 0, 1, 7, 8, 9, 48, 63, 64, 65, 96, 120, 127, 128, 200}) {
      const AddressMasker masker(v4, v6);
      for (int round = 0; round < 40; ++round) {
        IpAddress ip;
        for (uint8_t& b : ip.bytes) b = static_cast<uint8_t>(rng());
        if (round % 2 == 0) {  // v4-mapped
          for (int i = 0; i < 10; ++i) ip.bytes[i] = 0;
          ip.bytes[10] = ip.bytes[11] = 0xFF;
        }
        ASSERT_EQ(masker.Apply(ip), MaskAddress(ip, v4, v6))
            << FormatIpAddress(ip) << " /" << v4 << " /" << v6;
      }
    }
  }
}

TEST(MaskAddressTest, Ipv6To64) {
  IpAddress masked =
      MaskAddress(Ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), 32, 64);
  EXPECT_EQ(FormatIpAddress(masked), "2001:db8:1:2::");
  EXPECT_EQ(masked, MaskAddress(Ip("2001:db8:1:2::1"), 32, 64));
  EXPECT_NE(masked, MaskAddress(Ip("2001:db8:1:3::1"), 32, 64));
}

TEST(MaskAddressTest, Ipv4PrefixCountsWithinItsOwn32Bits) {
  IpAddress ip = Ip("203.0.113.200");
  EXPECT_EQ(MaskAddress(ip, 32, 64), ip);
  EXPECT_EQ(FormatIpAddress(MaskAddress(ip, 24, 64)), "203.0.113.0");
  EXPECT_EQ(FormatIpAddress(MaskAddress(ip, 8, 0)), "203.0.0.0");
  // /0 keeps the ::ffff: part, so the result is still IPv4.
  IpAddress all = MaskAddress(ip, 0, 128);
  EXPECT_TRUE(all.is_v4());
  EXPECT_EQ(FormatIpAddress(all), "0.0.0.0");
}

TEST(MaskAddressTest, OddPrefixesCutInsideAByte) {
  EXPECT_EQ(FormatIpAddress(MaskAddress(Ip("255.255.255.255"), 25, 64)),
            "255.255.255.128");
  EXPECT_EQ(FormatIpAddress(MaskAddress(Ip("10.255.1.1"), 9, 64)),
            "10.128.0.0");
  EXPECT_EQ(FormatIpAddress(MaskAddress(Ip("10.255.1.1"), 31, 64)),
            "10.255.1.0");
  EXPECT_EQ(FormatIpAddress(MaskAddress(Ip("ffff:ffff::"), 32, 17)),
            "ffff:8000::");
  EXPECT_EQ(FormatIpAddress(MaskAddress(Ip("2001:db8::ffff"), 32, 127)),
            "2001:db8::fffe");
  EXPECT_EQ(FormatIpAddress(MaskAddress(Ip("2001:db8::1"), 32, 0)), "::");
}

TEST(MaskAddressTest, OutOfRangePrefixesAreClamped) {
  IpAddress v6 = Ip("2001:db8::1");
  EXPECT_EQ(MaskAddress(v6, 32, 500), v6);
  EXPECT_EQ(FormatIpAddress(MaskAddress(v6, 32, -3)), "::");
  IpAddress v4 = Ip("10.1.2.3");
  EXPECT_EQ(MaskAddress(v4, 40, 64), v4);
  EXPECT_EQ(FormatIpAddress(MaskAddress(v4, -1, 64)), "0.0.0.0");
}

TEST(ParseCidrTest, NetworksAndHostRoutes) {
  Cidr net = Net("10.0.0.0/8");
  EXPECT_TRUE(net.v4);
  EXPECT_EQ(net.prefix_len, 8);
  EXPECT_EQ(net.base, Ip("10.0.0.0"));
  EXPECT_EQ(FormatCidr(Net("2001:db8::/32")), "2001:db8::/32");
  EXPECT_FALSE(Net("2001:db8::/32").v4);
  EXPECT_EQ(FormatCidr(Net("192.0.2.7")), "192.0.2.7/32");
  EXPECT_EQ(FormatCidr(Net("::1")), "::1/128");
  EXPECT_EQ(FormatCidr(Net("0.0.0.0/0")), "0.0.0.0/0");
  EXPECT_EQ(FormatCidr(Net("::/0")), "::/0");
  EXPECT_EQ(FormatCidr(Net("[2001:db8::]/48")), "2001:db8::/48");
}

TEST(ParseCidrTest, HostBitsAreClearedNotRejected) {
  EXPECT_EQ(Net("10.1.2.3/8"), Net("10.0.0.0/8"));
  EXPECT_EQ(FormatCidr(Net("2001:db8:ffff::1/32")), "2001:db8::/32");
  EXPECT_EQ(FormatCidr(Net("192.168.1.255/23")), "192.168.0.0/23");
}

TEST(ParseCidrTest, V4MappedIpv6SpellingIsTheIpv4Network) {
  EXPECT_EQ(Net("::ffff:10.0.0.0/104"), Net("10.0.0.0/8"));
  EXPECT_EQ(Net("::ffff:0:0/96"), Net("0.0.0.0/0"));
  EXPECT_EQ(Net("::ffff:1.2.3.4"), Net("1.2.3.4/32"));
  EXPECT_FALSE(Net("::ffff:0:0/95").v4);
}

TEST(ParseCidrTest, RejectsBadPrefixesClearly) {
  EXPECT_EQ(CidrError("10.0.0.0/33"),
            "invalid CIDR \"10.0.0.0/33\": prefix length 33 is above 32, the "
            "IPv4 maximum");
  EXPECT_THAT(CidrError("2001:db8::/129"), HasSubstr("above 128"));
  EXPECT_THAT(CidrError("10.0.0.0/"), HasSubstr("empty prefix length"));
  EXPECT_THAT(CidrError("10.0.0.0/-1"), HasSubstr("a number from 0 to 32"));
  EXPECT_THAT(CidrError("10.0.0.0/+8"), HasSubstr("a number from 0 to 32"));
  EXPECT_THAT(CidrError("10.0.0.0/8a"), HasSubstr("a number from 0 to 32"));
  EXPECT_THAT(CidrError("::/1000"), HasSubstr("a number from 0 to 128"));
  EXPECT_THAT(CidrError("10.0.0.0/08"), HasSubstr("leading zero"));
  EXPECT_THAT(CidrError("10.0.0.0/8/8"), HasSubstr("unexpected character"));
  EXPECT_THAT(CidrError("/8"), HasSubstr("empty input"));
  EXPECT_THAT(CidrError("10.0.0/8"), HasSubstr("4 decimal octets"));
  EXPECT_THAT(CidrError("fe80::%eth0/64"), HasSubstr("cannot have a %zone"));
  EXPECT_THAT(CidrError(""), HasSubstr("empty input"));
  EXPECT_THAT(CidrError(std::string(64 * 1024, '/')),
              AllOf(HasSubstr("too long"), HasSubstr("(65536 bytes)")));
}

TEST(CidrContainsTest, Ipv4Edges) {
  Cidr net = Net("192.168.4.0/22");
  EXPECT_FALSE(net.Contains(Ip("192.168.3.255")));
  EXPECT_TRUE(net.Contains(Ip("192.168.4.0")));
  EXPECT_TRUE(net.Contains(Ip("192.168.7.255")));
  EXPECT_FALSE(net.Contains(Ip("192.168.8.0")));
  // An IPv6 address whose low 32 bits look the same is not inside.
  EXPECT_FALSE(net.Contains(Ip("::192.168.4.1")));
  EXPECT_FALSE(net.Contains(Ip("2001:db8::c0a8:401")));
}

TEST(CidrContainsTest, Ipv6Edges) {
  Cidr net = Net("2001:db8:abcd:0010::/60");
  EXPECT_FALSE(net.Contains(Ip("2001:db8:abcd:f:ffff:ffff:ffff:ffff")));
  EXPECT_TRUE(net.Contains(Ip("2001:db8:abcd:10::")));
  EXPECT_TRUE(net.Contains(Ip("2001:db8:abcd:1f:ffff:ffff:ffff:ffff")));
  EXPECT_FALSE(net.Contains(Ip("2001:db8:abcd:20::")));
  EXPECT_FALSE(net.Contains(Ip("10.0.0.1")));
}

TEST(CidrContainsTest, HostRoutesAndZeroPrefixes) {
  EXPECT_TRUE(Net("::1/128").Contains(Ip("::1")));
  EXPECT_FALSE(Net("::1/128").Contains(Ip("::2")));
  EXPECT_TRUE(Net("127.0.0.1").Contains(Ip("127.0.0.1")));
  EXPECT_FALSE(Net("127.0.0.1").Contains(Ip("127.0.0.2")));
  // 0.0.0.0/0 is every IPv4 address and no IPv6 one.
  EXPECT_TRUE(Net("0.0.0.0/0").Contains(Ip("255.255.255.255")));
  EXPECT_FALSE(Net("0.0.0.0/0").Contains(Ip("2001:db8::1")));
  // ::/0 is every address: IPv4 clients are v4-mapped IPv6 addresses.
  EXPECT_TRUE(Net("::/0").Contains(Ip("2001:db8::1")));
  EXPECT_TRUE(Net("::/0").Contains(Ip("10.0.0.1")));
}

TEST(CidrContainsTest, HandBuiltCidrIgnoresHostBits) {
  Cidr net;
  net.base = Ip("10.9.9.9");
  net.prefix_len = 8;
  net.v4 = true;
  EXPECT_TRUE(net.Contains(Ip("10.200.0.1")));
  EXPECT_FALSE(net.Contains(Ip("11.0.0.1")));
  EXPECT_THAT(FormatCidr(net), Not(HasSubstr("::")));
  // A base that is not v4-mapped still only ever contains IPv4 addresses.
  net.base = Ip("::10.9.9.9");
  EXPECT_TRUE(net.Contains(Ip("10.200.0.1")));
  EXPECT_FALSE(net.Contains(Ip("::10.200.0.1")));
}

// glibc's inet_pton is the reference: it takes the same forms (it too
// rejects IPv4 octets with leading zeros), minus brackets and zones.
std::optional<IpAddress> ReferenceParse(const std::string& text) {
  IpAddress ip;
  if (text.find(':') != std::string::npos) {
    if (inet_pton(AF_INET6, text.c_str(), ip.bytes.data()) != 1) {
      return std::nullopt;
    }
    return ip;
  }
  unsigned char v4[4];
  if (inet_pton(AF_INET, text.c_str(), v4) != 1) return std::nullopt;
  ip.bytes[10] = ip.bytes[11] = 0xff;
  std::memcpy(&ip.bytes[12], v4, 4);
  return ip;
}

TEST(ParseIpAddressTest, AgreesWithInetPtonOnRandomText) {
  // Text built from address-like pieces, so a good share of it is valid.
  const std::string_view pieces[] = {
      "0",   "1",   "ff", "ABCD", "12345", ":",    "::",      ".",
      "255", "256", "01", "9",    "a",     "ffff", "1.2.3.4", "g"};
  std::mt19937 rng(5);
  std::uniform_int_distribution<size_t> pick(0, std::size(pieces) - 1);
  std::uniform_int_distribution<int> length(1, 12);
  int valid = 0;
  for (int n = 0; n < 200000; ++n) {
    std::string text;
    for (int k = length(rng); k > 0; --k) text += pieces[pick(rng)];
    std::optional<IpAddress> want = ReferenceParse(text);
    absl::StatusOr<IpAddress> got = ParseIpAddress(text);
    ASSERT_EQ(got.ok(), want.has_value())
        << text << ": " << (got.ok() ? "accepted" : got.status().ToString());
    if (want.has_value()) {
      ++valid;
      ASSERT_EQ(*got, *want) << text;
      // Formatting and parsing again gives the same address.
      ASSERT_EQ(Ip(FormatIpAddress(*got)), *got) << text;
    }
  }
  EXPECT_GT(valid, 1000);
}

// Resolver tests: the proxies we run are 10.0.0.0/8 and 2001:db8:ffff::/48,
// and the socket peer is 10.0.0.1 unless a test says otherwise.
std::vector<Cidr> Proxies() {
  return {Net("10.0.0.0/8"), Net("2001:db8:ffff::/48")};
}

std::string FromXff(std::string_view header, std::string_view peer = "10.0.0.1",
                    const std::vector<Cidr>& proxies = Proxies()) {
  return FormatIpAddress(
      ClientAddressFromForwardedFor(Ip(peer), header, proxies));
}

std::string FromForwarded(std::string_view header,
                          std::string_view peer = "10.0.0.1") {
  return FormatIpAddress(
      ClientAddressFromForwarded(Ip(peer), header, Proxies()));
}

TEST(ClientAddressFromForwardedForTest, UntrustedPeerIgnoresTheHeader) {
  EXPECT_EQ(FromXff("203.0.113.1", "198.51.100.9"), "198.51.100.9");
  EXPECT_EQ(FromXff("203.0.113.1, 10.0.0.2", "2001:db8::9"), "2001:db8::9");
  EXPECT_EQ(FromXff("203.0.113.1", "10.0.0.1", {}), "10.0.0.1");
  EXPECT_EQ(FromForwarded("for=203.0.113.1", "198.51.100.9"), "198.51.100.9");
}

TEST(ClientAddressFromForwardedForTest, EmptyOrBlankHeaderIsThePeer) {
  EXPECT_EQ(FromXff(""), "10.0.0.1");
  EXPECT_EQ(FromXff(" \t "), "10.0.0.1");
  EXPECT_EQ(FromXff(", ,,"), "10.0.0.1");
  EXPECT_EQ(FromForwarded(""), "10.0.0.1");
}

TEST(ClientAddressFromForwardedForTest, PortsAndBracketsAreStripped) {
  EXPECT_EQ(FromXff("1.2.3.4:5678"), "1.2.3.4");
  EXPECT_EQ(FromXff("1.2.3.4:0"), "1.2.3.4");
  EXPECT_EQ(FromXff("[2001:db8::1]:443"), "2001:db8::1");
  EXPECT_EQ(FromXff("[2001:db8::1]"), "2001:db8::1");
  EXPECT_EQ(FromXff("2001:db8::1"), "2001:db8::1");
  EXPECT_EQ(FromXff("[fe80::1%eth0]:8080"), "fe80::1");
  // Unbracketed IPv6 has no port: the last group is part of the address.
  EXPECT_EQ(FromXff("2001:db8::1:80"), "2001:db8::1:80");
  // A trusted hop with a port is still recognized as trusted.
  EXPECT_EQ(FromXff("203.0.113.1:1, 10.0.0.2:2, [2001:db8:ffff::3]:3"),
            "203.0.113.1");
}

TEST(ClientAddressFromForwardedForTest, BlanksAroundCommasAreIgnored) {
  EXPECT_EQ(FromXff("198.51.100.7 ,203.0.113.1 \t"), "203.0.113.1");
  EXPECT_EQ(FromXff("\t203.0.113.1 , 10.0.0.2\t,  10.0.0.3 "), "203.0.113.1");
  EXPECT_EQ(FromXff(" 203.0.113.1:80 ,[2001:db8:ffff::1]:443 "), "203.0.113.1");
}

// Only space and tab count as blanks (RFC 9110 OWS), not the rest of
// isspace: a hop with CR, LF, VT or FF around it is unreadable, so the walk
// stops at the nearest proxy. Pins the choice of the hand-written TrimBlanks
// over absl::StripAsciiWhitespace.
TEST(ClientAddressFromForwardedForTest, OnlySpaceAndTabAreTrimmedFromHops) {
  for (char ws : {'\r', '\n', '\v', '\f'}) {
    const std::string before = std::string(1, ws) + "203.0.113.1";
    const std::string after = "203.0.113.1" + std::string(1, ws);
    EXPECT_EQ(FromXff("198.51.100.7, " + before), "100::") << int{ws};
    EXPECT_EQ(FromXff("198.51.100.7, " + after + " ,10.0.0.7"), "100::")
        << int{ws};
    EXPECT_EQ(
        FromForwarded("for=198.51.100.7, for=203.0.113.1" + std::string(1, ws)),
        "100::")
        << int{ws};
  }
  EXPECT_EQ(FromXff("198.51.100.7, \t 203.0.113.1 \t "), "203.0.113.1");
}

TEST(ClientAddressFromForwardedForTest, TrustedHopsAreSkippedFromTheRight) {
  // The client prepended 198.51.100.7 itself; the first proxy saw
  // 203.0.113.1.
  EXPECT_EQ(FromXff("198.51.100.7, 203.0.113.1, 10.0.0.2"), "203.0.113.1");
  EXPECT_EQ(FromXff("198.51.100.7, 203.0.113.1"), "203.0.113.1");
  EXPECT_EQ(FromXff("2001:db8::7, 2001:db8:ffff::2"), "2001:db8::7");
  // The v4-mapped spelling of a trusted address is trusted too.
  EXPECT_EQ(FromXff("203.0.113.1, ::ffff:10.9.9.9"), "203.0.113.1");
  // Trusted addresses left of the client are never reached.
  EXPECT_EQ(FromXff("10.0.0.9, 203.0.113.1, 10.0.0.2"), "203.0.113.1");
}

TEST(ClientAddressFromForwardedForTest, AllHopsTrustedGivesTheLeftmost) {
  EXPECT_EQ(FromXff("10.0.0.5, 10.0.0.6"), "10.0.0.5");
  EXPECT_EQ(FromXff("10.0.0.5"), "10.0.0.5");
  EXPECT_EQ(FromXff(",10.0.0.5, ,10.0.0.6,"), "10.0.0.5");
}

TEST(ClientAddressFromForwardedForTest, EmptyHopsAreSkipped) {
  EXPECT_EQ(FromXff("203.0.113.1,,10.0.0.2,"), "203.0.113.1");
  EXPECT_EQ(FromXff("203.0.113.1, , "), "203.0.113.1");
}

TEST(ClientAddressFromForwardedForTest, UnreadableHopIsTheUnidentifiedClient) {
  // The answer is the one unidentified client, never a hop the sender could
  // have chosen from beyond the unreadable one, and never the trusted proxy
  // that handed the hop over.
  EXPECT_EQ(FormatIpAddress(UnidentifiedClient()), "100::");
  for (std::string_view bad : std::initializer_list<std::string_view>{
           "unknown", "_hidden", "example.org", "1.2.3.4:", "1.2.3.4:123456",
           "1.2.3.4:x", "[2001:db8::1]x", "[2001:db8::1]:", "[2001:db8::1",
           "[1.2.3.4]:80", "010.0.0.1", "1.2.3.4 5.6.7.8", "1.2.3.4;5.6.7.8",
           "\"1.2.3.4\"", std::string_view("1.2.3.4\0", 8)}) {
    const std::string header = "198.51.100.7, " + std::string(bad);
    EXPECT_EQ(FromXff(header), "100::") << header;
    EXPECT_EQ(FromXff(header + ", 10.0.0.7"), "100::") << header;
    EXPECT_EQ(FromXff(header + ", 203.0.113.1"), "203.0.113.1") << header;
  }
}

TEST(ClientAddressFromForwardedForTest, ExaminesAtMostTheHopCap) {
  // kMaxForwardedHops trusted hops, distinct, with a client left of them.
  std::string chain = "203.0.113.1";
  for (int i = kMaxForwardedHops - 1; i >= 0; --i) {
    chain += ", 10.0.0." + std::to_string(i);
  }
  // The cap is reached with a hop left: the client is not named.
  EXPECT_EQ(FromXff(chain), "100::");
  // One trusted hop fewer, and the client is the last hop examined.
  chain.erase(chain.rfind(','));
  EXPECT_EQ(FromXff(chain), "203.0.113.1");
}

TEST(ClientAddressFromForwardedForTest, HopLongerThanTheCapIsUnreadable) {
  const std::string fits(kMaxForwardedHopText - 11, ' ');  // + "203.0.113.1"
  EXPECT_EQ(FromXff("203.0.113.1" + fits), "203.0.113.1");
  EXPECT_EQ(FromXff("203.0.113.1" + fits + " "), "100::");
  EXPECT_EQ(FromXff("x,203.0.113.1" + fits), "203.0.113.1");
  EXPECT_EQ(FromXff("x, 203.0.113.1" + fits), "100::");
}

TEST(ClientAddressFromForwardedForTest, HostileHeadersOf64KiBResolve) {
  constexpr size_t k64KiB = 64 * 1024;
  std::string trusted_hops;
  while (trusted_hops.size() < k64KiB) trusted_hops += "10.0.0.2,";
  EXPECT_EQ(FromXff(trusted_hops), "100::");  // past the hop cap
  EXPECT_EQ(FromXff(std::string(k64KiB, 'a')), "100::");
  EXPECT_EQ(FromXff(std::string(k64KiB, ',')), "100::");
  EXPECT_EQ(FromXff(std::string(k64KiB, ' ')), "100::");
  EXPECT_EQ(FromXff(std::string(k64KiB, '[')), "100::");
  EXPECT_EQ(FromXff(std::string(k64KiB, '\0')), "100::");
  EXPECT_EQ(FromXff(std::string(k64KiB, 'a') + ",203.0.113.1"), "203.0.113.1");
  EXPECT_EQ(FromForwarded(std::string(k64KiB, '"')), "100::");
  EXPECT_EQ(FromForwarded(std::string(k64KiB, ';') + "for=203.0.113.1"),
            "100::");
}

TEST(ClientAddressFromForwardedTest, ReadsTheForParameter) {
  EXPECT_EQ(FromForwarded("for=192.0.2.60;proto=http;by=203.0.113.43"),
            "192.0.2.60");
  EXPECT_EQ(FromForwarded("proto=https;For=192.0.2.60"), "192.0.2.60");
  EXPECT_EQ(FromForwarded("FOR=192.0.2.60"), "192.0.2.60");
  EXPECT_EQ(FromForwarded(R"(for="[2001:db8:cafe::17]:4711")"),
            "2001:db8:cafe::17");
  EXPECT_EQ(FromForwarded(R"(for="[2001:db8:cafe::17]")"), "2001:db8:cafe::17");
  EXPECT_EQ(FromForwarded(R"(for="[2001:db8::1]:_abc.1")"), "2001:db8::1");
  EXPECT_EQ(FromForwarded(R"(for="192.0.2.43:47011")"), "192.0.2.43");
  EXPECT_EQ(FromForwarded(R"(for="192.0.2.43")"), "192.0.2.43");
  // Blanks around ";" and around the element are tolerated.
  EXPECT_EQ(FromForwarded(" proto=https ; for=192.0.2.60 ;host=example.com "),
            "192.0.2.60");
  // Quoted values of other parameters may hold ";" and escapes.
  EXPECT_EQ(FromForwarded(R"(ext="a;b\"c";for=192.0.2.60)"), "192.0.2.60");
  EXPECT_EQ(FromForwarded(";;for=192.0.2.60;"), "192.0.2.60");
}

TEST(ClientAddressFromForwardedTest, WalksElementsFromTheRight) {
  EXPECT_EQ(FromForwarded("for=198.51.100.7, for=203.0.113.1;proto=https, "
                          "for=10.0.0.2;by=10.0.0.1"),
            "203.0.113.1");
  EXPECT_EQ(FromForwarded(R"(for=10.0.0.5,for="[2001:db8:ffff::1]:80")"),
            "10.0.0.5");
  EXPECT_EQ(FromForwarded("for=203.0.113.1,,for=10.0.0.2,"), "203.0.113.1");
}

TEST(ClientAddressFromForwardedTest, UnreadableElementIsTheUnidentifiedClient) {
  for (std::string_view bad : {
           "for=unknown",
           "for=_hidden",
           R"(for="_hidden")",
           "proto=https",
           "for=1.2.3.4;for=5.6.7.8",
           R"(for="1.2.3.4)",
           R"(for="1.2.3.4"x)",
           R"(for="\1.2.3.4")",
           "for=[2001:db8::1]",
           "for=2001:db8::1",
           "for=1.2.3.4:80",
           "for=",
           "=1.2.3.4",
           "for 1.2.3.4",
           "for = 1.2.3.4",
           "1.2.3.4",
           // The comma splits the quoted string: both halves are unreadable.
           R"(for=203.0.113.9;ext="a,b")",
       }) {
    const std::string header = "for=198.51.100.7, " + std::string(bad);
    EXPECT_EQ(FromForwarded(header), "100::") << header;
    EXPECT_EQ(FromForwarded(header + ", for=10.0.0.7"), "100::") << header;
  }
}

}  // namespace
}  // namespace mxlimit
