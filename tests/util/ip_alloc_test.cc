// Proves that parsing, masking and matching addresses never allocate on
// success. A counting global operator new replaces the default for this
// binary only, which is why these tests live apart from ip_test.cc.

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/ip.h"
#include "tests/testing/counting_new.h"

namespace mxlimit {
namespace {

constexpr std::string_view kValidForms[] = {
    "192.0.2.1",
    "255.255.255.255",
    "2001:db8::1",
    "2001:0db8:0000:0000:0000:0000:0000:0001",
    "::",
    "::ffff:192.0.2.1",
    "64:ff9b::1.2.3.4",
    "[2001:db8::1]",
    "fe80::1%eth0",
    "[fe80::1%25]",
};

constexpr std::string_view kValidNetworks[] = {
    "10.0.0.0/8", "10.1.2.3/8", "2001:db8::/32", "::1", "::ffff:10.0.0.0/104",
};

TEST(IpAllocationTest, CounterSeesAllocations) {
  // Guards the other tests against a counter that silently counts nothing.
  long before = ::mxlimit::testing::AllocationCount();
  void* p = ::operator new(32);
  ::operator delete(p);
  EXPECT_EQ(::mxlimit::testing::AllocationCount() - before, 1);
  before = ::mxlimit::testing::AllocationCount();
  absl::StatusOr<IpAddress> bad = ParseIpAddress("300.1.1.1 is not an address");
  EXPECT_GT(::mxlimit::testing::AllocationCount() - before, 0)
      << "errors build a message";
  EXPECT_FALSE(bad.ok());
}

TEST(IpAllocationTest, ParsingValidAddressesDoesNotAllocate) {
  int ok = 0;
  long before = ::mxlimit::testing::AllocationCount();
  for (std::string_view text : kValidForms) {
    absl::StatusOr<IpAddress> ip = ParseIpAddress(text);
    ok += ip.ok();
  }
  long allocations = ::mxlimit::testing::AllocationCount() - before;
  EXPECT_EQ(ok, static_cast<int>(std::size(kValidForms)));
  EXPECT_EQ(allocations, 0);
}

TEST(IpAllocationTest, ParsingValidNetworksDoesNotAllocate) {
  int ok = 0;
  long before = ::mxlimit::testing::AllocationCount();
  for (std::string_view text : kValidNetworks) {
    absl::StatusOr<Cidr> net = ParseCidr(text);
    ok += net.ok();
  }
  long allocations = ::mxlimit::testing::AllocationCount() - before;
  EXPECT_EQ(ok, static_cast<int>(std::size(kValidNetworks)));
  EXPECT_EQ(allocations, 0);
}

TEST(IpAllocationTest, MaskingAndMatchingDoNotAllocate) {
  absl::StatusOr<IpAddress> ip = ParseIpAddress("2001:db8:1:2::3");
  absl::StatusOr<Cidr> net = ParseCidr("2001:db8::/32");
  ASSERT_TRUE(ip.ok() && net.ok());
  long before = ::mxlimit::testing::AllocationCount();
  IpAddress masked = MaskAddress(*ip, 24, 64);
  bool inside = net->Contains(masked);
  bool v4 = masked.is_v4();
  long allocations = ::mxlimit::testing::AllocationCount() - before;
  EXPECT_TRUE(inside);
  EXPECT_FALSE(v4);
  EXPECT_EQ(allocations, 0);
}

TEST(IpAllocationTest, ResolvingForwardedHeadersDoesNotAllocate) {
  absl::StatusOr<Cidr> proxies = ParseCidr("10.0.0.0/8");
  absl::StatusOr<IpAddress> peer = ParseIpAddress("10.0.0.1");
  ASSERT_TRUE(proxies.ok() && peer.ok());
  const Cidr trusted[] = {*proxies};
  const std::string garbage(64 * 1024, 'x');
  long before = ::mxlimit::testing::AllocationCount();
  const IpAddress xff = ClientAddressFromForwardedFor(
      *peer, "198.51.100.7, [2001:db8::1]:443 , 10.0.0.2:80", trusted);
  const IpAddress unreadable =
      ClientAddressFromForwardedFor(*peer, garbage, trusted);
  const IpAddress forwarded = ClientAddressFromForwarded(
      *peer, R"(for=198.51.100.7, For="[2001:db8::1]:4711";proto=https)",
      trusted);
  long allocations = ::mxlimit::testing::AllocationCount() - before;
  EXPECT_EQ(FormatIpAddress(xff), "2001:db8::1");
  EXPECT_EQ(unreadable, UnidentifiedClient());
  EXPECT_EQ(FormatIpAddress(forwarded), "2001:db8::1");
  EXPECT_EQ(allocations, 0);
}

}  // namespace
}  // namespace mxlimit
