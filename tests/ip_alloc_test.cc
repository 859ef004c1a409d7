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

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// GCC cannot tell that these replace the global operators as a set, and warns
// that free() meets memory from operator new; here that pairing is the point.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return ::operator new(size, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

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
  long before = g_allocations.load();
  void* p = ::operator new(32);
  ::operator delete(p);
  EXPECT_EQ(g_allocations.load() - before, 1);
  before = g_allocations.load();
  absl::StatusOr<IpAddress> bad = ParseIpAddress("300.1.1.1 is not an address");
  EXPECT_GT(g_allocations.load() - before, 0) << "errors build a message";
  EXPECT_FALSE(bad.ok());
}

TEST(IpAllocationTest, ParsingValidAddressesDoesNotAllocate) {
  int ok = 0;
  long before = g_allocations.load();
  for (std::string_view text : kValidForms) {
    absl::StatusOr<IpAddress> ip = ParseIpAddress(text);
    ok += ip.ok();
  }
  long allocations = g_allocations.load() - before;
  EXPECT_EQ(ok, static_cast<int>(std::size(kValidForms)));
  EXPECT_EQ(allocations, 0);
}

TEST(IpAllocationTest, ParsingValidNetworksDoesNotAllocate) {
  int ok = 0;
  long before = g_allocations.load();
  for (std::string_view text : kValidNetworks) {
    absl::StatusOr<Cidr> net = ParseCidr(text);
    ok += net.ok();
  }
  long allocations = g_allocations.load() - before;
  EXPECT_EQ(ok, static_cast<int>(std::size(kValidNetworks)));
  EXPECT_EQ(allocations, 0);
}

TEST(IpAllocationTest, MaskingAndMatchingDoNotAllocate) {
  absl::StatusOr<IpAddress> ip = ParseIpAddress("2001:db8:1:2::3");
  absl::StatusOr<Cidr> net = ParseCidr("2001:db8::/32");
  ASSERT_TRUE(ip.ok() && net.ok());
  long before = g_allocations.load();
  IpAddress masked = MaskAddress(*ip, 24, 64);
  bool inside = net->Contains(masked);
  bool v4 = masked.is_v4();
  long allocations = g_allocations.load() - before;
  EXPECT_TRUE(inside);
  EXPECT_FALSE(v4);
  EXPECT_EQ(allocations, 0);
}

}  // namespace
}  // namespace mxlimit
