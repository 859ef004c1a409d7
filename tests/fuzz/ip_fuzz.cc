// Fuzz target: client address and CIDR parsing (mxlimit/ip.h).
//
// The first byte picks the prefixes used for masking and containment; the
// rest is parsed both as an address and as a network, and its first 16 bytes
// are also used as a raw address. Invariants:
//   * FormatIpAddress -> ParseIpAddress gives back the same 16 bytes, for
//     every parsed address and for every raw 16-byte value; IPv4 (v4-mapped)
//     addresses print as dotted quads, the others with ':';
//   * a parsed network prints and re-parses to the same `Cidr`, has its
//     prefix in range and no host bits set, and contains its own base;
//   * `Cidr::Contains` equals a bit-by-bit reference comparison;
//   * `MaskAddress` is idempotent, keeps the address family and zeroes
//     exactly the bits past the prefix;
//   * failures are InvalidArgument with a bounded message;
//   * the rest read as an X-Forwarded-For or Forwarded header resolves
//     without error, to the peer itself when the peer is not trusted.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mxlimit/ip.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_input.h"

namespace mxlimit::fuzz {
namespace {

bool Bit(const IpAddress& ip, int i) {
  return (ip.bytes[i / 8] >> (7 - i % 8)) & 1;
}

// The first `bits` bits of `a` and `b` agree.
bool SamePrefix(const IpAddress& a, const IpAddress& b, int bits) {
  for (int i = 0; i < bits; ++i) {
    if (Bit(a, i) != Bit(b, i)) return false;
  }
  return true;
}

void CheckAddressRoundTrip(const IpAddress& ip) {
  const std::string text = FormatIpAddress(ip);
  MXLIMIT_FUZZ_CHECK(!text.empty() && text.size() <= 45);
  MXLIMIT_FUZZ_CHECK((text.find(':') == std::string::npos) == ip.is_v4());
  absl::StatusOr<IpAddress> again = ParseIpAddress(text);
  MXLIMIT_FUZZ_CHECK(again.ok());
  MXLIMIT_FUZZ_CHECK(*again == ip);
  MXLIMIT_FUZZ_CHECK(FormatIpAddress(*again) == text);
}

void CheckMask(const IpAddress& ip, int v4_prefix, int v6_prefix) {
  const IpAddress masked = MaskAddress(ip, v4_prefix, v6_prefix);
  MXLIMIT_FUZZ_CHECK(masked.is_v4() == ip.is_v4());
  MXLIMIT_FUZZ_CHECK(MaskAddress(masked, v4_prefix, v6_prefix) == masked);
  // Out-of-range prefixes are clamped.
  const int bits = ip.is_v4() ? 96 + std::clamp(v4_prefix, 0, 32)
                              : std::clamp(v6_prefix, 0, 128);
  MXLIMIT_FUZZ_CHECK(SamePrefix(masked, ip, bits));
  for (int i = bits; i < 128; ++i) MXLIMIT_FUZZ_CHECK(!Bit(masked, i));
}

void CheckError(const absl::Status& status) {
  MXLIMIT_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  // The input is quoted escaped and cut to 64 bytes.
  MXLIMIT_FUZZ_CHECK(!status.message().empty() &&
                     status.message().size() < 512);
}

void CheckNetwork(const Cidr& net, const IpAddress& probe) {
  MXLIMIT_FUZZ_CHECK(net.prefix_len >= 0 &&
                     net.prefix_len <= (net.v4 ? 32 : 128));
  MXLIMIT_FUZZ_CHECK(!net.v4 || net.base.is_v4());
  const int bits = net.v4 ? 96 + net.prefix_len : net.prefix_len;
  for (int i = bits; i < 128; ++i) MXLIMIT_FUZZ_CHECK(!Bit(net.base, i));
  MXLIMIT_FUZZ_CHECK(net.Contains(net.base));
  MXLIMIT_FUZZ_CHECK(
      net.Contains(probe) ==
      ((!net.v4 || probe.is_v4()) && SamePrefix(net.base, probe, bits)));
  const std::string text = FormatCidr(net);
  absl::StatusOr<Cidr> again = ParseCidr(text);
  MXLIMIT_FUZZ_CHECK(again.ok());
  MXLIMIT_FUZZ_CHECK(*again == net);
}

// `header` resolved from a trusted peer (10.0.0.1) or an untrusted one (the
// raw bytes, unless those happen to fall in a trusted network).
void CheckForwarded(std::string_view header, const IpAddress& raw,
                    bool trusted_peer) {
  static const Cidr kNetworks[] = {
      {.base = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 0}},
       .prefix_len = 8,
       .v4 = true},
      {.base = {{0x20, 0x01, 0x0d, 0xb8}}, .prefix_len = 32, .v4 = false},
  };
  const std::span<const Cidr> proxies(kNetworks);
  IpAddress peer = raw;
  if (trusted_peer) {
    peer = IpAddress{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}};
  }
  const bool trusted = proxies[0].Contains(peer) || proxies[1].Contains(peer);
  for (auto resolve :
       {&ClientAddressFromForwardedFor, &ClientAddressFromForwarded}) {
    const IpAddress client = resolve(peer, header, proxies);
    if (!trusted) MXLIMIT_FUZZ_CHECK(client == peer);
    MXLIMIT_FUZZ_CHECK(resolve(peer, header, {}) == peer);
  }
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit;
  using namespace mxlimit::fuzz;
  FuzzInput in(data, size);
  // Prefixes from -8 to 135: a few out of range on both sides.
  const int v4_prefix = static_cast<int>(in.Byte() % 48) - 8;
  const int v6_prefix = static_cast<int>(in.Byte() % 144) - 8;
  const std::string_view text = in.Rest();

  IpAddress raw;
  std::copy_n(text.begin(), std::min<size_t>(text.size(), 16),
              raw.bytes.begin());
  CheckAddressRoundTrip(raw);
  CheckMask(raw, v4_prefix, v6_prefix);

  absl::StatusOr<IpAddress> ip = ParseIpAddress(text);
  if (ip.ok()) {
    MXLIMIT_FUZZ_CHECK(text.size() <= 100);
    CheckAddressRoundTrip(*ip);
    CheckMask(*ip, v4_prefix, v6_prefix);
  } else {
    CheckError(ip.status());
  }

  absl::StatusOr<Cidr> net = ParseCidr(text);
  if (net.ok()) {
    CheckNetwork(*net, raw);
    if (ip.ok()) CheckNetwork(*net, *ip);
    // A bare address is a host route of that address.
    if (ip.ok() && text.find('/') == std::string_view::npos) {
      MXLIMIT_FUZZ_CHECK(net->base == *ip);
      MXLIMIT_FUZZ_CHECK(net->prefix_len == (net->v4 ? 32 : 128));
    }
  } else {
    CheckError(net.status());
  }

  CheckForwarded(text, raw, /*trusted_peer=*/(v4_prefix & 1) == 0);
  return 0;
}
