#include "src/engine/bucket_keys.h"

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/hash/hash_testing.h"
#include "gtest/gtest.h"
#include "src/engine/bucket_table.h"
#include "src/util/siphash.h"

namespace mxlimit::internal {
namespace {

using Kind = UserBucketKey::Kind;

constexpr SipKey kSecret{0x0123456789abcdefULL, 0xfedcba9876543210ULL};

IpAddress Addr(std::initializer_list<uint8_t> head) {
  IpAddress a;
  size_t i = 0;
  for (uint8_t b : head) a.bytes[i++] = b;
  return a;
}

TEST(IpBucketKeyTest, EqualOnlyWhenAddressPolicyAndRouteAllMatch) {
  const IpAddress a = Addr({0x20, 0x01, 0x0d, 0xb8});
  const IpAddress b = Addr({0x20, 0x01, 0x0d, 0xb9});
  const IpBucketKey k = IpBucketKey::Make(a, 1, 2);
  EXPECT_EQ(k, IpBucketKey::Make(a, 1, 2));
  EXPECT_NE(k, IpBucketKey::Make(b, 1, 2));
  EXPECT_NE(k, IpBucketKey::Make(a, 2, 2));
  EXPECT_NE(k, IpBucketKey::Make(a, 1, 3));
  EXPECT_NE(k, IpBucketKey::Make(a, 2, 1));  // Fields do not swap.
  EXPECT_EQ(k.address, a.bytes);
}

TEST(IpBucketKeyTest, HashIsConsistentWithEquality) {
  std::vector<IpBucketKey> keys;
  for (uint8_t x : {0, 1, 255}) {
    for (PolicyId p : {0, 1, 0xFFFF}) {
      for (RouteId r : {RouteId{0}, RouteId{7}, kSharedBucketRoute}) {
        IpAddress a = Addr({0x20, 0x01});
        a.bytes[15] = x;
        keys.push_back(IpBucketKey::Make(a, p, r));
      }
    }
  }
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(keys));
}

TEST(UserIdShapeTest, AcceptsMatrixUserIds) {
  EXPECT_TRUE(IsWellFormedUserId("@alice:example.org"));
  EXPECT_TRUE(IsWellFormedUserId("@a:b"));
  EXPECT_TRUE(IsWellFormedUserId("@bob:example.org:8448"));
  EXPECT_TRUE(IsWellFormedUserId("@carol:[2001:db8::1]:8448"));
  EXPECT_TRUE(IsWellFormedUserId("@_discord_1234567890:t2bot.io"));
  EXPECT_TRUE(IsWellFormedUserId("@" + std::string(250, 'x') + ":a.b"));
}

TEST(UserIdShapeTest, RejectsMalformedIds) {
  EXPECT_FALSE(IsWellFormedUserId(""));
  EXPECT_FALSE(IsWellFormedUserId("@"));
  EXPECT_FALSE(IsWellFormedUserId("alice:example.org"));    // No sigil.
  EXPECT_FALSE(IsWellFormedUserId("!room:example.org"));    // Wrong sigil.
  EXPECT_FALSE(IsWellFormedUserId("@alice"));               // No server.
  EXPECT_FALSE(IsWellFormedUserId("@:example.org"));        // No localpart.
  EXPECT_FALSE(IsWellFormedUserId("@alice:"));              // Empty server.
  EXPECT_FALSE(IsWellFormedUserId("@al ice:example.org"));  // Space.
  EXPECT_FALSE(IsWellFormedUserId(std::string("@al\0ce:x.org", 12)));
  EXPECT_FALSE(IsWellFormedUserId("@alice:example.org\n"));
  EXPECT_FALSE(IsWellFormedUserId("@alice\x7f:example.org"));
  // 256 bytes: one over the spec's limit.
  EXPECT_FALSE(IsWellFormedUserId("@" + std::string(251, 'x') + ":a.b"));
}

TEST(UserBucketKeyTest, ShortIdsAreStoredVerbatim) {
  const UserBucketKey k =
      UserBucketKey::Make("@alice:example.org", 3, 4, kSecret);
  EXPECT_EQ(k.kind(), Kind::kInline);
  EXPECT_EQ(k.inline_user_id(), "@alice:example.org");
  EXPECT_EQ(k.policy(), 3);
  EXPECT_EQ(k.route(), 4);
  // The identity is exact, so the secret plays no part.
  EXPECT_EQ(k, UserBucketKey::Make("@alice:example.org", 3, 4, SipKey{}));
  EXPECT_NE(k, UserBucketKey::Make("@alice:example.com", 3, 4, kSecret));
  EXPECT_NE(k, UserBucketKey::Make("@alice:example.org", 3, 5, kSecret));
  EXPECT_NE(k, UserBucketKey::Make("@alice:example.org", 2, 4, kSecret));
}

TEST(UserBucketKeyTest, InlineBoundaryIsFortyBytes) {
  const std::string id40 = "@" + std::string(34, 'a') + ":x.io";
  const std::string id41 = "@" + std::string(35, 'a') + ":x.io";
  ASSERT_EQ(id40.size(), 40u);
  EXPECT_EQ(UserBucketKey::Make(id40, 0, 0, kSecret).kind(), Kind::kInline);
  EXPECT_EQ(UserBucketKey::Make(id41, 0, 0, kSecret).kind(), Kind::kDigest);
  // A prefix of a stored ID is another user.
  EXPECT_NE(UserBucketKey::Make(id40, 0, 0, kSecret),
            UserBucketKey::Make(id40.substr(0, 39), 0, 0, kSecret));
}

TEST(UserBucketKeyTest, LongIdsAreDistinguishedByKeyedDigest) {
  const std::string base = "@" + std::string(200, 'b') + ":example.org";
  std::string other = base;
  other[100] = 'c';  // Differs in one middle byte.
  const UserBucketKey a = UserBucketKey::Make(base, 1, 1, kSecret);
  EXPECT_EQ(a.kind(), Kind::kDigest);
  EXPECT_TRUE(a.inline_user_id().empty());
  EXPECT_EQ(a, UserBucketKey::Make(base, 1, 1, kSecret));
  EXPECT_NE(a, UserBucketKey::Make(other, 1, 1, kSecret));
  EXPECT_NE(a, UserBucketKey::Make(base, 1, 2, kSecret));
  // Under another secret the digest (hence the key) differs: keys of one
  // table must all use that table's secret.
  EXPECT_NE(a, UserBucketKey::Make(base, 1, 1, SipKey{1, 2}));
  // An inline ID never equals a digest, whatever the bytes.
  std::array<uint64_t, UserBucketKey::kWords> words = a.words();
  words[0] &= ~(uint64_t{0xFF} << 32);  // kind := kInline (0)
  UserBucketKey forged;
  std::memcpy(static_cast<void*>(&forged), words.data(), sizeof forged);
  ASSERT_EQ(forged.kind(), Kind::kInline);
  EXPECT_NE(a, forged);
}

// An unverified origin's key is the name bound to the sender's network:
// stored as both when the name fits beside the network, else their keyed
// digest. Either way the same name from another network is another bucket,
// and no name has two keys on one network.
TEST(UserBucketKeyTest, BoundValuesAreKeyedByNameAndNetwork) {
  IpAddress net_a;
  net_a.bytes[0] = 0x20;
  net_a.bytes[1] = 0x01;
  IpAddress net_b = net_a;
  net_b.bytes[5] = 0x01;
  auto bound = [](std::string_view name, const IpAddress& net) {
    UserBucketKey k;
    k.AssignValue(name, true, &net, 3, 4, kSecret);
    return k;
  };
  const std::string longest(UserBucketKey::kBoundInlineCapacity, 'm');
  const std::string too_long = longest + "m";
  for (const std::string& name : {std::string("matrix.org"), longest, too_long,
                                  std::string("s1234567.example.org")}) {
    const UserBucketKey a = bound(name, net_a);
    EXPECT_EQ(a.kind(), name.size() <= UserBucketKey::kBoundInlineCapacity
                            ? Kind::kBoundInline
                            : Kind::kBound)
        << name;
    EXPECT_EQ(a, bound(name, net_a)) << name;
    EXPECT_FALSE(a == bound(name, net_b)) << name;
    EXPECT_FALSE(a == bound(name + "x", net_a)) << name;
    // The verified name (no network) is another bucket.
    UserBucketKey verified;
    verified.AssignValue(name, true, nullptr, 3, 4, kSecret);
    EXPECT_FALSE(a == verified) << name;
    EXPECT_EQ(a.policy(), 3);
    EXPECT_EQ(a.route(), 4);
  }
  // A name that ends in NUL bytes is not the shorter name.
  EXPECT_FALSE(bound("a.org", net_a) ==
               bound(std::string("a.org\0", 6), net_a));
}

// The word-at-a-time origin check says what the server-name rule says, for
// names of every length around the 40-byte fast path, hostile bytes
// included.
TEST(OriginShapeTest, WordAtATimeCheckAgreesWithTheDefinition) {
  std::mt19937_64 rng(7);
  const std::string alphabet = "abcXYZ019.-:[]@/_ \x7f\x80\xff";
  for (int round = 0; round < 200'000; ++round) {
    std::string name(rng() % 48, 'a');
    for (char& c : name) {
      // Mostly hostname bytes, so that long valid names are common.
      c = rng() % 4 != 0 ? "abz09.-"[rng() % 7]
                         : alphabet[rng() % alphabet.size()];
    }
    ASSERT_EQ(IsWellFormedOrigin(name), IsWellFormedServerName(name))
        << "\"" << name << "\"";
  }
  for (std::string_view name :
       {"matrix.org", "matrix.org:8448", "[::1]", "[::1]:8448", "1.2.3.4", "",
        ":", "a:", "a:b", "MATRIX.ORG", "a_b.org", "a b"}) {
    EXPECT_EQ(IsWellFormedOrigin(name), IsWellFormedServerName(name)) << name;
  }
  for (const size_t at : {0, 5, 9, 39}) {
    std::string name(40, 'a');
    name[at] = '\0';
    EXPECT_FALSE(IsWellFormedOrigin(name)) << at;
    EXPECT_FALSE(IsWellFormedServerName(name)) << at;
  }
  EXPECT_TRUE(IsWellFormedOrigin(std::string(40, 'a')));
  EXPECT_TRUE(IsWellFormedOrigin(std::string(41, 'a')));
  EXPECT_FALSE(IsWellFormedOrigin(std::string(256, 'a')));
}

// The inline path validates a word at a time; it must agree with the
// byte-at-a-time definition (IsWellFormedUserId) on every ID it sees, and
// store exactly the ID's bytes.
TEST(UserBucketKeyTest, WordAtATimeValidationAgreesWithTheDefinition) {
  std::mt19937_64 rng(5);
  // Port and IPv6 bytes too: the word masks settle a server of hostname
  // bytes only, anything else goes to the byte-at-a-time definition.
  const char alphabet[] = {'@', ':',    'a',  'Z',    '0',    '.',
                           ' ', '\x7F', '\0', '\x1F', '\x80', '\xFF',
                           '!', '=',    '[',  ']',    '-',    '8'};
  int inline_seen = 0;
  for (int round = 0; round < 300'000; ++round) {
    std::string id(rng() % 46, 'x');
    for (char& c : id) {
      // Mostly plain bytes, so that well-formed IDs come up often.
      c = rng() % 6 != 0 ? static_cast<char>('a' + rng() % 26)
                         : alphabet[rng() % sizeof alphabet];
    }
    if (!id.empty() && rng() % 2 == 0) id[0] = '@';
    if (id.size() > 3 && rng() % 2 == 0) id[1 + rng() % (id.size() - 2)] = ':';
    const UserBucketKey k = UserBucketKey::Make(id, 1, 2, kSecret);
    const bool ok = IsWellFormedUserId(id);
    ASSERT_EQ(k.kind() != Kind::kOverflow, ok) << "\"" << id << "\"";
    if (k.kind() == Kind::kInline) {
      ++inline_seen;
      ASSERT_EQ(k.inline_user_id(), id);
      // Bytes past the ID are zero (equality and hashing rely on it).
      std::string padded(UserBucketKey::kInlineCapacity, '\0');
      std::memcpy(padded.data(), &k.words()[1], padded.size());
      ASSERT_EQ(padded, id + std::string(padded.size() - id.size(), '\0'));
    }
  }
  EXPECT_GT(inline_seen, 10'000);  // the test did exercise the inline path
}

TEST(UserBucketKeyTest, MalformedAndOversizedIdsShareOneOverflowKey) {
  const std::string huge(100'000, '@');
  const std::string too_long = "@" + std::string(300, 'z') + ":example.org";
  const UserBucketKey overflow =
      UserBucketKey::Make("not a user id", 5, 6, kSecret);
  EXPECT_EQ(overflow.kind(), Kind::kOverflow);
  for (std::string_view bad :
       {std::string_view(""), std::string_view("@alice"),
        std::string_view("@alice:\x01"), std::string_view(huge),
        std::string_view(too_long)}) {
    EXPECT_EQ(UserBucketKey::Make(bad, 5, 6, kSecret), overflow) << bad.size();
  }
  // One per policy and route, not one for everything.
  EXPECT_NE(UserBucketKey::Make("bad", 5, 7, kSecret), overflow);
  EXPECT_NE(UserBucketKey::Make("bad", 4, 6, kSecret), overflow);
  // And never equal to a real user's key.
  EXPECT_NE(UserBucketKey::Make("@a:b", 5, 6, kSecret), overflow);
}

TEST(UserBucketKeyTest, HashIsConsistentWithEquality) {
  const std::string long_id = "@" + std::string(100, 'q') + ":example.org";
  std::vector<UserBucketKey> keys = {
      UserBucketKey::Make("@alice:example.org", 0, 0, kSecret),
      UserBucketKey::Make("@alice:example.org", 0, 1, kSecret),
      UserBucketKey::Make("@bob:example.org", 0, 0, kSecret),
      UserBucketKey::Make(long_id, 0, 0, kSecret),
      UserBucketKey::Make(long_id, 1, 0, kSecret),
      UserBucketKey::Make("garbage", 0, 0, kSecret),
      UserBucketKey::Make("garbage", 0, kSharedBucketRoute, kSecret),
  };
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(keys));
}

TEST(UserBucketKeyTest, WorksAsTableKeyWithFixedMemory) {
  BucketTable<UserBucketKey, BucketKeyHash> t(8);
  const std::string long_id = "@" + std::string(100, 'q') + ":example.org";
  t.FindOrAdmit(UserBucketKey::Make("@alice:example.org", 0, 0, kSecret))->tat =
      1;
  t.FindOrAdmit(UserBucketKey::Make(long_id, 0, 0, kSecret))->tat = 2;
  t.FindOrAdmit(UserBucketKey::Make("junk", 0, 0, kSecret))->tat = 3;
  t.FindOrAdmit(UserBucketKey::Make("more junk", 0, 0, kSecret))->tat += 1;
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(
      t.Peek(UserBucketKey::Make("@alice:example.org", 0, 0, kSecret))->tat, 1);
  EXPECT_EQ(t.Peek(UserBucketKey::Make(long_id, 0, 0, kSecret))->tat, 2);
  EXPECT_EQ(t.Peek(UserBucketKey::Make("x", 0, 0, kSecret))->tat, 4);
}

// --- BucketKeyHash ---------------------------------------------------------

constexpr std::array<uint64_t, 6> kSeed = {1, 2, 3, 4, 5, 6};

UserBucketKey UserKey(std::string_view id) {
  return UserBucketKey::Make(id, 3, 9, kSecret);
}

TEST(BucketKeyHashTest, EqualKeysHashEqually) {
  const BucketKeyHash h(kSeed);
  const IpAddress a = Addr({0x20, 0x01, 0x0d, 0xb8, 7});
  EXPECT_EQ(h(IpBucketKey::Make(a, 1, 2)), h(IpBucketKey::Make(a, 1, 2)));
  EXPECT_EQ(h(UserKey("@alice:example.org")), h(UserKey("@alice:example.org")));
  EXPECT_EQ(BucketKeyHash(kSeed)(UserKey("@a:b.c")),
            BucketKeyHash(kSeed)(UserKey("@a:b.c")));
}

TEST(BucketKeyHashTest, StagedFormsGiveTheKeysHash) {
  // The engine hashes a request's keys in stages (one subject's part once,
  // then each key's); the tables hash stored keys whole. Both must agree,
  // or a bucket would never be found again.
  const BucketKeyHash h(kSeed);
  for (const std::string& id :
       {std::string("@alice:example.org"),
        std::string("@0123456789abcdefghijklmnopqrst:a.bc.de"),
        "@" + std::string(60, 'x') + ":example.org",  // a digest
        std::string("not a user ID")}) {              // the overflow key
    const UserBucketKey base = UserBucketKey::Make(id, 0, 0, kSecret);
    const BucketKeyHash::UserTail tail = h.TailOf(base);
    for (const auto& [policy, route] :
         {std::pair<PolicyId, RouteId>{0, 0}, {3, 9}, {0xFFFE, 0xFFFF}}) {
      UserBucketKey rekeyed;
      rekeyed.AssignRekeyed(base, policy, route);
      UserBucketKey copied = base;
      copied.Rekey(policy, route);
      EXPECT_TRUE(rekeyed == copied) << id;
      EXPECT_EQ(h.WithHead(rekeyed.words()[0], tail), h(rekeyed)) << id;
    }
  }
  const IpAddress a = Addr({0x20, 0x01, 0x0d, 0xb8, 7, 0, 0, 0, 0, 0, 0, 9});
  const uint64_t part = h.AddressPart(a.bytes);
  for (PolicyId policy : {0, 4, 0xFFFE}) {
    for (RouteId route : {0, 5, 0xFFFF}) {
      EXPECT_EQ(h.WithIds(part, policy, route),
                h(IpBucketKey::Make(a, policy, route)));
    }
  }
}

TEST(BucketKeyHashTest, EveryByteOfTheKeyCounts) {
  // A byte left out of the hash would let keys that differ only there pile
  // into one probe sequence. Flip each byte of each key type in turn.
  const BucketKeyHash h(kSeed);
  IpBucketKey ip = IpBucketKey::Make(Addr({0x20, 0x01, 0x0d, 0xb8}), 4, 5);
  const size_t ip_hash = h(ip);
  for (size_t i = 0; i < sizeof(IpBucketKey); ++i) {
    IpBucketKey other = ip;
    reinterpret_cast<unsigned char*>(&other)[i] ^= 0x01;
    EXPECT_NE(h(other), ip_hash) << "byte " << i;
  }
  UserBucketKey user = UserKey("@0123456789abcdefghijklmnopqrst:a.bc.de");
  ASSERT_EQ(user.kind(), UserBucketKey::Kind::kInline);
  ASSERT_EQ(user.length(), 39u);
  const size_t user_hash = h(user);
  for (size_t i = 0; i < sizeof(UserBucketKey); ++i) {
    UserBucketKey other = user;
    reinterpret_cast<unsigned char*>(&other)[i] ^= 0x80;
    EXPECT_NE(h(other), user_hash) << "byte " << i;
  }
}

TEST(BucketKeyHashTest, UserKeyEqualityLooksAtEveryByte) {
  const UserBucketKey user = UserKey("@0123456789abcdefghijklmnopqrst:a.bc.de");
  for (size_t i = 0; i < sizeof(UserBucketKey); ++i) {
    UserBucketKey other = user;
    reinterpret_cast<unsigned char*>(&other)[i] ^= 0x10;
    EXPECT_FALSE(other == user) << "byte " << i;
    EXPECT_TRUE(other == other);
  }
}

TEST(BucketKeyHashTest, SeedsGiveUnrelatedHashes) {
  const BucketKeyHash a(kSeed);
  const BucketKeyHash b({6, 5, 4, 3, 2, 1});
  const BucketKeyHash random_1;
  const BucketKeyHash random_2;
  const UserBucketKey k = UserKey("@alice:example.org");
  EXPECT_NE(a(k), b(k));
  EXPECT_NE(random_1(k), random_2(k));
}

// Neighbouring clients (consecutive addresses, numbered user names) must
// spread evenly over the index's groups (high bits) and its control-byte tags
// (the low 7 bits abseil compares first).
template <typename MakeKey>
void ExpectEvenSpread(MakeKey make_key) {
  const BucketKeyHash h;
  constexpr int kKeys = 1 << 18;
  constexpr int kBins = 1 << 10;
  std::vector<int> high(kBins), low(128);
  for (int i = 0; i < kKeys; ++i) {
    const size_t x = h(make_key(i));
    ++high[(x >> 7) % kBins];
    ++low[x & 127];
  }
  // Binomial: mean 256 with sd 16 per high bin, 2048 with sd 45 per tag.
  for (int n : high) {
    EXPECT_GT(n, 256 - 6 * 16);
    EXPECT_LT(n, 256 + 6 * 16);
  }
  for (int n : low) {
    EXPECT_GT(n, 2048 - 6 * 45);
    EXPECT_LT(n, 2048 + 6 * 45);
  }
}

TEST(BucketKeyHashTest, ConsecutiveAddressesSpreadEvenly) {
  ExpectEvenSpread([](int i) {
    IpAddress a = Addr({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10});
    a.bytes[13] = static_cast<uint8_t>(i >> 16);
    a.bytes[14] = static_cast<uint8_t>(i >> 8);
    a.bytes[15] = static_cast<uint8_t>(i);
    return IpBucketKey::Make(a, 0, kSharedBucketRoute);
  });
  ExpectEvenSpread([](int i) {  // one /64 per client
    IpAddress a = Addr({0x20, 0x01, 0x0d, 0xb8});
    a.bytes[5] = static_cast<uint8_t>(i >> 16);
    a.bytes[6] = static_cast<uint8_t>(i >> 8);
    a.bytes[7] = static_cast<uint8_t>(i);
    return IpBucketKey::Make(a, 0, 17);
  });
}

TEST(BucketKeyHashTest, NumberedUserNamesSpreadEvenly) {
  ExpectEvenSpread([](int i) {
    return UserKey("@user" + std::to_string(i) + ":example.org");
  });
}

// Reference vectors of SipHash-2-4-128 (key 00..0f, message 00..len-1),
// published with the reference implementation.
TEST(SipHash128Test, MatchesReferenceVectors) {
  const SipKey key{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  std::string msg;
  for (int i = 0; i < 64; ++i) msg.push_back(static_cast<char>(i));
  auto hex = [](const SipDigest& d) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (uint8_t b : d) {
      s.push_back(digits[b >> 4]);
      s.push_back(digits[b & 15]);
    }
    return s;
  };
  EXPECT_EQ(hex(SipHash128(key, msg.substr(0, 0))),
            "a3817f04ba25a8e66df67214c7550293");
  EXPECT_EQ(hex(SipHash128(key, msg.substr(0, 1))),
            "da87c1d86b99af44347659119b22fc45");
  EXPECT_EQ(hex(SipHash128(key, msg.substr(0, 7))),
            "a1f1ebbed8dbc153c0b84aa61ff08239");
  EXPECT_EQ(hex(SipHash128(key, msg.substr(0, 8))),
            "3b62a9ba6258f5610f83e264f31497b4");
  EXPECT_EQ(hex(SipHash128(key, msg.substr(0, 15))),
            "5493e99933b0a8117e08ec0f97cfc3d9");
  EXPECT_EQ(hex(SipHash128(key, msg.substr(0, 63))),
            "5150d1772f50834a503e069a973fbd7c");
}

TEST(SipHash128Test, RandomKeysDiffer) {
  const SipKey a = RandomSipKey();
  const SipKey b = RandomSipKey();
  EXPECT_FALSE(a.k0 == b.k0 && a.k1 == b.k1);
}

}  // namespace
}  // namespace mxlimit::internal
