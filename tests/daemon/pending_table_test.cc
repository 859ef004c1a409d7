// mxlimitd's pending table: the decisions kept for their completions on the
// feed, bounded, one entry per request id.
#include "src/daemon/pending_table.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/decision.h"
#include "mxlimit/ip.h"
#include "mxlimit/request.h"

namespace mxlimit::daemon {
namespace {

constexpr std::string_view kLogin = "/_matrix/client/v3/login";
constexpr std::string_view kInitialSync = "/_matrix/client/v3/sync";

PendingRequest Kept(std::string_view user) {
  PendingRequest r;
  r.client = *ParseIpAddress("203.0.113.9");
  r.user_id = user;
  r.settles = true;
  return r;
}

TEST(PendingTableTest, KeepsUntilTakenAndOnlyOnce) {
  PendingTable table(16);
  table.Put("a1", Kept("@alice:example.org"));
  PendingEntry e;
  ASSERT_TRUE(table.Take("a1", e));
  EXPECT_EQ(e.id(), "a1");
  EXPECT_EQ(e.request().user_id, "@alice:example.org");
  EXPECT_EQ(FormatIpAddress(e.request().client), "203.0.113.9");
  EXPECT_FALSE(table.Take("a1", e));
  EXPECT_FALSE(table.Take("never-put", e));
  EXPECT_EQ(table.counters().entries, 0u);
}

TEST(PendingTableTest, DropsTheOldestWhenFullAndCountsIt) {
  // One slot per shard and more: eviction is per shard, oldest first, so
  // with a full table every later id survives and the total stays bounded.
  constexpr size_t kCapacity = 64;
  PendingTable table(kCapacity);
  for (int i = 0; i < 10'000; ++i) {
    table.Put("id" + std::to_string(i), Kept("@u:example.org"));
  }
  const PendingTable::Counters c = table.counters();
  EXPECT_EQ(c.entries, kCapacity);
  EXPECT_EQ(c.capacity, kCapacity);
  EXPECT_EQ(c.evicted, 10'000 - kCapacity);
  PendingEntry e;
  EXPECT_FALSE(table.Take("id0", e));
  EXPECT_TRUE(table.Take("id9999", e));
}

TEST(PendingTableTest, ReplacesASameIdAndKeepsOverlongNamesOut) {
  // Room for both ids in whichever stripe each hashes to.
  PendingTable table(64);
  PendingRequest first = Kept("@first:example.org");
  first.leases.count = 1;
  first.leases.ids[0] = 42;
  EXPECT_EQ(table.Put("same", first).count, 0);
  // The same request checked again: the first check's leases come back.
  const Leases displaced = table.Put("same", Kept("@second:example.org"));
  ASSERT_EQ(displaced.count, 1);
  EXPECT_EQ(displaced.ids[0], 42u);
  EXPECT_EQ(table.counters().replaced, 1u);
  EXPECT_EQ(table.counters().entries, 1u);
  // A name its client chose too long never keeps the request out: it is
  // kept without the name, and its address is still charged.
  const std::string long_user = "@" + std::string(300, 'a') + ":example.org";
  table.Put("long", Kept(long_user));
  EXPECT_EQ(table.counters().too_long, 1u);
  PendingEntry e;
  ASSERT_TRUE(table.Take("long", e));
  EXPECT_TRUE(e.request().user_id.empty());
  EXPECT_EQ(FormatIpAddress(e.request().client), "203.0.113.9");
  ASSERT_TRUE(table.Take("same", e));
  EXPECT_EQ(e.request().user_id, "@second:example.org");
}

TEST(PendingRequestTest, SettlesTheSubjectsItKept) {
  Request checked;
  checked.method = "POST";
  checked.target = kLogin;
  checked.client = *ParseIpAddress("2001:db8::7");
  checked.user_id = "@alice:example.org";
  checked.origin = "remote.example.net";
  checked.request_bytes = 812;
  Decision d;
  d.leases.count = 1;
  d.leases.ids[0] = 7;
  d.settles = true;
  const PendingRequest kept = PendingRequest::Of(checked, d);
  EXPECT_EQ(kept.leases.count, 1);
  EXPECT_EQ(kept.leases.ids[0], 7u);
  EXPECT_TRUE(kept.settles);
  // Through the table, as the feed takes it back: the method and target
  // are the completion's, everything else the decision's.
  PendingTable table(16);
  table.Put("r1", kept);
  PendingEntry e;
  ASSERT_TRUE(table.Take("r1", e));
  const Request settled = e.request().ToRequest("GET", kInitialSync);
  EXPECT_EQ(settled.method, "GET");
  EXPECT_EQ(settled.target, kInitialSync);
  EXPECT_EQ(FormatIpAddress(settled.client), "2001:db8::7");
  EXPECT_EQ(settled.user_id, checked.user_id);
  EXPECT_EQ(settled.origin, checked.origin);
  EXPECT_EQ(settled.request_bytes, 812);
}

}  // namespace
}  // namespace mxlimit::daemon
