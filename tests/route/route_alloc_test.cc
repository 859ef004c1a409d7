// Proves that RouteNormalizer::Normalize never allocates. This binary
// replaces the global operator new with a counting one, so it is its own test
// executable and the count does not disturb other tests.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "mxlimit/route.h"
#include "tests/testing/counting_new.h"
#include "tests/testing/extra_routes.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit {
namespace {

TEST(RouteAllocTest, CountingHookSeesAllocations) {
  // The hook is live: otherwise the zero below would prove nothing.
  long before = ::mxlimit::testing::AllocationCount();
  auto* probe = new std::vector<int>(100);
  delete probe;
  EXPECT_GE(::mxlimit::testing::AllocationCount() - before, 1);
}

TEST(RouteAllocTest, NormalizeDoesNotAllocate) {
  const RouteNormalizer normalizer;
  // Every target is built before counting starts.
  std::vector<std::string> targets;
  for (const auto& row : testing::ReadTsv("matrix-spec-routes.tsv")) {
    for (const std::string& value : testing::IdentifierShapes()) {
      std::string t = testing::Instantiate(row.at("path"), value);
      targets.push_back(t);
      targets.push_back(t + "?since=s1&filter=%7B%7D#frag");
      const std::string v3 = "/_matrix/client/v3/";
      if (t.rfind(v3, 0) == 0) {
        targets.push_back("/_matrix/client/r0/" + t.substr(v3.size()));
      }
    }
  }
  targets.push_back(std::string(64 * 1024, 'a'));
  targets.push_back("/_matrix/client/v3/rooms/" + std::string(64 * 1024, 'x') +
                    "/send/m/t");
  std::string many;
  while (many.size() < 64 * 1024) many += "/s";
  targets.push_back(many);
  targets.push_back(std::string(4096, '\0'));
  targets.push_back("");
  targets.push_back("//");
  targets.push_back("/_matrix/client/v3/./sync");
  ASSERT_GT(targets.size(), 5000u);

  size_t known = 0;
  long before = ::mxlimit::testing::AllocationCount();
  for (const std::string& t : targets) {
    Route r = normalizer.Normalize("PUT", t);
    known += r.known;
    known += normalizer.key(r.id).size() > 0 ? 0 : 1;
  }
  long after = ::mxlimit::testing::AllocationCount();
  EXPECT_EQ(after - before, 0) << "Normalize allocated";
  EXPECT_GT(known, targets.size() / 4);  // the loop did real lookups
}

// The same with 1,000 extra templates of mixed shapes (and their aliases):
// an operator's table is matched by the same allocation-free walk.
TEST(RouteAllocTest, NormalizeWithExtraTemplatesDoesNotAllocate) {
  RouteOptions routes;
  routes.extra = testing::GenerateExtraRoutes(1000);
  const RouteNormalizer normalizer(routes);
  std::vector<std::string> targets;
  for (const ExtraRoute& e : routes.extra) {
    const std::string t = testing::TargetFor(e.route_template);
    targets.push_back(t);
    targets.push_back(t + "?q=1");
    targets.push_back(t + "/suffix");
  }
  targets.push_back("/_matrix/client/v3/sync");
  long before = ::mxlimit::testing::AllocationCount();
  size_t known = 0;
  for (const std::string& t : targets) {
    known += normalizer.Normalize("GET", t).known;
  }
  long after = ::mxlimit::testing::AllocationCount();
  EXPECT_EQ(after - before, 0) << "Normalize allocated";
  EXPECT_EQ(known, 2 * routes.extra.size() + 1);
}

}  // namespace
}  // namespace mxlimit
