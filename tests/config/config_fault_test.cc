// Config faults under traffic: an operator's reload with a broken file (or one
// that changes what cannot change) must leave the old policies in force and
// every bucket as it was; a file with 10k policies must load and resolve.
// The per-request cost against the number of policies is measured by
// bench/policy_bench.cc (BM_PolicySet_Resolve/policies:N) and
// bench/policy_scale_bench.cc (BM_Limiter_Check_Policies/policies:N).

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/limiter.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::At;
using ::mxlimit::testing::MakeRequest;
using ::testing::HasSubstr;

constexpr char kGoodConfig[] = R"(
builtin_policies: false
tables:
  ip: { capacity: 1000 }
  user: { capacity: 1000 }
policies:
  - name: send
    match: "/_matrix/client/v3/rooms/*"
    scope: user
    rate_limit: { unit: minute, requests_per_unit: 6 }
    burst: 3
  - name: sync
    match: "/_matrix/client/v3/sync"
    scope: ip
    rate_limit: { unit: minute, requests_per_unit: 30 }
    burst: 5
)";

// What an operator's hand slip produces: the YAML no longer parses.
constexpr char kBrokenYaml[] = R"(
policies:
  - name: send
    match: "/_matrix/client/v3/rooms/*
    scope: user
)";

// Valid YAML and valid policies, but it resizes a table (fixed at start-up).
constexpr char kResizedTables[] = R"(
tables:
  ip: { capacity: 5 }
policies:
  - name: send
    match: "/_matrix/client/v3/rooms/*"
    scope: user
    rate_limit: { unit: second, requests_per_unit: 1000 }
)";

