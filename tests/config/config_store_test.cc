// The `store:` section and each policy's `sharing`: what a SharedLimiter
// (mxlimitd, `mxlimit replay --store`) reads. Values, defaults, the key
// secret file, errors at their positions, and the warnings.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/options.h"
#include "src/options/store_url.h"
#include "tests/testing/config_helpers.h"
#include "tests/testing/store_url_shapes.h"
#include "tests/testing/temp_dir.h"

namespace mxlimit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing_config::Errors;
using testing_config::Parse;

constexpr char kSecret[] = "0123456789abcdef0123";

std::string Store(std::string_view body) {
  return "store:\n  url: redis://127.0.0.1:6379/0\n  key_secret: " +
         std::string(kSecret) + "\n" + std::string(body);
}

std::vector<std::string> StoreWarnings(std::string_view yaml) {
  absl::StatusOr<CheckedConfig> checked =
      ParseConfigWithWarnings(yaml, "test.yaml", ConfigCheckOptions{1});
  EXPECT_TRUE(checked.ok()) << checked.status().message();
  return checked.ok() ? checked->warnings : std::vector<std::string>{};
}

// A scratch directory, removed at the end.
class TempDir {
 public:
  TempDir() { path_ = testing::MakeTempDir("mxlimit_store_test_"); }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, std::string_view text) const {
    const std::string path = path_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConfigStoreTest, WithoutAStoreSectionEverythingIsDefault) {
  LimiterConfig config = Parse(
      "policies:\n  - name: a\n    match: /a\n"
      "    unlimited: true\n");
  const StoreOptions defaults;
  EXPECT_TRUE(config.store.url.empty());
  EXPECT_TRUE(config.store.key_secret.empty());
  EXPECT_EQ(config.store.timeout, defaults.timeout);
  EXPECT_EQ(config.store.sync_interval, defaults.sync_interval);
  EXPECT_EQ(config.store.clock, StoreOptions::Clock::kStore);
  EXPECT_TRUE(config.store.local_denial);
  EXPECT_EQ(config.policies[0].sharing, Sharing::kExact);
}

