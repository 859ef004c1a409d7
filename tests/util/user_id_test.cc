#include "mxlimit/user_id.h"

#include <cstddef>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/hex.h"
#include "mxlimit/ip.h"
#include "mxlimit/limiter.h"
#include "src/engine/bucket_keys.h"
#include "tests/testing/limiter_fixtures.h"

namespace mxlimit {
namespace {

using ::testing::HasSubstr;
using Defect = internal::UserIdDefect;

// The one hex-digit rule (internal/hex.h) that every escape and hex reader
// calls: both cases, and nothing else, for every byte.
TEST(HexDigitValueTest, EveryByte) {
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    int want = -1;
    if (b >= '0' && b <= '9') want = b - '0';
    if (b >= 'a' && b <= 'f') want = b - 'a' + 10;
    if (b >= 'A' && b <= 'F') want = b - 'A' + 10;
    EXPECT_EQ(internal::HexDigitValue(c), want) << b;
    EXPECT_EQ(internal::IsAsciiHexDigit(c), want >= 0) << b;
  }
  static_assert(internal::HexDigitValue('f') == 15);
}

// The rule at compile time.
static_assert(IsWellFormedUserId("@a:b"));
static_assert(!IsWellFormedUserId("@alice:example.org:0"));
static_assert(!IsWellFormedUserId(""));

// The `Example:` block of user_id.h, verbatim.
TEST(UserIdTest, HeaderExample) {
  static_assert(mxlimit::IsWellFormedUserId("@alice:example.org"));
  static_assert(mxlimit::IsWellFormedUserId("@bot=1:[2001:db8::1]:8448"));
  static_assert(!mxlimit::IsWellFormedUserId("@j\xC3\xBCrgen:example.org"));
  std::string why = mxlimit::UserIdProblem("@alice");
  // why == "no ':server' part"
  EXPECT_EQ(why, "no ':server' part");
}

// Valid under the rule: current and historical localparts, every hostname
// form, ports at both ends of the range.
const std::vector<std::string>& ValidIds() {
  static const auto* ids = new std::vector<std::string>{
      "@alice:example.org",
      "@a:b",
      "@Alice:Example.ORG",  // case is kept, not refused
      "@_discord_1234567890:t2bot.io",
      "@user.name=+/-_:matrix.example.com",
      "@!\"#$%&'()*+,-./;<=>?@[\\]^_`{|}~:example.org",  // historical bytes
      "@bob:example.org:8448",
      "@bob:example.org:1",
      "@bob:example.org:65535",
      "@bob:example.org:08448",  // port = 1*5DIGIT
      "@carol:192.0.2.1",
      "@carol:192.0.2.1:8448",
      "@carol:[2001:db8::1]",
      "@carol:[2001:db8::1]:8448",
      "@carol:[::1]",
      "@carol:[::]",
      "@carol:[::ffff:192.0.2.1]:443",
      "@carol:[1:2:3:4:5:6:7:8]",
      "@carol:[1:2:3:4:5:6::]",
      "@carol:[1:2:3:4:5:6:192.0.2.1]",
      "@carol:[FE80::AbCd]",
      "@dave:localhost",
      "@" + std::string(250, 'x') + ":a.b",  // 255 bytes
  };
  return *ids;
}

struct Rejection {
  std::string id;
  Defect defect;
  std::string message;  // a substring of UserIdProblem(id)
};

// One or more inputs per rejection.
const std::vector<Rejection>& Rejections() {
  static const auto* rejections = new std::vector<Rejection>{
      {"", Defect::kNoSigil, "no leading '@'"},
      {"alice:example.org", Defect::kNoSigil, "no leading '@'"},
      {"!room:example.org", Defect::kNoSigil, "no leading '@'"},
      {" @alice:example.org", Defect::kNoSigil, "no leading '@'"},
      {"@" + std::string(251, 'x') + ":a.b", Defect::kTooLong,
       "longer than 255 bytes (256 bytes)"},
      {"@", Defect::kNoColon, "no ':server' part"},
      {"@alice", Defect::kNoColon, "no ':server' part"},
      {"@:example.org", Defect::kEmptyLocalpart, "empty localpart"},
      {"@al ice:example.org", Defect::kLocalpartByte,
       "printable ASCII without spaces (0x21-0x7E), not byte 0x20 at offset "
       "3"},
      {std::string("@al\0ce:x.org", 12), Defect::kLocalpartByte,
       "byte 0x00 at offset 3"},
      {"@alice\x7f:example.org", Defect::kLocalpartByte,
       "byte 0x7F at offset 6"},
      {"@j\xC3\xBCrgen:example.org", Defect::kLocalpartByte,
       "byte 0xC3 at offset 2"},
      {"@alice\t:example.org", Defect::kLocalpartByte, "byte 0x09"},
      {"@alice:", Defect::kEmptyServer, "empty server name after ':'"},
      {"@alice::8448", Defect::kEmptyHost, "empty server name before ':port'"},
      {"@alice:exa_mple.org", Defect::kHostByte,
       "letters, digits, '.' and '-', not '_' (byte 0x5F) at offset 10"},
      {"@alice:example.org\n", Defect::kHostByte, "byte 0x0A at offset 18"},
      {"@alice:ex\xC3\xA4mple.org", Defect::kHostByte, "byte 0xC3"},
      {"@alice:example.org ", Defect::kHostByte, "byte 0x20"},
      {"@alice:exa mple.org", Defect::kHostByte, "byte 0x20"},
      {"@alice:example.org/x", Defect::kHostByte, "'/'"},
      {"@alice:[::1", Defect::kUnclosedBracket, "'[' without ']'"},
      {"@alice:[]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[1.2.3.4]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[example.org]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[fe80::1%eth0]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[1:2:3:4:5:6:7:8:9]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[1::2::3]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[12345::]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[::ffff:192.0.2.01]", Defect::kNotIpv6, "not an IPv6 address"},
      {"@alice:[::1]x", Defect::kTextAfterBracket,
       "unexpected text after ']': 'x' (byte 0x78) at offset 12"},
      {"@alice:[::1]]", Defect::kTextAfterBracket, "unexpected text"},
      {"@alice:example.org:", Defect::kEmptyPort, "empty port after ':'"},
      {"@alice:[::1]:", Defect::kEmptyPort, "empty port after ':'"},
      {"@alice:example.org:0", Defect::kBadPort,
       "the port is not a number from 1 to 65535: \"0\""},
      {"@alice:example.org:65536", Defect::kBadPort, "\"65536\""},
      {"@alice:example.org:99999", Defect::kBadPort, "1 to 65535"},
      {"@alice:example.org:123456", Defect::kBadPort, "1 to 65535"},
      {"@alice:example.org:+80", Defect::kBadPort, "1 to 65535"},
      {"@alice:example.org:8448:1", Defect::kBadPort, "\"8448:1\""},
      {"@alice:[::1]:http", Defect::kBadPort, "\"http\""},
      {"@alice:example.org:80\x1b[31m", Defect::kBadPort,
       "\"80\\x1b[31m\""},  // quoted escaped, never raw
  };
  return *rejections;
}

TEST(UserIdTest, AcceptsValidIds) {
  for (const std::string& id : ValidIds()) {
    EXPECT_TRUE(IsWellFormedUserId(id)) << id;
    EXPECT_EQ(UserIdProblem(id), "") << id;
  }
}

TEST(UserIdTest, NamesEachRejection) {
  for (const Rejection& r : Rejections()) {
    SCOPED_TRACE(r.id);
    EXPECT_FALSE(IsWellFormedUserId(r.id));
    EXPECT_EQ(internal::CheckUserId(r.id).defect, r.defect);
    EXPECT_THAT(UserIdProblem(r.id), HasSubstr(r.message));
  }
}

// A problem is one printable line of bounded size whatever the ID holds: a
// phrase, plus at most 64 quoted bytes escaped ("\xff": 4 characters each).
void ExpectSafeMessage(std::string_view id) {
  const std::string problem = UserIdProblem(id);
  EXPECT_LE(problem.size(), 120u + 4 * 64);
  for (char c : problem) {
    const auto u = static_cast<unsigned char>(c);
    ASSERT_TRUE(u >= 0x20 && u < 0x7F) << "raw byte in: " << problem;
  }
}

TEST(UserIdTest, RejectsA64KiBIdWithAShortMessage) {
  const std::string huge = "@" + std::string(64 * 1024, 'a') + ":example.org";
  EXPECT_FALSE(IsWellFormedUserId(huge));
  EXPECT_EQ(UserIdProblem(huge), "longer than 255 bytes (65549 bytes)");
  ExpectSafeMessage(huge);
  // Hostile bytes throughout, and no sigil: still one short line.
  std::string junk(64 * 1024, '\x1b');
  EXPECT_EQ(UserIdProblem(junk), "no leading '@'");
  junk[0] = '@';
  EXPECT_THAT(UserIdProblem(junk), HasSubstr("longer than 255 bytes"));
  // A long bad port is quoted cut to 64 bytes.
  const std::string long_port = "@a:b:" + std::string(200, '\xFF');
  EXPECT_THAT(UserIdProblem(long_port), HasSubstr("(200 bytes)"));
  ExpectSafeMessage(long_port);
}

TEST(UserIdTest, MessagesNeverHoldRawBytes) {
  for (const Rejection& r : Rejections()) ExpectSafeMessage(r.id);
}

// Builds IDs that are mostly almost valid: a sigil, a localpart, a colon and
// a server name assembled from pieces, then mutated.
std::string RandomId(std::mt19937_64& rng) {
  static constexpr std::string_view kLocalparts[] = {
      "alice",         "a",   "",     "_bridge_123", "x=y/z",
      "j\xC3\xBCrgen", "a b", "!#$%", "a\x7f"};
  static constexpr std::string_view kHosts[] = {"example.org",
                                                "b",
                                                "",
                                                "192.0.2.1",
                                                "[::1]",
                                                "[::]",
                                                "[1:2:3:4:5:6:7:8]",
                                                "[1:2:3:4:5:6:7:8:9]",
                                                "[::ffff:1.2.3.4]",
                                                "[1.2.3.4]",
                                                "[::1",
                                                "exa_mple",
                                                "ex\xC3\xA4mple",
                                                "[fe80::1%eth0]",
                                                "[1::2::3]",
                                                "a-b.c-d"};
  static constexpr std::string_view kPorts[] = {
      "",   ":",      ":1",      ":8448", ":65535", ":65536",
      ":0", ":00080", ":123456", ":http", ":80:81"};
  static constexpr char kBytes[] = {'@',    ':',    '[',    ']', '.', '-',
                                    '0',    '9',    'a',    'Z', ' ', '\0',
                                    '\x7f', '\x80', '\xff', '%', '_', '\n'};
  auto pick = [&rng](const auto& list) {
    return list[rng() % std::size(list)];
  };
  std::string id;
  if (rng() % 8 != 0) id += '@';
  id += pick(kLocalparts);
  if (rng() % 8 != 0) id += ':';
  id += pick(kHosts);
  id += pick(kPorts);
  const int mutations = static_cast<int>(rng() % 4);
  for (int i = 0; i < mutations && !id.empty(); ++i) {
    const size_t at = rng() % id.size();
    switch (rng() % 3) {
      case 0:
        id[at] = pick(kBytes);
        break;
      case 1:
        id.insert(id.begin() + static_cast<std::ptrdiff_t>(at), pick(kBytes));
        break;
      default:
        id.erase(at, 1);
    }
  }
  if (rng() % 32 == 0) id.insert(1, 250, 'x');  // around the length limit
  return id;
}

// The property that makes this one rule: both entry points, and the
// limiter's word-at-a-time check for inline keys, give the same answer.
void ExpectAgreement(std::string_view id) {
  static constexpr internal::SipKey kSecret{1, 2};
  const bool ok = IsWellFormedUserId(id);
  ASSERT_EQ(ok, UserIdProblem(id).empty()) << internal::CheckUserId(id).offset;
  ASSERT_EQ(ok, internal::UserBucketKey::Make(id, 0, 0, kSecret).kind() !=
                    internal::UserBucketKey::Kind::kOverflow);
}

TEST(UserIdTest, BothEntryPointsAgreeOnTheCorpus) {
  for (const std::string& id : ValidIds()) ExpectAgreement(id);
  for (const Rejection& r : Rejections()) ExpectAgreement(r.id);
}

TEST(UserIdTest, BothEntryPointsAgreeOnRandomIds) {
  std::mt19937_64 rng(19);
  int valid = 0;
  for (int round = 0; round < 200'000; ++round) {
    const std::string id = RandomId(rng);
    SCOPED_TRACE(id);
    ExpectAgreement(id);
    if (HasFatalFailure()) return;
    valid += IsWellFormedUserId(id);
  }
  // Both answers came up often.
  EXPECT_GT(valid, 10'000);
  EXPECT_LT(valid, 190'000);
}

// The bracketed form accepts exactly what the address parser reads as IPv6
// (without zone): checked on mutations of valid addresses.
TEST(UserIdTest, BracketedHostAgreesWithParseIpAddress) {
  static constexpr std::string_view kSeeds[] = {"::",
                                                "::1",
                                                "1::",
                                                "2001:db8::1",
                                                "1:2:3:4:5:6:7:8",
                                                "1:2:3:4:5:6:7::",
                                                "::2:3:4:5:6:7:8",
                                                "::ffff:192.0.2.1",
                                                "64:ff9b::192.0.2.1",
                                                "1:2:3:4:5:6:1.2.3.4",
                                                "abcd:EF01::0:0"};
  static constexpr char kBytes[] = {':', '.', '0', '1', '9', 'a',
                                    'f', 'F', 'g', '2', '5'};
  std::mt19937_64 rng(6);
  int valid = 0;
  for (int round = 0; round < 100'000; ++round) {
    std::string text(kSeeds[rng() % std::size(kSeeds)]);
    const int mutations = static_cast<int>(rng() % 3);
    for (int i = 0; i < mutations; ++i) {
      const size_t at = rng() % (text.size() + 1);
      const char c = kBytes[rng() % sizeof kBytes];
      if (rng() % 2 == 0 || at == text.size()) {
        text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
      } else if (rng() % 2 == 0) {
        text[at] = c;
      } else {
        text.erase(at, 1);
      }
    }
    const bool parses =
        text.find(':') != std::string::npos && ParseIpAddress(text).ok();
    ASSERT_EQ(internal::IsIpv6Text(text), parses) << text;
    ASSERT_EQ(IsWellFormedUserId("@u:[" + text + "]"), parses) << text;
    valid += parses;
  }
  EXPECT_GT(valid, 10'000);
}

// The loader refuses a non-ASCII ID as an exempt user; the limiter, given the
// same ID in a request, treats it as malformed too: its per-user buckets are
// the shared overflow bucket, not a bucket of its own.
TEST(UserIdTest, LimiterTreatsIdsTheLoaderRefusesAsMalformed) {
  const std::string jurgen = "@j\xC3\xBCrgen:example.org";
  const std::string jorg = "@j\xC3\xB6rg:example.org";
  absl::StatusOr<LimiterConfig> refused =
      ParseConfig("exempt:\n  users: [\"" + jurgen + "\"]\n", "test.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("the localpart may hold only printable ASCII"));

  absl::StatusOr<std::unique_ptr<Limiter>> limiter =
      Limiter::Create(LimiterConfig{});
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  auto send = [&](std::string_view user, std::string_view ip, int txn) {
    const std::string target =
        "/_matrix/client/v3/rooms/!r%3Aexample.org/send/m.room.message/t" +
        std::to_string(txn);
    return (*limiter)->Check(testing::MakeRequest("PUT", target, ip, user),
                             testing::At(0));
  };
  // message-send: a burst of 10 per user. Jürgen spends the whole burst
  // (each user from its own address, so no per-IP policy interferes).
  int allowed = 0;
  for (int i = 0; i < 20; ++i) allowed += send(jurgen, "192.0.2.1", i).allowed;
  ASSERT_GT(allowed, 0);
  ASSERT_LT(allowed, 20);
  // Jörg's ID is malformed the same way: the same (now empty) bucket.
  const Decision d = send(jorg, "192.0.2.2", 100);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.limited_by, LimitScope::kUser);
  EXPECT_EQ(d.policy, "message-send");
  // A well-formed user has a bucket of its own.
  EXPECT_TRUE(send("@alice:example.org", "192.0.2.3", 200).allowed);
}

}  // namespace
}  // namespace mxlimit
