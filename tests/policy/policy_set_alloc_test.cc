// PolicySet::Resolve performs no heap allocation. This binary replaces the
// global operator new to count calls, so it holds only this test.

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mxlimit/policy_set.h"
#include "tests/testing/counting_new.h"
#include "tests/testing/naive_resolve.h"
#include "tests/testing/policy_testing.h"

namespace mxlimit {
namespace {

using namespace ::mxlimit::testing;  // NOLINT: TestRoute enumerators.

TEST(PolicySetAllocTest, CounterSeesAllocations) {
  long before = ::mxlimit::testing::AllocationCount();
  auto* v = new std::vector<int>(100);
  delete v;
  EXPECT_GT(::mxlimit::testing::AllocationCount(), before);
}

TEST(PolicySetAllocTest, ResolveDoesNotAllocate) {
  std::vector<Policy> mine;
  // Every raw-side structure in play: exact, prefix, inner '*', both scopes.
  mine.push_back(MakePolicy("exact", "/_matrix/client/v3/sync", Scope::kUser));
  mine.push_back(
      MakePolicy("prefix", "/_matrix/client/v1/media/*", Scope::kIp, true));
  mine.push_back(
      MakePolicy("inner", "/_matrix/client/*/rooms/*/messages", Scope::kUser));
  for (int i = 0; i < 200; ++i) {
    mine.push_back(MakePolicy(
        "bulk" + std::to_string(i),
        "/_matrix/client/v3/rooms/!room" + std::to_string(i) + ":example.org/*",
        Scope::kUser));
  }
  absl::StatusOr<PolicySet> set =
      PolicySet::Compile(std::move(mine), true, kRouteKeys);
  ASSERT_TRUE(set.ok()) << set.status();

  // Paths longer than any small-string buffer, so a stray std::string copy
  // would show.
  const std::string long_path =
      "/_matrix/client/v3/rooms/!room17:example.org/send/m.room.message/" +
      std::string(200, 't');
  struct Request {
    const char* method;
    RouteId route;
    std::string_view path;
  } requests[] = {
      {"PUT", kSend, long_path},
      {"GET", kSync, "/_matrix/client/v3/sync"},
      {"GET", kMediaDownload, "/_matrix/client/v1/media/download/x.org/abc"},
      {"GET", kMessages, "/_matrix/client/r0/rooms/!a:b/messages"},
      {"POST", kFallback, "/_matrix/client/r0/keys/whatever"},
      {"BREW", 60000, "/nowhere"},
  };

  // Expected results, from Explain (which allocates), taken before counting.
  std::vector<PolicySet::Resolution> expected;
  for (const Request& r : requests) {
    for (bool user : {false, true}) {
      expected.push_back(::mxlimit::testing::ResolutionFromExplain(
          *set, set->Explain(r.method, r.route, r.path, user)));
    }
  }

  int mismatches = 0;
  const long before = ::mxlimit::testing::AllocationCount();
  for (int i = 0; i < 1000; ++i) {
    size_t k = 0;
    for (const Request& r : requests) {
      for (bool user : {false, true}) {
        mismatches +=
            set->Resolve(r.method, r.route, r.path, user) != expected[k++];
      }
    }
  }
  const long after = ::mxlimit::testing::AllocationCount();
  EXPECT_EQ(after - before, 0);
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace mxlimit