TEST(ConfigStoreTest, EveryKeyIsRead) {
  LimiterConfig config = Parse(R"(store:
  url: "redis://mxlimit:s3cret@redis.internal:6380/3"
  key_secret: "0123456789abcdef0123"
  timeout: 250us
  sync_interval: 2s
  fallback_share: 0.25
  connections: 4
  clock: caller
  max_in_flight: 100
  local_denial: false
policies:
  - name: catch-all
    match: "*"
    sharing: approximate
    rate_limit: {unit: second, requests_per_unit: 100, burst: 500}
  - name: login
    match: /_matrix/client/v3/login
    sharing: local
    rate_limit: {unit: minute, requests_per_unit: 3}
  - name: send
    match: /_matrix/client/v3/rooms/*
    sharing: exact
    unlimited: true
)");
  const StoreOptions& s = config.store;
  EXPECT_EQ(s.url, "redis://mxlimit:s3cret@redis.internal:6380/3");
  EXPECT_EQ(s.key_secret, kSecret);
  EXPECT_EQ(s.timeout, std::chrono::microseconds(250));
  EXPECT_EQ(s.sync_interval, std::chrono::milliseconds(2000));
  EXPECT_DOUBLE_EQ(s.fallback_share, 0.25);
  EXPECT_EQ(s.connections, 4);
  EXPECT_EQ(s.clock, StoreOptions::Clock::kCaller);
  EXPECT_EQ(s.max_in_flight, 100u);
  EXPECT_FALSE(s.local_denial);
  EXPECT_EQ(config.policies[0].sharing, Sharing::kApproximate);
  EXPECT_EQ(config.policies[1].sharing, Sharing::kLocal);
  EXPECT_EQ(config.policies[2].sharing, Sharing::kExact);
  EXPECT_TRUE(ValidateStoreOptions(s).ok());
}

TEST(ConfigStoreTest, UrlShapes) {
  for (const char* url :
       {"redis://127.0.0.1:6379", "redis://localhost:6379/0",
        "redis://[::1]:6379/15", "redis://:pw@host:1/2",
        "redis://user:p@ss@host:6379/0", "unix:///run/redis/redis.sock",
        "unix:///run/redis.sock?db=2"}) {
    LimiterConfig config = Parse(std::string("store:\n  url: \"") + url +
                                 "\"\n  key_secret: " + kSecret + "\n");
    EXPECT_EQ(config.store.url, url);
  }
}

TEST(ConfigStoreTest, BadUrlsAreErrorsAtTheValueAndHideThePassword) {
  auto error = [](std::string_view url) {
    std::vector<std::string> e =
        Errors(std::string("store:\n  url: \"") + std::string(url) +
               "\"\n  key_secret: " + kSecret + "\n");
    return e.empty() ? std::string() : e[0];
  };
  EXPECT_THAT(
      error("http://127.0.0.1:6379"),
      HasSubstr("test.yaml:2:8: store.url: got \"http://127.0.0.1:6379\""
                ", expected redis://HOST:PORT[/DB]"));
  EXPECT_THAT(error("http://127.0.0.1:6379"),
              HasSubstr("the scheme must be redis://, rediss://, "
                        "redis-sentinel://, redis-cluster:// or unix://"));
  EXPECT_THAT(error("redis://127.0.0.1"), HasSubstr("the port is missing"));
  EXPECT_THAT(error("redis://127.0.0.1:0/0"),
              HasSubstr("the port must be a number from 1 to 65535"));
  EXPECT_THAT(error("redis://127.0.0.1:6379/x"),
              HasSubstr("the database after '/' must be a number"));
  EXPECT_THAT(error("redis://::1:6379"), HasSubstr("must be a DNS name"));
  EXPECT_THAT(error("unix://run/redis.sock"),
              HasSubstr("the socket path must be absolute"));
  EXPECT_THAT(error("rediss://h"), HasSubstr("the port is missing"));
  const std::string secret = error("redis://u:hunter2@h:99999/0");
  EXPECT_THAT(secret, HasSubstr("redis://u:***@h:99999/0"));
  EXPECT_THAT(secret, Not(HasSubstr("hunter2")));
}

// Issue #30, item 4: whatever the shape, a store URL is never quoted with
// its password: not by StoreUrlProblem (mxlimitd --store, replay --store),
// not by the loader's errors (store.url, or the URL given as the section).
TEST(ConfigStoreTest, MalformedUrlsNeverShowThePassword) {
  const std::string_view pw = testing::kStoreUrlPassword;
  for (const std::string& url : testing::MalformedStoreUrls()) {
    SCOPED_TRACE(url);
    EXPECT_THAT(RedactStoreUrl(url), Not(HasSubstr(pw)));
    EXPECT_THAT(StoreUrlProblem(url), Not(HasSubstr(pw)));
    // YAML double-quoted: every byte as an escape.
    std::string quoted = "\"";
    for (unsigned char c : url) {
      absl::StrAppend(&quoted, "\\x", absl::Hex(c, absl::kZeroPad2));
    }
    quoted += "\"";
    for (const std::string& yaml :
         {absl::StrCat("store:\n  url: ", quoted, "\n  key_secret: ", kSecret,
                       "\n"),
          absl::StrCat("store: ", quoted, "\n")}) {
      absl::StatusOr<LimiterConfig> config = ParseConfig(yaml, "test.yaml");
      if (!config.ok()) {
        EXPECT_THAT(std::string(config.status().message()), Not(HasSubstr(pw)));
      }
    }
  }
}

TEST(ConfigStoreTest, RedactStoreUrlKeepsWhatIsNotSecret) {
  EXPECT_EQ(RedactStoreUrl("redis://mx:pw@h:1/0"), "redis://mx:***@h:1/0");
  EXPECT_EQ(RedactStoreUrl("redis://:p@ss@h:1"), "redis://:***@h:1");
  EXPECT_EQ(RedactStoreUrl("redis://pw@h:1"), "redis://***@h:1");
  EXPECT_EQ(RedactStoreUrl("redis://pw:@h:1"), "redis://***@h:1");
  EXPECT_EQ(RedactStoreUrl("rediss://:pw@h:1"), "rediss://:***@h:1");
  EXPECT_EQ(RedactStoreUrl("REDIS://u:pw@h:1"), "REDIS://u:***@h:1");
  EXPECT_EQ(RedactStoreUrl("redis//:pw@h:1"), "redis//:***@h:1");
  EXPECT_EQ(RedactStoreUrl("pw@h:1"), "***@h:1");
  EXPECT_EQ(RedactStoreUrl("redis://h:1/0"), "redis://h:1/0");
  EXPECT_EQ(RedactStoreUrl("unix:///s.sock?db=2"), "unix:///s.sock?db=2");
  EXPECT_EQ(RedactStoreUrl("unix:///s.sock?db=2&password=pw&x"),
            "unix:///s.sock?db=2&password=***&***");
  EXPECT_EQ(StoreUrlProblem("redis://u:pw@h:1"), "");
  EXPECT_THAT(StoreUrlProblem("redis://pw:@h:1"), HasSubstr("with a password"));
}

// --- ParseStoreUrl: the one grammar of validation and the store ----------

TEST(StoreUrlTest, ParsesTcpForms) {
  using internal::ParseStoreUrl;
  absl::StatusOr<internal::StoreEndpoint> e =
      ParseStoreUrl("redis://10.0.0.5:6379");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "10.0.0.5");
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->db, 0);
  EXPECT_TRUE(e->user.empty());
  EXPECT_TRUE(e->password.empty());
  EXPECT_TRUE(e->unix_path.empty());

  e = ParseStoreUrl("redis://alice:s%40cret@redis.internal:6380/3");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->user, "alice");
  EXPECT_EQ(e->password, "s@cret");
  EXPECT_EQ(e->host, "redis.internal");
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->db, 3);

  e = ParseStoreUrl("redis://:p@ss:w/rd@[::1]:7000/2147483647");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->user, "");
  EXPECT_EQ(e->password, "p@ss:w/rd");
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->db, 2147483647);
}

TEST(StoreUrlTest, RedissIsTheSameGrammarOverTls) {
  absl::StatusOr<internal::StoreEndpoint> e =
      internal::ParseStoreUrl("rediss://alice:pw@redis.example.org:6380/2");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->host, "redis.example.org");
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->user, "alice");
  EXPECT_EQ(e->db, 2);
  e = internal::ParseStoreUrl("redis://redis.example.org:6380");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(e->tls);
}

TEST(StoreUrlTest, SentinelNamesTheSentinelsAndThePrimary) {
  absl::StatusOr<internal::StoreEndpoint> e = internal::ParseStoreUrl(
      "redis-sentinel://:pw@10.0.0.1:26379,[::1]:26380,s3.example:26381/"
      "main-cache/4");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->sentinels.size(), 3u);
  EXPECT_EQ(e->sentinels[0].host, "10.0.0.1");
  EXPECT_EQ(e->sentinels[0].port, 26379);
  EXPECT_EQ(e->sentinels[1].host, "::1");
  EXPECT_EQ(e->sentinels[2].host, "s3.example");
  EXPECT_EQ(e->sentinels[2].port, 26381);
  EXPECT_EQ(e->master_name, "main-cache");
  EXPECT_EQ(e->db, 4);
  EXPECT_EQ(e->password, "pw");
  EXPECT_TRUE(e->host.empty());
  EXPECT_THAT(StoreUrlProblem("redis-sentinel://h:26379"),
              HasSubstr("the primary's name is missing"));
  EXPECT_THAT(StoreUrlProblem("redis-sentinel://h/mymaster"),
              HasSubstr("a Sentinel: the port is missing"));
  EXPECT_THAT(StoreUrlProblem("redis-sentinel://h:1/my master"),
              HasSubstr("the primary's name may hold"));
  EXPECT_EQ(RedactStoreUrl("redis-sentinel://:hunter2@h:1/m"),
            "redis-sentinel://:***@h:1/m");
}

TEST(ConfigStoreTest, ClusterUrlsNameSeedsAndDatabaseZeroOnly) {
  auto error = [](std::string_view url) {
    std::vector<std::string> e =
        Errors(std::string("store:\n  url: \"") + std::string(url) +
               "\"\n  key_secret: " + kSecret + "\n");
    return e.empty() ? std::string() : e[0];
  };
  EXPECT_EQ(StoreUrlProblem("redis-cluster://10.0.0.1:7000,10.0.0.2:7000"), "");
  EXPECT_EQ(StoreUrlProblem("redis-cluster://:pw@10.0.0.1:7000/"), "");
  EXPECT_THAT(error("redis-cluster://10.0.0.1:7000/3"),
              HasSubstr("Redis Cluster has only database 0"));
  EXPECT_THAT(error("redis-cluster://10.0.0.1:7000,10.0.0.2"),
              HasSubstr("a cluster node: the port is missing"));
  EXPECT_THAT(error("redis-cluster://"), HasSubstr("a cluster node: "));
  std::string seventeen = "redis-cluster://";
  for (int i = 0; i < 17; ++i) {
    seventeen +=
        (i == 0 ? "" : ",") + std::string("h:") + std::to_string(7000 + i);
  }
  EXPECT_THAT(error(seventeen), HasSubstr("at most 16 cluster nodes"));
  EXPECT_THAT(error("redis-cluster://:hunter2@h"),
              ::testing::Not(HasSubstr("hunter2")));
  // store.tls needs rediss://, which a cluster URL is not.
  std::vector<std::string> e = Errors(
      std::string("store:\n  url: redis-cluster://h:7000\n  key_secret: ") +
      kSecret + "\n  tls:\n    ca_file: /etc/hostname\n");
  ASSERT_FALSE(e.empty());
  EXPECT_THAT(e[0], HasSubstr("store.tls"));
}

TEST(ConfigStoreTest, TlsFilesAreReadRelativeToTheConfig) {
  TempDir dir;
  dir.Write("ca.pem", "x");
  dir.Write("client.pem", "x");
  dir.Write("client.key", "x");
  const std::string file = dir.Write(
      "mxlimit.yaml", absl::StrCat("store:\n  url: rediss://h:6380\n  "
                                   "key_secret: ",
                                   kSecret,
                                   "\n  tls:\n    ca_file: ca.pem\n    "
                                   "cert_file: client.pem\n    key_file: "
                                   "client.key\n"));
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(file);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->store.tls.ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(config->store.tls.cert_file, dir.path() + "/client.pem");
  EXPECT_EQ(config->store.tls.key_file, dir.path() + "/client.key");
}

TEST(ConfigStoreTest, TlsMistakesAreErrorsAtTheirLines) {
  const std::string tls_store = absl::StrCat(
      "store:\n  url: rediss://h:6380\n  key_secret: ", kSecret, "\n");
  EXPECT_THAT(Errors(Store("  tls:\n    ca_file: /etc/hostname\n")),
              ElementsAre(HasSubstr("test.yaml:4:3: store.tls: given for a "
                                    "store URL without TLS; use rediss://")));
  EXPECT_THAT(
      Errors(tls_store + "  tls:\n    ca_file: /nonexistent/ca.pem\n"),
      ElementsAre(HasSubstr("store.tls.ca_file: \"/nonexistent/ca.pem\": "
                            "No such file or directory")));
  EXPECT_THAT(Errors(tls_store + "  tls:\n    cert_file: /etc/hostname\n"),
              ElementsAre(HasSubstr("store.tls.cert_file: given without "
                                    "store.tls.key_file")));
  EXPECT_THAT(Errors(tls_store + "  tls:\n    cafile: /etc/hostname\n"),
              ElementsAre(HasSubstr("unknown key \"cafile\" in store.tls (did "
                                    "you mean \"ca_file\"?)")));
  EXPECT_THAT(Errors(tls_store + "  tls:\n    ca_file: /etc\n"),
              ElementsAre(HasSubstr("not a regular file")));
  // The checks of an embedder's own options say the same.
  StoreOptions o;
  o.url = "redis://h:1";
  o.key_secret = kSecret;
  o.tls.ca_file = "/etc/ssl/ca.pem";
  EXPECT_THAT(std::string(ValidateStoreOptions(o).message()),
              HasSubstr("store.tls: given for a store URL without TLS"));
  o.url = "rediss://h:1";
  EXPECT_TRUE(ValidateStoreOptions(o).ok());
  o.tls.key_file = "/etc/ssl/k.pem";
  EXPECT_THAT(std::string(ValidateStoreOptions(o).message()),
              HasSubstr("store.tls.key_file: given without"));
}

TEST(StoreUrlTest, ParsesUnixForm) {
  absl::StatusOr<internal::StoreEndpoint> e =
      internal::ParseStoreUrl("unix:///run/redis.sock");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->unix_path, "/run/redis.sock");
  EXPECT_TRUE(e->host.empty());
  EXPECT_EQ(e->db, 0);
  e = internal::ParseStoreUrl("unix:///run/redis.sock?db=7");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->unix_path, "/run/redis.sock");
  EXPECT_EQ(e->db, 7);
}

// Issue #31: the store used to read a missing port as 6379, an empty
// database as 0, a lone password without ':' and took '%' in a password
// only as an escape, where validation said otherwise. One grammar now: each
// of these is refused by both, with the same message.
TEST(StoreUrlTest, ValidationAndStoreRefuseTheSameUrls) {
  for (const char* bad : {"",
                          "localhost:6379",
                          "http://h:1",
                          "rediss://h",
                          "rediss://[::1]",
                          "redis-sentinel://h:1",
                          "redis-sentinel://h:1/",
                          "redis-sentinel://h:1,/m",
                          "redis-sentinel://h:1/m/x",
                          "redis-sentinel://h:1/m!",
                          "redis://",
                          "redis://h",
                          "redis://10.0.0.5",
                          "redis://h:0",
                          "redis://h:65536",
                          "redis://h:port",
                          "redis://h:",
                          "redis://h:1/",
                          "redis://h:1/x",
                          "redis://h:1/-1",
                          "redis://[::1",
                          "redis://[::1]x",
                          "redis://[::1]",
                          "redis://user:@h:1",
                          "redis://onlypassword@h:1",
                          "redis://%zz:pw@h:1",
                          "redis://:pa%zz@h:1",
                          "redis://:pw%@h:1",
                          "unix://relative.sock",
                          "unix:///s.sock?db=x",
                          "unix:///s.sock?timeout=1"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<internal::StoreEndpoint> e = internal::ParseStoreUrl(bad);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.status().message()), StoreUrlProblem(bad));
    EXPECT_THAT(StoreUrlProblem(bad), HasSubstr("expected redis://HOST:PORT"));
  }
  EXPECT_THAT(StoreUrlProblem("redis://:pa%zz@h:1"),
              HasSubstr("must start a %XX escape"));
  EXPECT_THAT(StoreUrlProblem("redis://h"), HasSubstr("the port is missing"));
}

TEST(StoreUrlTest, MalformedUrlsNeverShowThePassword) {
  for (const std::string& url : testing::MalformedStoreUrls()) {
    absl::StatusOr<internal::StoreEndpoint> e = internal::ParseStoreUrl(url);
    ASSERT_FALSE(e.ok()) << url;
    EXPECT_THAT(std::string(e.status().message()),
                Not(HasSubstr(testing::kStoreUrlPassword)))
        << url;
  }
}

TEST(ConfigStoreTest, MissingAndConflictingKeys) {
  EXPECT_THAT(Errors("store:\n  key_secret: 0123456789abcdef\n"),
              ElementsAre("test.yaml:2:3: store: missing required key "
                          "\"url\""));
  EXPECT_THAT(Errors("store:\n  url: redis://h:1\n"),
              ElementsAre("test.yaml:2:3: store: missing required key "
                          "\"key_secret\" (or \"key_secret_file\")"));
  EXPECT_THAT(
      Errors("store:\n"),
      ElementsAre(HasSubstr("test.yaml:1:1: store: got nothing, expected a "
                            "map with keys url, key_secret")));
  EXPECT_THAT(Errors(Store("  key_secret: another-secret-0123\n")),
              ElementsAre(HasSubstr("duplicate key \"key_secret\" in store")));
  EXPECT_THAT(Errors("store:\n  url: redis://h:1\n  key_secret: "
                     "0123456789abcdef\n  key_secret_file: /etc/x\n"),
              ElementsAre("test.yaml:4:3: store.key_secret_file: key_secret "
                          "is also given (line 3); keep one of them"));
  EXPECT_THAT(
      Errors("store:\n  url: redis://h:1\n  key_secret: short\n"),
      ElementsAre(HasSubstr("test.yaml:3:15: store.key_secret: got 5 bytes, "
                            "expected at least 16")));
  EXPECT_THAT(Errors(Store("  timout: 5ms\n")),
              ElementsAre(HasSubstr("test.yaml:4:3: unknown key \"timout\" in "
                                    "store (did you mean \"timeout\"?)")));
}

TEST(ConfigStoreTest, BadValuesAreAllReportedInOnePass) {
  EXPECT_THAT(
      Errors(Store(R"(  timeout: 5
  sync_interval: 500us
  fallback_share: 0
  connections: 5
  clock: calller
  max_in_flight: 0
  local_denial: yes
)")),
      ElementsAre(
          "test.yaml:4:12: store.timeout: got 5, expected a duration from "
          "100us to 10s, such as 5ms (a duration needs a unit: us, ms or s)",
          "test.yaml:5:18: store.sync_interval: got 500us, expected a whole "
          "number of milliseconds from 1ms to 60s, such as 50ms",
          "test.yaml:6:19: store.fallback_share: got 0, expected a number "
          "above 0 and at most 1, e.g. 0.25 for 4 processes",
          "test.yaml:7:16: store.connections: got 5, expected an integer "
          "from 1 to 4",
          "test.yaml:8:10: store.clock: got calller, expected store or caller "
          "(did you mean \"caller\"?)",
          "test.yaml:9:18: store.max_in_flight: got 0, expected an integer "
          "from 1 to 1000000",
          "test.yaml:10:17: store.local_denial: got yes, expected true or "
          "false"));
}

TEST(ConfigStoreTest, DurationBounds) {
  auto timeout = [](std::string_view text) {
    absl::StatusOr<LimiterConfig> config = ParseConfig(
        Store("  timeout: " + std::string(text) + "\n"), "test.yaml");
    return config.ok() ? config->store.timeout.count() : -1;
  };
  EXPECT_EQ(timeout("100us"), 100);
  EXPECT_EQ(timeout("10s"), 10'000'000);
  EXPECT_EQ(timeout("5ms"), 5000);
  EXPECT_EQ(timeout("99us"), -1);
  EXPECT_EQ(timeout("11s"), -1);
  EXPECT_EQ(timeout("1.5ms"), -1);
  EXPECT_EQ(timeout("-5ms"), -1);
  EXPECT_EQ(timeout("5 ms"), -1);
  EXPECT_EQ(timeout("5m"), -1);
  EXPECT_EQ(timeout("99999999999999999999s"), -1);
}

TEST(ConfigStoreTest, FallbackShareBounds) {
  auto share = [](std::string_view text) {
    absl::StatusOr<LimiterConfig> config = ParseConfig(
        Store("  fallback_share: " + std::string(text) + "\n"), "test.yaml");
    return config.ok() ? config->store.fallback_share : -1.0;
  };
  EXPECT_DOUBLE_EQ(share("1"), 1.0);
  EXPECT_DOUBLE_EQ(share("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(share("1.5"), -1.0);
  EXPECT_DOUBLE_EQ(share("\"0.5\""), -1.0);
  EXPECT_DOUBLE_EQ(share("nan"), -1.0);
  EXPECT_DOUBLE_EQ(share("1e-1"), -1.0);
}

TEST(ConfigStoreTest, KeySecretFileIsReadBesideTheConfig) {
  TempDir dir;
  dir.Write("store.secret", std::string(kSecret) + "\n");
  const std::string config_path =
      dir.Write("mxlimit.yaml",
                "store:\n  url: redis://127.0.0.1:6379/0\n"
                "  key_secret_file: store.secret\n");
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  // One trailing newline dropped, nothing else.
  EXPECT_EQ(config->store.key_secret, kSecret);

  dir.Write("two.secret", std::string(kSecret) + "\n\n");
  absl::StatusOr<LimiterConfig> absolute = ParseConfig(
      "store:\n  url: redis://h:1\n  key_secret_file: " + dir.path() +
          "/two.secret\n",
      "elsewhere.yaml");
  ASSERT_TRUE(absolute.ok()) << absolute.status();
  EXPECT_EQ(absolute->store.key_secret, std::string(kSecret) + "\n");
}

TEST(ConfigStoreTest, KeySecretFileErrors) {
  TempDir dir;
  dir.Write("short.secret", "tiny\n");
  const std::string yaml_head =
      "store:\n  url: redis://h:1\n  key_secret_file: ";
  EXPECT_THAT(Errors(yaml_head + dir.path() + "/short.secret\n"),
              ElementsAre(HasSubstr("test.yaml:3:20: store.key_secret_file: "
                                    "got 4 bytes, expected at least 16")));
  EXPECT_THAT(Errors(yaml_head + dir.path() + "/missing\n"),
              ElementsAre(HasSubstr("/missing\": cannot open: No such file or "
                                    "directory")));
  EXPECT_THAT(Errors(yaml_head + dir.path() + "\n"),
              ElementsAre(HasSubstr(": is not a regular file")));
  dir.Write("big.secret", std::string(5000, 'x'));
  EXPECT_THAT(Errors(yaml_head + dir.path() + "/big.secret\n"),
              ElementsAre(HasSubstr("is over 4096 bytes")));
}

TEST(ConfigStoreTest, SharingErrors) {
  EXPECT_THAT(
      Errors("policies:\n  - name: a\n    match: /a\n    unlimited: true\n"
             "    sharing: aproximate\n"),
      ElementsAre("test.yaml:5:14: policies[0].sharing: got aproximate, "
                  "expected exact, approximate or local (did you mean "
                  "\"approximate\"?)"));
  EXPECT_THAT(
      Errors("policies:\n  - name: a\n    match: /a\n    unlimited: true\n"
             "    sharing: [exact]\n"),
      ElementsAre(HasSubstr("test.yaml:5:14: policies[0].sharing: got a "
                            "list, expected exact, approximate or local")));
}

TEST(ConfigStoreTest, Warnings) {
  EXPECT_THAT(StoreWarnings(Store("")), IsEmpty());
  EXPECT_THAT(StoreWarnings(Store("  clock: caller\n")),
              ElementsAre(HasSubstr("test.yaml:4:10: warning: store.clock: "
                                    "caller: every process times")));
  const std::string approximate =
      "policies:\n  - name: a\n    match: /a\n    sharing: approximate\n"
      "    rate_limit: {unit: second, requests_per_unit: 1, burst: ";
  EXPECT_THAT(
      StoreWarnings(approximate + "9}\n"),
      ElementsAre(HasSubstr(
          "test.yaml:4:14: warning: policies[0].sharing: approximate on a "
          "policy with burst 9:")));
  EXPECT_THAT(StoreWarnings(approximate + "9}\n")[0],
              HasSubstr("see docs/shared-state.md"));
  EXPECT_THAT(StoreWarnings(approximate + "10}\n"), IsEmpty());
}

TEST(ConfigStoreTest, ExampleFilesStillLoad) {
  for (const char* path :
       {MXLIMIT_SOURCE_DIR "/examples/mxlimit.yaml",
        MXLIMIT_SOURCE_DIR "/examples/http_gateway/gateway_test.yaml"}) {
    absl::StatusOr<LimiterConfig> config = LoadConfigFile(path);
    ASSERT_TRUE(config.ok()) << path << ": " << config.status().message();
    EXPECT_TRUE(config->store.url.empty()) << path;
  }
}

}  // namespace
}  // namespace mxlimit
