// The YAML loader and `ValidatePolicies` (hence `PolicySet::Compile`) apply
// one set of policy rules: for every name, pattern, method and
// share_threshold value below, and for random values from an alphabet rich in
// the bytes the rules care about, a file accepts exactly what the core
// accepts, its error carries the core's wording, and a file that loads
// compiles.

#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy.h"
#include "mxlimit/policy_set.h"

namespace mxlimit {
namespace {

using ::testing::HasSubstr;

// `text` as a YAML double-quoted scalar: every byte comes back unchanged.
std::string YamlQuoted(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// One operator policy, valid except for what a case sets.
struct Candidate {
  std::string name = "p";
  std::string match = "/x/*";
  std::vector<std::string> methods;
  bool share_threshold = false;
};

std::string Yaml(const std::vector<Candidate>& policies) {
  std::string yaml = "policies:\n";
  for (const Candidate& c : policies) {
    yaml += "  - name: " + YamlQuoted(c.name) + "\n";
    yaml += "    match: " + YamlQuoted(c.match) + "\n";
    if (!c.methods.empty()) {
      yaml += "    methods: [";
      for (size_t i = 0; i < c.methods.size(); ++i) {
        yaml += (i > 0 ? ", " : "") + YamlQuoted(c.methods[i]);
      }
      yaml += "]\n";
    }
    if (c.share_threshold) yaml += "    share_threshold: true\n";
    yaml += "    unlimited: true\n";
  }
  return yaml;
}

std::vector<Policy> InCode(const std::vector<Candidate>& policies) {
  std::vector<Policy> out;
  for (const Candidate& c : policies) {
    Policy p;
    p.name = c.name;
    p.match = {c.match};
    p.methods = c.methods;
    p.share_threshold = c.share_threshold;
    out.push_back(std::move(p));
  }
  return out;
}

// Loads `policies` both ways and checks that the two agree. Returns whether
// they were accepted. `problem`, when given, is the core's wording of the one
// expected error, which the file's error must carry.
bool Agree(const std::vector<Candidate>& policies,
           std::optional<std::string> problem = std::nullopt) {
  const std::string yaml = Yaml(policies);
  SCOPED_TRACE(yaml);
  const absl::StatusOr<LimiterConfig> loaded = ParseConfig(yaml, "test.yaml");
  const std::vector<PolicyError> errors = ValidatePolicies(InCode(policies));
  const absl::StatusOr<PolicySet> compiled =
      PolicySet::Compile(InCode(policies), false, {});

  EXPECT_EQ(loaded.ok(), errors.empty())
      << (loaded.ok() ? errors.front().message
                      : std::string(loaded.status().message()));
  EXPECT_EQ(compiled.ok(), errors.empty());
  if (loaded.ok()) {
    // What the loader hands on compiles, with and without the built-ins.
    for (bool builtins : {false, true}) {
      absl::StatusOr<PolicySet> set =
          PolicySet::Compile(loaded->policies, builtins, {});
      EXPECT_TRUE(set.ok()) << set.status();
    }
  } else if (problem.has_value() && !problem->empty()) {
    EXPECT_THAT(loaded.status().message(), HasSubstr(*problem));
    for (const PolicyError& e : errors) {
      EXPECT_THAT(e.message, HasSubstr(*problem));
    }
  }
  return loaded.ok();
}

const std::string kLongest(kMaxPolicyNameBytes, 'n');

TEST(PolicyRulesAgreementTest, Names) {
  struct Case {
    std::string name;
    bool valid;
  } cases[] = {
      {"a", true},
      {"login-per-ip", true},
      {"Media.v1_download:x-2", true},
      {"0", true},
      {kLongest, true},
      {"", false},
      {kLongest + "n", false},
      {std::string(64 * 1024, 'n'), false},
      {"my policy", false},
      {"a/b", false},
      {"tab\there", false},
      {"quote\"d", false},
      {"comma,", false},
      {"na\xc3\xafve", false},  // UTF-8 "naive" with a diaeresis.
      {"\x7f", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name.substr(0, 40));
    Candidate p;
    p.name = c.name;
    EXPECT_EQ(PolicyNameProblem(c.name).empty(), c.valid);
    EXPECT_EQ(Agree({p}, PolicyNameProblem(c.name)), c.valid);
  }
}

TEST(PolicyRulesAgreementTest, DuplicateNames) {
  Candidate a;
  a.name = "a";
  Candidate b = a;
  EXPECT_FALSE(Agree({a, b}));
  b.name = "A";  // Names are case-sensitive.
  EXPECT_TRUE(Agree({a, b}));
}

TEST(PolicyRulesAgreementTest, Patterns) {
  struct Case {
    std::string match;
    bool valid;
  } cases[] = {
      {"/", true},
      {"*", true},
      {"**", true},
      {"<fallback>", true},
      {"*/keys/*", true},
      {"/_matrix/client/v3/keys/*", true},
      {"/_matrix/client/v3/rooms/{roomId}/send/*", true},
      {"/_matrix/client/v3/rooms/!a:example.org/send/m.room.message/42", true},
      {"/m\xc3\xa4rz", true},  // UTF-8 bytes are path bytes.
      {"/" + std::string(kMaxPatternBytes - 1, 'a'), true},
      {"/" + std::string(kMaxPatternBytes, 'a'), false},
      {"", false},
      {"_matrix/*", false},
      {"<fallback>x", false},
      {"<fallback", false},
      {"fallback", false},
      {"/a b", false},
      {" /a", false},
      {"/a\tb", false},
      {"/a\x7f", false},
      {"/a\r", false},
      {"/a?b=1", false},
      {"/a#frag", false},
      {"*?", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.match.substr(0, 40));
    Candidate p;
    p.match = c.match;
    EXPECT_EQ(PatternProblem(c.match).empty(), c.valid);
    EXPECT_EQ(Agree({p}, PatternProblem(c.match)), c.valid);
  }
}

TEST(PolicyRulesAgreementTest, Methods) {
  std::vector<std::pair<std::string, bool>> cases;
  for (std::string_view m : internal::kMethodNames) {
    cases.emplace_back(std::string(m), true);
    cases.emplace_back(absl::AsciiStrToLower(std::string(m)), true);
  }
  for (const char* m : {"Post", "pAtCh"}) cases.emplace_back(m, true);
  for (const char* m : {"", "FETCH", "BREW", "PROPFIND", "GETS", "GET ", " GET",
                        "G ET", "G\xc3\x89T", "POST,PUT"}) {
    cases.emplace_back(m, false);
  }
  for (const auto& [method, valid] : cases) {
    SCOPED_TRACE(method);
    Candidate p;
    p.methods = {method};
    EXPECT_EQ(MethodProblem(method).empty(), valid);
    EXPECT_EQ(Agree({p}, MethodProblem(method)), valid);
  }
}

TEST(PolicyRulesAgreementTest, MethodsAreStoredUpperCaseBothWays) {
  Candidate p;
  p.methods = {"get", "Post"};
  absl::StatusOr<LimiterConfig> loaded = ParseConfig(Yaml({p}), "test.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<PolicySet> in_code =
      PolicySet::Compile(InCode({p}), false, {});
  ASSERT_TRUE(in_code.ok()) << in_code.status();
  EXPECT_THAT(loaded->policies[0].methods,
              ::testing::ElementsAre("GET", "POST"));
  EXPECT_EQ(in_code->policy(0).methods, loaded->policies[0].methods);
}

TEST(PolicyRulesAgreementTest, ShareThreshold) {
  struct Case {
    std::string match;
    bool valid;
  } cases[] = {
      {"/a/*", true},
      {"*", true},
      {"/_matrix/client/*/requestToken", true},
      {"/a", false},
      {"<fallback>", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.match);
    Candidate p;
    p.match = c.match;
    p.share_threshold = true;
    const std::vector<std::string> one = {c.match};
    EXPECT_EQ(ShareThresholdProblem(one).empty(), c.valid);
    EXPECT_EQ(Agree({p}, ShareThresholdProblem(one)), c.valid);
    p.share_threshold = false;  // Harmless on any valid pattern.
    EXPECT_TRUE(Agree({p}));
  }
}

// Random values over the bytes the rules turn on, so a rule added to one side
// only shows up here even if no case above thought of it.
TEST(PolicyRulesAgreementTest, RandomValues) {
  // ASCII only: single bytes of a UTF-8 sequence are not valid YAML text.
  constexpr std::string_view kAlphabet = "/*aZ9._:-<>?# \t\x7f{}!,\"\\";
  std::mt19937 rng(20240611);
  auto random_text = [&](size_t max_len) {
    std::string s(std::uniform_int_distribution<size_t>(0, max_len)(rng), ' ');
    for (char& c : s) {
      c = kAlphabet[std::uniform_int_distribution<size_t>(
          0, kAlphabet.size() - 1)(rng)];
    }
    return s;
  };
  int accepted = 0;
  for (int i = 0; i < 600; ++i) {
    Candidate p;
    switch (i % 3) {
      case 0:
        p.name = random_text(8);
        break;
      case 1:
        p.match = {random_text(10)};
        p.share_threshold = i % 2 == 0;
        break;
      case 2:
        p.methods = {random_text(3)};
        if (i % 5 == 0)
          p.methods[0] = std::string(internal::kMethodNames[i % 9]);
        break;
    }
    accepted += Agree({p});
  }
  // Both outcomes were exercised.
  EXPECT_GT(accepted, 50);
  EXPECT_LT(accepted, 550);
}

}  // namespace
}  // namespace mxlimit
