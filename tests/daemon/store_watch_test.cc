// What mxlimitd logs of its store (issue #30, item 15): one line when it
// becomes unreachable, one when it is back, one for a connection lost and
// re-established between two looks; a flapping store gives at most one
// line per change and one per StoreWatch::kMinGap. Simulated time.

#include "src/daemon/store_watch.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mxlimit::daemon {
namespace {

using ::testing::Contains;
using ::testing::Pair;
using Line = StoreWatch::Line;
using std::chrono::seconds;

SharedStoreStats Up(uint64_t reconnects = 0) {
  SharedStoreStats s;
  s.connected = true;
  s.reconnects = reconnects;
  return s;
}

SharedStoreStats Down(bool connected = false) {
  SharedStoreStats s;
  s.connected = connected;
  s.breaker_open = connected;  // up but not answering: the breaker opened
  return s;
}

StoreWatch::Clock::time_point At(int second) {
  return StoreWatch::Clock::time_point() + seconds(1000 + second);
}

TEST(StoreWatchTest, OneLineWhenDownAndOneWhenBack) {
  StoreWatch watch;
  EXPECT_FALSE(watch.Observe(Up(), At(0)).has_value());
  EXPECT_FALSE(watch.Observe(Up(), At(1)).has_value());
  std::optional<Line> down = watch.Observe(Down(), At(2));
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->level, "warn");
  EXPECT_THAT(std::string(down->message),
              ::testing::StartsWith("store unreachable"));
  EXPECT_THAT(down->fields, Contains(Pair("connected", "false")));
  for (int t = 3; t < 40; ++t) {
    EXPECT_FALSE(watch.Observe(Down(), At(t)).has_value()) << t;
  }
  // Back after 38 seconds: the reconnect is this very return.
  std::optional<Line> up = watch.Observe(Up(1), At(40));
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(up->level, "info");
  EXPECT_EQ(up->message, "store reachable again");
  EXPECT_THAT(up->fields, Contains(Pair("down_for", "38s")));
  EXPECT_EQ(up->fields.size(), 1u);
  for (int t = 41; t < 100; ++t) {
    EXPECT_FALSE(watch.Observe(Up(1), At(t)).has_value()) << t;
  }
}

TEST(StoreWatchTest, AnOpenBreakerIsUnreachable) {
  StoreWatch watch;
  watch.Observe(Up(), At(0));
  std::optional<Line> down = watch.Observe(Down(/*connected=*/true), At(1));
  ASSERT_TRUE(down.has_value());
  EXPECT_THAT(down->fields, Contains(Pair("breaker", "open")));
}

TEST(StoreWatchTest, DownAtTheFirstLookIsLogged) {
  StoreWatch watch;
  std::optional<Line> down = watch.Observe(Down(), At(0));
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->level, "warn");
  // Back 3 s later; said once kMinGap has passed since the first line.
  EXPECT_FALSE(watch.Observe(Up(), At(3)).has_value());
  const int gap = static_cast<int>(StoreWatch::kMinGap.count());
  for (int t = 4; t < gap; ++t) {
    EXPECT_FALSE(watch.Observe(Up(), At(t)).has_value()) << t;
  }
  std::optional<Line> up = watch.Observe(Up(), At(gap));
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(up->message, "store reachable again");
  EXPECT_THAT(up->fields, Contains(Pair("down_for", "3s")));
  EXPECT_THAT(up->fields,
              Contains(Pair("back_for", std::to_string(gap - 3) + "s")));
}

// A restart between two looks: the state is the same, the reconnect
// counter is not.
TEST(StoreWatchTest, ARestartBetweenTwoLooksIsLogged) {
  StoreWatch watch;
  watch.Observe(Up(), At(0));
  SharedStoreStats restarted = Up(1);
  restarted.mirror_resets = 1;
  std::optional<Line> line = watch.Observe(restarted, At(1));
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->message, "store connection lost and re-established");
  EXPECT_THAT(line->fields, Contains(Pair("changes", "2")));
  EXPECT_THAT(line->fields, Contains(Pair("state_lost", "true")));
  EXPECT_FALSE(watch.Observe(restarted, At(30)).has_value());
}

// Down and up every second for ten minutes: at most one line per kMinGap,
// each counting the changes it stands for, and the last state is logged
// once the store settles.
TEST(StoreWatchTest, AFlappingStoreDoesNotFloodTheLog) {
  StoreWatch watch;
  watch.Observe(Up(), At(0));
  std::vector<std::pair<int, Line>> lines;
  uint64_t reconnects = 0;
  int t = 1;
  for (; t <= 600; ++t) {
    const bool up = t % 2 == 0;
    if (up) ++reconnects;
    std::optional<Line> line =
        watch.Observe(up ? Up(reconnects) : Down(), At(t));
    if (line.has_value()) lines.emplace_back(t, *line);
  }
  const int gap = static_cast<int>(StoreWatch::kMinGap.count());
  EXPECT_LE(lines.size(), static_cast<size_t>(600 / gap + 1));
  EXPECT_GE(lines.size(), static_cast<size_t>(600 / gap - 1));
  uint64_t changes = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      EXPECT_GE(lines[i].first - lines[i - 1].first, gap);
    }
    uint64_t n = 1;
    for (const auto& [key, value] : lines[i].second.fields) {
      if (key == "changes") n = std::stoull(value);
    }
    changes += n;
  }
  // Every change is counted in some line (the last ones, maybe not yet).
  EXPECT_GE(changes, 600u - gap);
  EXPECT_LE(changes, 600u);
  // It settles up: one more line at most, then silence.
  int more = 0;
  for (; t <= 700; ++t) {
    if (watch.Observe(Up(reconnects), At(t)).has_value()) ++more;
  }
  EXPECT_LE(more, 1);
}

}  // namespace
}  // namespace mxlimit::daemon