std::string WriteFile(const std::string& name, std::string_view text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The embedder's reload: read the file; apply it only if it loads.
absl::Status ReloadFromFile(Limiter& limiter, const std::string& path) {
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
  if (!config.ok()) return config.status();
  return limiter.Reload(*config);
}

std::unique_ptr<Limiter> FromFile(const std::string& path) {
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
  EXPECT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(*config);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

// Traffic: a user sending into rooms and an address syncing, one request per
// 700 ms, with the decisions recorded.
struct Traffic {
  std::vector<std::string> outcomes;
  void Step(Limiter& limiter, int i) {
    const std::string send = "/_matrix/client/v3/rooms/!r" + std::to_string(i) +
                             ":x/send/m.room.message/t";
    const Request req =
        i % 2 ? MakeRequest("PUT", send, "203.0.113.9", "@alice:example.org")
              : MakeRequest("GET", "/_matrix/client/v3/sync", "198.51.100.4");
    const Decision d =
        limiter.Check(req, MonotonicTime::FromMilliseconds(700 * int64_t{i}));
    outcomes.push_back(d.allowed ? "ok"
                                 : std::string(d.policy) + " " +
                                       std::to_string(d.retry_after.count()));
  }
};

TEST(ConfigFaultTest, BrokenReloadsUnderTrafficChangeNoDecision) {
  const std::string good = WriteFile("good.yaml", kGoodConfig);
  auto reference = FromFile(good);
  auto reloaded = FromFile(good);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(reloaded, nullptr);
  const std::string broken = WriteFile("broken.yaml", kBrokenYaml);
  const std::string resized = WriteFile("resized.yaml", kResizedTables);

  Traffic expected, got;
  for (int i = 0; i < 2000; ++i) {
    expected.Step(*reference, i);
    got.Step(*reloaded, i);
    if (i % 50 == 25) {
      absl::Status s = ReloadFromFile(*reloaded, broken);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(s.message(), HasSubstr("broken.yaml:"));
      s = ReloadFromFile(*reloaded, resized);
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(s.message(), HasSubstr("old policies stay in force"));
    }
  }
  // Same decisions, request for request: nothing was lost or reset.
  EXPECT_EQ(got.outcomes, expected.outcomes);
  EXPECT_THAT(got.outcomes, ::testing::Contains(HasSubstr("send ")));
  EXPECT_THAT(got.outcomes, ::testing::Contains(HasSubstr("sync ")));
  EXPECT_EQ(reloaded->Stats().user_table.size,
            reference->Stats().user_table.size);
}

TEST(ConfigFaultTest, RereadingTheSameFileKeepsEveryBucket) {
  const std::string good = WriteFile("same.yaml", kGoodConfig);
  auto limiter = FromFile(good);
  ASSERT_NE(limiter, nullptr);
  const Request req =
      MakeRequest("PUT", "/_matrix/client/v3/rooms/!r:x/send/m.room.message/t",
                  "203.0.113.9", "@alice:example.org");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter->Check(req, At(0)).allowed);
  const Decision before = limiter->Check(req, At(1));
  ASSERT_FALSE(before.allowed);
  const int64_t retry = before.retry_after.count();
  ASSERT_TRUE(ReloadFromFile(*limiter, good).ok());
  const Decision after = limiter->Check(req, At(1));
  EXPECT_FALSE(after.allowed);
  EXPECT_EQ(after.retry_after.count(), retry);
  EXPECT_EQ(after.policy, "send");
}

// 10k operator policies, each a trailing-'*' prefix (every tenth sharing one
// budget across its routes), plus an exact one. Flow style and one anchored
// rate keep the file under the loader's 1 MiB cap.
std::string ManyPoliciesYaml(int n) {
  std::string yaml = "policies:\n";
  for (int i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    const std::string rate =
        i == 0 ? "&r {unit: hour, requests_per_unit: 2}" : "*r";
    yaml += "- {name: p" + id + ", match: /_matrix/client/v3/rooms/!r" + id +
            "/*, rate_limit: " + rate +
            (i % 10 == 0 ? ", share_threshold: true" : "") + "}\n";
  }
  yaml += "- {name: exact, match: /_matrix/client/v3/sync, rate_limit: *r}\n";
  return yaml;
}

TEST(ConfigFaultTest, TenThousandPoliciesAreCheckedWithWarnings) {
  // check-config's analysis of outranked policies compiles the set and
  // walks each policy's routes: bounded, and its warnings capped. As user
  // policies, each room's rule loses that room's joins and invites to the
  // built-in exact ones: a warning each, all but the first 100 counted.
  std::string yaml = ManyPoliciesYaml(10'000);
  for (size_t at = yaml.find("rate_limit:"); at != std::string::npos;
       at = yaml.find("rate_limit:", at + 20)) {
    yaml.insert(at, "scope: user, ");
  }
  ASSERT_LE(yaml.size(), kMaxConfigBytes);
  absl::StatusOr<CheckedConfig> checked =
      ParseConfigWithWarnings(yaml, "many.yaml");
  ASSERT_TRUE(checked.ok()) << checked.status().message().substr(0, 500);
  ASSERT_EQ(checked->warnings.size(), kMaxConfigErrorsReported + 1);
  EXPECT_THAT(checked->warnings.front(),
              HasSubstr("policies[0]: policy \"p0\" never applies to POST on "
                        "/_matrix/client/v3/rooms/{roomId}/invite"));
  EXPECT_EQ(checked->warnings.back(),
            "many.yaml: 19900 more warnings not shown");
}

TEST(ConfigFaultTest, TenThousandPoliciesLoadAndResolve) {
  constexpr int kPolicies = 10'000;
  const std::string yaml = ManyPoliciesYaml(kPolicies);
  ASSERT_LE(yaml.size(), kMaxConfigBytes);
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "many.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message().substr(0, 500);
  ASSERT_EQ(config->policies.size(), size_t{kPolicies} + 1);
  absl::StatusOr<std::unique_ptr<Limiter>> limiter = Limiter::Create(*config);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  Limiter& l = **limiter;

  for (int i : {0, 1, 4999, 5000, 9998, 9999}) {
    const std::string name = "p" + std::to_string(i);
    const std::string target = "/_matrix/client/v3/rooms/!r" +
                               std::to_string(i) + "/send/m.room.message/t";
    const Request req = MakeRequest("PUT", target, "203.0.113.9");
    const Decision first = l.Check(req, At(0));
    ASSERT_TRUE(first.allowed);
    EXPECT_EQ(l.policies().policy(first.ip_policy).name, name);
    EXPECT_TRUE(l.Check(req, At(0)).allowed);
    const Decision third = l.Check(req, At(0));
    EXPECT_FALSE(third.allowed);
    EXPECT_EQ(third.policy, name);
  }
  // A room no policy names falls to the built-ins; the exact one is exact.
  const Decision other = l.Check(
      MakeRequest("PUT", "/_matrix/client/v3/rooms/!zz/send/m.room.message/t",
                  "203.0.113.9"),
      At(0));
  EXPECT_EQ(l.policies().policy(other.ip_policy).name, "catch-all-ip");
  const Decision sync = l.Check(
      MakeRequest("GET", "/_matrix/client/v3/sync", "203.0.113.9"), At(0));
  EXPECT_EQ(l.policies().policy(sync.ip_policy).name, "exact");
}

TEST(ConfigFaultTest, StrayCommaIsASyntaxErrorNotAHang) {
  // yaml-cpp 0.7's LoadAll loops forever, allocating, on these; the loader
  // must stop and report the position instead.
  for (std::string_view text : {",", ",poli[:psc =*f]poli[8\n", "[a] ,"}) {
    absl::StatusOr<LimiterConfig> config = ParseConfig(text, "comma.yaml");
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr("comma.yaml:1:"));
    EXPECT_THAT(config.status().message(), HasSubstr("YAML syntax error"));
  }
}

// Regression (found by tests/fuzz/config_fuzz.cc): a plain value printed
// "as written" when its quoted form merely had the right size, which happens
// when escaping adds exactly the bytes that cutting at 64 removes. A raw
// newline then split the message into a line that does not start with the
// file name. Here a 100-byte value whose first 64 bytes escape to 85 (six
// \x88 +18, two '\\' +2, one '\n' +1): quoted and cut it is
// 1 + 85 + 16 = 102 bytes, the raw value's size plus two quotes.
TEST(ConfigFaultTest, ErrorMessagesNeverCarryRawNewlines) {
  const std::string value = std::string(6, '\x88') + "\\\\" +
                            std::string(38, 'z') + "\n" + std::string(53, 'b');
  ASSERT_EQ(value.size(), 100u);
  const size_t newline = value.find('\n');
  // A folded plain scalar: the blank line becomes the '\n' in the value.
  const std::string yaml =
      "tables:\n  ip:\n    ipv6_prefix: " + value.substr(0, newline) +
      "\n\n      " + value.substr(newline + 1) + "\n";
  absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "nl.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("ipv6_prefix: got \""));
  for (absl::string_view line :
       absl::StrSplit(config.status().message(), '\n')) {
    EXPECT_TRUE(absl::StartsWith(line, "nl.yaml:")) << line;
  }
}

}  // namespace
}  // namespace mxlimit
