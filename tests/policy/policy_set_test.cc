// PolicySet: resolution rules, share_threshold bucket routes, built-in
// interplay, validation errors, and Explain (held to Resolve by a randomized
// differential test).

#include "mxlimit/policy_set.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/policy_testing.h"

namespace mxlimit {
namespace {

using ::mxlimit::testing::MakePolicy;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace ::mxlimit::testing;  // NOLINT: TestRoute enumerators.

constexpr std::string_view kSendA =
    "/_matrix/client/v3/rooms/!a:example.org/send/m.room.message/t1";
constexpr std::string_view kSendB =
    "/_matrix/client/v3/rooms/!b:example.org/send/m.room.message/t2";
constexpr std::string_view kSendR0 =
    "/_matrix/client/r0/rooms/!a:example.org/send/m.room.message/t3";

PolicySet MustCompile(std::vector<Policy> policies, bool builtins = false) {
  absl::StatusOr<PolicySet> set =
      PolicySet::Compile(std::move(policies), builtins, kRouteKeys);
  EXPECT_TRUE(set.ok()) << set.status();
  return *std::move(set);
}

std::string NameOf(const PolicySet& set, PolicyId id) {
  return id == kNoPolicy ? "<none>" : set.policy(id).name;
}

// --- plain resolutions -----------------------------------------------------

// What the engine's short path may assume: only ip and user rates, none
// delaying. Built-ins on.
TEST(PolicySetTest, PlainMeansAddressAndUserRatesThatDeny) {
  PolicySet set = MustCompile({}, /*builtins=*/true);
  RequestSubjects user;
  user.user = true;
  const PolicySet::Resolution send = set.Resolve("PUT", kSend, kSendA, user);
  EXPECT_TRUE(send.plain);
  EXPECT_NE(send.ip, kNoPolicy);
  EXPECT_NE(send.user, kNoPolicy);
  // An initial sync meets initial-sync-in-flight; an incremental one only
  // rates.
  constexpr std::string_view kSyncPath = "/_matrix/client/v3/sync";
  RequestSubjects initial = user;
  initial.request_target = "/_matrix/client/v3/sync?timeout=0";
  EXPECT_FALSE(set.Resolve("GET", kSync, kSyncPath, initial).plain);
  RequestSubjects incremental = user;
  incremental.request_target = "/_matrix/client/v3/sync?since=s1&timeout=0";
  EXPECT_TRUE(set.Resolve("GET", kSync, kSyncPath, incremental).plain);
  // A federation request: origin policies, one of them in flight.
  RequestSubjects origin;
  origin.origin = true;
  EXPECT_FALSE(
      set.Resolve("PUT", kFallback, "/_matrix/federation/v1/send/1", origin)
          .plain);
  // A delaying policy, even a plain rate of a user.
  Policy slow =
      MakePolicy("slow-send", std::string(kRouteKeys[kSend]), Scope::kUser);
  slow.on_limit = OnLimit::kDelay;
  slow.max_delay = std::chrono::milliseconds(100);
  PolicySet delayed = MustCompile({slow}, /*builtins=*/true);
  const PolicySet::Resolution late =
      delayed.Resolve("PUT", kSend, kSendA, user);
  EXPECT_FALSE(late.plain);
  // Not plain changes nothing else: the same policies name the decision.
  EXPECT_EQ(NameOf(delayed, late.user), "slow-send");
  EXPECT_EQ(NameOf(delayed, late.ip), NameOf(set, send.ip));
}

// --- share_threshold --------------------------------------------------------

TEST(PolicySetTest, SharedWildcardChargesOneBucketAcrossRoutes) {
  PolicySet set = MustCompile({MakePolicy("media", "/_matrix/client/v1/media/*",
                                          Scope::kIp, /*share=*/true)});
  auto download =
      set.Resolve("GET", kMediaDownload,
                  "/_matrix/client/v1/media/download/x.org/abc", false);
  auto thumbnail =
      set.Resolve("GET", kMediaThumbnail,
                  "/_matrix/client/v1/media/thumbnail/x.org/abc", false);
  auto unknown = set.Resolve("GET", kFallback,
                             "/_matrix/client/v1/media/brand_new/x", false);
  EXPECT_EQ(NameOf(set, download.ip), "media");
  EXPECT_EQ(download.ip_bucket_route, kSharedBucketRoute);
  EXPECT_EQ(thumbnail, download);
  EXPECT_EQ(unknown, download);
}

TEST(PolicySetTest, IsolatedWildcardChargesOneBucketPerNormalizedRoute) {
  PolicySet set = MustCompile({MakePolicy("media", "/_matrix/client/v1/media/*",
                                          Scope::kIp, /*share=*/false)});
  auto download =
      set.Resolve("GET", kMediaDownload,
                  "/_matrix/client/v1/media/download/x.org/abc", false);
  auto thumbnail =
      set.Resolve("GET", kMediaThumbnail,
                  "/_matrix/client/v1/media/thumbnail/x.org/abc", false);
  EXPECT_EQ(download.ip, thumbnail.ip);
  EXPECT_EQ(download.ip_bucket_route, kMediaDownload);
  EXPECT_EQ(thumbnail.ip_bucket_route, kMediaThumbnail);
}

TEST(PolicySetTest, IsolatedWildcardNeverMintsABucketPerRawValue) {
  PolicySet set = MustCompile({MakePolicy("rooms", "/_matrix/client/v3/rooms/*",
                                          Scope::kUser, /*share=*/false)});
  // Two rooms, two transactions: one normalized route, one bucket route.
  auto a = set.Resolve("PUT", kSend, kSendA, true);
  auto b = set.Resolve("PUT", kSend, kSendB, true);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.user_bucket_route, kSend);
  // Unknown paths under the wildcard all share the fallback route.
  auto u1 =
      set.Resolve("GET", kFallback, "/_matrix/client/v3/rooms/!a/x", true);
  auto u2 =
      set.Resolve("GET", kFallback, "/_matrix/client/v3/rooms/!b/y", true);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(u1.user_bucket_route, kFallbackRouteId);
}

TEST(PolicySetTest, R0AndV3PathsOfOneRouteShareABucketRoute) {
  PolicySet set = MustCompile({MakePolicy("rooms", "/_matrix/client/v3/rooms/*",
                                          Scope::kUser, /*share=*/false)});
  // The normalizer maps r0 to the v3 key: same RouteId. The v3 pattern
  // matches the r0 request through its route key.
  auto v3 = set.Resolve("PUT", kSend, kSendA, true);
  auto r0 = set.Resolve("PUT", kSend, kSendR0, true);
  EXPECT_EQ(NameOf(set, r0.user), "rooms");
  EXPECT_EQ(v3, r0);
}

// --- ranking ----------------------------------------------------------------

TEST(PolicySetTest, ExactBeatsWildcard) {
  PolicySet set = MustCompile({
      MakePolicy("keys", "/_matrix/client/v3/keys/*", Scope::kUser, true),
      MakePolicy("claim", "/_matrix/client/v3/keys/claim", Scope::kUser),
  });
  auto claim =
      set.Resolve("POST", kKeysClaim, "/_matrix/client/v3/keys/claim", true);
  auto upload =
      set.Resolve("POST", kKeysUpload, "/_matrix/client/v3/keys/upload", true);
  EXPECT_EQ(NameOf(set, claim.user), "claim");
  EXPECT_EQ(claim.user_bucket_route, kKeysClaim);
  EXPECT_EQ(NameOf(set, upload.user), "keys");
  EXPECT_EQ(upload.user_bucket_route, kSharedBucketRoute);
}

TEST(PolicySetTest, ExactBeatsWildcardWithMoreLiteralBytes) {
  // The exact raw path of one room is shorter than the template wildcard,
  // yet wins: exactness ranks before length.
  const std::string room = "/_matrix/client/v3/rooms/!a:b/messages";
  PolicySet set = MustCompile({
      MakePolicy("template", "/_matrix/client/v3/rooms/{roomId}/messages*",
                 Scope::kIp, true),
      MakePolicy("one-room", room),
  });
  ASSERT_LT(room.size(), std::string_view(kRouteKeys[kMessages]).size());
  auto r = set.Resolve("GET", kMessages, room, false);
  EXPECT_EQ(NameOf(set, r.ip), "one-room");
  auto other = set.Resolve("GET", kMessages,
                           "/_matrix/client/v3/rooms/!z:b/messages", false);
  EXPECT_EQ(NameOf(set, other.ip), "template");
}

TEST(PolicySetTest, MoreLiteralBytesWinsAmongWildcards) {
  PolicySet set = MustCompile({
      MakePolicy("everything", "*", Scope::kUser),
      MakePolicy("client", "/_matrix/client/v3/*", Scope::kUser),
      MakePolicy("rooms", "/_matrix/client/v3/rooms/*", Scope::kUser),
      MakePolicy("sends", "/_matrix/client/v3/rooms/*/send/*", Scope::kUser),
  });
  EXPECT_EQ(NameOf(set, set.Resolve("PUT", kSend, kSendA, true).user), "sends");
  EXPECT_EQ(
      NameOf(set, set.Resolve("GET", kMessages,
                              "/_matrix/client/v3/rooms/!a/messages", true)
                      .user),
      "rooms");
  EXPECT_EQ(
      NameOf(set,
             set.Resolve("GET", kSync, "/_matrix/client/v3/sync", true).user),
      "client");
  EXPECT_EQ(
      NameOf(set, set.Resolve("GET", kFallback, "/robots.txt", true).user),
      "everything");
}

TEST(PolicySetTest, OperatorBeatsBuiltinOnATie) {
  // Same literal length as the built-in keys cap, different name.
  PolicySet set = MustCompile(
      {MakePolicy("my-keys", "/_matrix/client/v3/keys/*", Scope::kUser, true)},
      /*builtins=*/true);
  ASSERT_TRUE(set.Find("keys-per-user").has_value());
  auto r =
      set.Resolve("POST", kKeysClaim, "/_matrix/client/v3/keys/claim", true);
  EXPECT_EQ(NameOf(set, r.user), "my-keys");
}

// The three operator wildcards, in the default configuration: each
// used to lose every request it was written for to a built-in with more
// literal bytes (`{roomId}` counted as 8).
TEST(PolicySetTest, OperatorWildcardsApplyWhereBuiltinsOfTheirTierMatch) {
  PolicySet set = MustCompile(
      {
          MakePolicy("sends", "/_matrix/client/v3/rooms/*/send/*",
                     Scope::kUser),
          MakePolicy("keys", "/_matrix/client/*/keys/*", Scope::kUser),
          MakePolicy("hot-room", "/_matrix/client/v3/rooms/!a:b.c/send/*",
                     Scope::kUser),
      },
      /*builtins=*/true);
  EXPECT_EQ(NameOf(set, set.Resolve("PUT", kSend, kSendA, true).user), "sends");
  EXPECT_EQ(NameOf(set, set.Resolve("PUT", kSend, kSendR0, true).user),
            "sends");
  for (RouteId keys : {kKeysClaim, kKeysUpload, kKeysQuery, kKeysChanges}) {
    const std::string path = std::string(kRouteKeys[keys]);
    EXPECT_EQ(NameOf(set, set.Resolve("POST", keys, path, true).user), "keys")
        << path;
  }
  // An unknown /keys/ path too: the operator's prefix over keys-per-user.
  EXPECT_EQ(NameOf(set, set.Resolve("POST", kFallback,
                                    "/_matrix/client/r0/keys/new", true)
                            .user),
            "keys");
  // The short room ID: one room's rule over every room's.
  EXPECT_EQ(
      NameOf(set,
             set.Resolve("PUT", kSend,
                         "/_matrix/client/v3/rooms/!a:b.c/send/m.x/t1", true)
                 .user),
      "hot-room");
  // Built-ins of a higher tier still win: exactness ranks first.
  PolicySet broad =
      MustCompile({MakePolicy("client", "/_matrix/client/v3/*", Scope::kIp)},
                  /*builtins=*/true);
  EXPECT_EQ(
      NameOf(
          broad,
          broad.Resolve("POST", kLogin, "/_matrix/client/v3/login", false).ip),
      "login-per-ip");
}

TEST(PolicySetTest, PlaceholdersCountNoLiteralBytes) {
  // Among operator policies: a template names every room as '*' does, so
  // one room's raw pattern is more specific, however short its ID.
  PolicySet set = MustCompile({
      MakePolicy("every-room", "/_matrix/client/v3/rooms/{roomId}/send/*",
                 Scope::kUser),
      MakePolicy("one-room", "/_matrix/client/v3/rooms/!a/send/*",
                 Scope::kUser),
      MakePolicy("any-room", "/_matrix/client/v3/rooms/*/send/*", Scope::kUser),
  });
  EXPECT_EQ(
      NameOf(set, set.Resolve("PUT", kSend,
                              "/_matrix/client/v3/rooms/!a/send/m/t", true)
                      .user),
      "one-room");
  // `{roomId}` and '*': equally specific, so the earlier wins.
  EXPECT_EQ(NameOf(set, set.Resolve("PUT", kSend, kSendB, true).user),
            "every-room");
  EXPECT_EQ(internal::ShapeOf("/a/{roomId}/b/*").rank_bytes, 6u);
  EXPECT_EQ(internal::ShapeOf("/a/{roomId}/b/*").literal_bytes, 14u);
  // Not a placeholder: no name, or a byte a name cannot hold.
  EXPECT_EQ(internal::ShapeOf("/a/{}/{x-y}").rank_bytes, 11u);
}

TEST(PolicySetTest, OperatorPolicyReplacesBuiltinOfTheSameName) {
  Policy mine = MakePolicy("keys-per-user", "/_matrix/client/v3/keys/*",
                           Scope::kUser, true);
  mine.rate = PerHour(7);
  mine.builtin = true;  // Ignored: operator policies are operator policies.
  PolicySet set = MustCompile({mine}, /*builtins=*/true);
  std::optional<PolicyId> id = set.Find("keys-per-user");
  ASSERT_TRUE(id.has_value());
  EXPECT_FALSE(set.policy(*id).builtin);
  EXPECT_EQ(set.policy(*id).rate, PerHour(7));
  EXPECT_EQ(set.size(), BuiltinPolicies().size());  // Replaced, not added.
}

TEST(PolicySetTest, EarlierInFileWinsAFullTie) {
  PolicySet set = MustCompile({
      MakePolicy("first", "/_matrix/client/v3/keys/*", Scope::kUser),
      MakePolicy("second", "/_matrix/client/r0/keys/*", Scope::kUser),
  });
  // Known r0 path: "first" matches the route key, "second" the raw path,
  // both with 24 literal bytes.
  auto r =
      set.Resolve("POST", kKeysClaim, "/_matrix/client/r0/keys/claim", true);
  EXPECT_EQ(NameOf(set, r.user), "first");
}

// --- filters ----------------------------------------------------------------

TEST(PolicySetTest, MethodsFilterPolicies) {
  PolicySet set = MustCompile({
      MakePolicy("login-post", "/_matrix/client/v3/login", Scope::kIp, false,
                 {"POST"}),
      MakePolicy("fallback", "*"),
  });
  const std::string_view path = "/_matrix/client/v3/login";
  EXPECT_EQ(NameOf(set, set.Resolve("POST", kLogin, path, false).ip),
            "login-post");
  EXPECT_EQ(NameOf(set, set.Resolve("GET", kLogin, path, false).ip),
            "fallback");
  // Methods are case-sensitive; an unknown method matches only method-less
  // policies.
  EXPECT_EQ(NameOf(set, set.Resolve("post", kLogin, path, false).ip),
            "fallback");
  EXPECT_EQ(NameOf(set, set.Resolve("BREW", kLogin, path, false).ip),
            "fallback");
}

TEST(PolicySetTest, UserScopeAppliesOnlyToRequestsWithAUser) {
  PolicySet set = MustCompile({
      MakePolicy("ip", "*", Scope::kIp),
      MakePolicy("user", "*", Scope::kUser),
  });
  auto anon = set.Resolve("GET", kSync, "/_matrix/client/v3/sync", false);
  EXPECT_EQ(NameOf(set, anon.ip), "ip");
  EXPECT_EQ(anon.user, kNoPolicy);
  EXPECT_EQ(anon.user_bucket_route, kFallbackRouteId);
  auto authed = set.Resolve("GET", kSync, "/_matrix/client/v3/sync", true);
  EXPECT_EQ(NameOf(set, authed.user), "user");
  EXPECT_EQ(authed.user_bucket_route, kSync);
}

TEST(PolicySetTest, NoMatchingPolicyResolvesToNoPolicy) {
  PolicySet set = MustCompile({MakePolicy("login", "/_matrix/client/v3/login")},
                              /*builtins=*/false);
  auto r = set.Resolve("GET", kSync, "/_matrix/client/v3/sync", true);
  EXPECT_EQ(r, PolicySet::Resolution{});
}

TEST(PolicySetTest, FallbackKeyPatternTargetsEveryUnknownPath) {
  PolicySet set = MustCompile({MakePolicy("unknown", "<fallback>")});
  EXPECT_EQ(
      NameOf(set, set.Resolve("GET", kFallback, "/wp-login.php", false).ip),
      "unknown");
  EXPECT_EQ(set.Resolve("GET", kSync, "/_matrix/client/v3/sync", false).ip,
            kNoPolicy);
}

TEST(PolicySetTest, RouteIdsOutsideTheTableCountAsFallback) {
  PolicySet set = MustCompile({MakePolicy("unknown", "<fallback>"),
                               MakePolicy("all", "*", Scope::kIp)});
  auto r = set.Resolve("GET", 9999, "/somewhere", false);
  EXPECT_EQ(NameOf(set, r.ip), "unknown");
  EXPECT_EQ(r.ip_bucket_route, kFallbackRouteId);
  EXPECT_EQ(set.route_key(9999), kFallbackRouteKey);
}

// --- compile errors ---------------------------------------------------------

std::string CompileError(std::vector<Policy> policies) {
  absl::StatusOr<PolicySet> set =
      PolicySet::Compile(std::move(policies), false, kRouteKeys);
  EXPECT_FALSE(set.ok());
  if (set.ok()) return "";
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(set.status().message());
}

TEST(PolicySetCompileTest, RejectsDuplicateNames) {
  Policy a = MakePolicy("dup", "/a/*");
  a.source_line = 4;
  Policy b = MakePolicy("dup", "/b/*");
  b.source_line = 9;
  std::string error = CompileError({a, b});
  EXPECT_THAT(error, HasSubstr("policy \"dup\" (line 9): name"));
  EXPECT_THAT(error, HasSubstr("already used (line 4)"));
}

TEST(PolicySetCompileTest, RejectsShareThresholdWithoutWildcard) {
  std::string error = CompileError(
      {MakePolicy("login", "/_matrix/client/v3/login", Scope::kIp, true)});
  EXPECT_EQ(error,
            "policy \"login\": share_threshold: got true, but match "
            "\"/_matrix/client/v3/login\" has no '*'; sharing needs a "
            "wildcard pattern or a list of patterns");
}

TEST(PolicySetCompileTest, RejectsUnknownMethods) {
  EXPECT_EQ(
      CompileError({MakePolicy("p", "/x", Scope::kIp, false, {"BREW"})}),
      "policy \"p\": methods: got \"BREW\", expected an HTTP method (GET, "
      "HEAD, POST, PUT, DELETE, OPTIONS, PATCH, CONNECT or TRACE)");
  EXPECT_THAT(CompileError({MakePolicy("p", "/x", Scope::kIp, false, {""})}),
              HasSubstr("methods: got \"\", expected an HTTP method"));
}

// Policy methods, like the config file's, are taken in any case and stored
// upper case; a request's method stays case-sensitive.
TEST(PolicySetCompileTest, MethodsInAnyCaseAreStoredUpperCase) {
  PolicySet set = MustCompile({
      MakePolicy("login-post", "/_matrix/client/v3/login", Scope::kIp, false,
                 {"post", "Put"}),
      MakePolicy("fallback", "*"),
  });
  const std::optional<PolicyId> id = set.Find("login-post");
  ASSERT_TRUE(id.has_value());
  EXPECT_THAT(set.policy(*id).methods, ::testing::ElementsAre("POST", "PUT"));
  const std::string_view path = "/_matrix/client/v3/login";
  EXPECT_EQ(NameOf(set, set.Resolve("POST", kLogin, path, false).ip),
            "login-post");
  EXPECT_EQ(NameOf(set, set.Resolve("PUT", kLogin, path, false).ip),
            "login-post");
  EXPECT_EQ(NameOf(set, set.Resolve("post", kLogin, path, false).ip),
            "fallback");
}

TEST(PolicySetCompileTest, RejectsPatternsNoPathCanMatch) {
  const std::string kBadStart =
      "expected a path pattern starting with '/' or '*', or \"<fallback>\"";
  EXPECT_THAT(CompileError({MakePolicy("p", "")}),
              HasSubstr("match: got \"\", " + kBadStart));
  EXPECT_THAT(CompileError({MakePolicy("p", "_matrix/client/*")}),
              HasSubstr(kBadStart));
  EXPECT_THAT(CompileError({MakePolicy("p", "<fallback>/*")}),
              HasSubstr(kBadStart));
  EXPECT_THAT(CompileError({MakePolicy("p", "/_matrix/client/v3/sync?x=1")}),
              HasSubstr("drop the '?' or '#' part"));
  EXPECT_THAT(CompileError({MakePolicy("p", "/a b")}),
              HasSubstr("without spaces or control characters"));
  EXPECT_THAT(CompileError({MakePolicy("p", "/" + std::string(3000, 'a'))}),
              HasSubstr("(3001 bytes), expected a path pattern of at most "
                        "2048 bytes"));
}

TEST(PolicySetCompileTest, RejectsEmptyLongAndUnquotableNames) {
  const std::string kExpected =
      "expected 1 to 100 letters, digits, '.', '_', ':' or '-'";
  EXPECT_THAT(CompileError({MakePolicy("", "/x")}),
              HasSubstr("name: got \"\", " + kExpected));
  EXPECT_THAT(CompileError({MakePolicy(std::string(101, 'n'), "/x")}),
              HasSubstr(kExpected));
  EXPECT_THAT(CompileError({MakePolicy("my policy", "/x")}),
              HasSubstr("name: got \"my policy\", " + kExpected));
  MustCompile({MakePolicy(std::string(100, 'n'), "/x")});
}

TEST(PolicySetCompileTest, ReportsEveryErrorAtOnce) {
  std::string error = CompileError({
      MakePolicy("a", "/a", Scope::kIp, true),
      MakePolicy("b", "no-slash"),
      MakePolicy("a", "/c/*", Scope::kIp, false, {"FETCH"}),
  });
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 3) << error;
}

TEST(PolicySetCompileTest, RejectsMoreThanMaxPolicies) {
  std::vector<Policy> many;
  for (size_t i = 0; i <= kMaxPolicies; ++i) {
    many.push_back(MakePolicy("p" + std::to_string(i), "/x"));
  }
  EXPECT_THAT(CompileError(std::move(many)),
              HasSubstr("expected at most 65535"));
}

TEST(PolicySetCompileTest, BuiltinsOffMeansOnlyOperatorPolicies) {
  PolicySet set = MustCompile({MakePolicy("x", "/x")}, /*builtins=*/false);
  EXPECT_EQ(set.size(), 1u);
  EXPECT_FALSE(set.Find("catch-all-ip").has_value());
  EXPECT_FALSE(set.Find("nope").has_value());
}

// --- the /keys/ regression (built-ins) ---------------------------------------

TEST(PolicySetBuiltinTest, KeysCapCoversEveryKnownKeysRoute) {
  PolicySet set = MustCompile({}, /*builtins=*/true);
  const PolicyId keys = *set.Find("keys-per-user");
  const std::pair<RouteId, std::string_view> known[] = {
      {kKeysClaim, "/_matrix/client/v3/keys/claim"},
      {kKeysUpload, "/_matrix/client/v3/keys/upload"},
      {kKeysQuery, "/_matrix/client/v3/keys/query"},
      {kKeysChanges, "/_matrix/client/v3/keys/changes"},
      {kKeysClaim, "/_matrix/client/r0/keys/claim"},  // r0, normalized.
      {kKeysUpload, "/_matrix/client/r0/keys/upload"},
  };
  for (const auto& [route, path] : known) {
    auto r = set.Resolve("POST", route, path, true);
    EXPECT_EQ(r.user, keys) << path << " -> " << NameOf(set, r.user);
    EXPECT_EQ(r.user_bucket_route, kSharedBucketRoute) << path;
  }
}

TEST(PolicySetBuiltinTest, KeysCapCoversUnknownRawKeysPaths) {
  PolicySet set = MustCompile({}, /*builtins=*/true);
  auto v3 =
      set.Resolve("POST", kFallback, "/_matrix/client/v3/keys/whatever", true);
  EXPECT_EQ(NameOf(set, v3.user), "keys-per-user");
  EXPECT_EQ(v3.user_bucket_route, kSharedBucketRoute);
  // r0, unstable and encoded spellings are no escape hatch: canonically
  // they are the v3 path, so one row and one shared counter cover them.
  for (const char* path : {"/_matrix/client/r0/keys/whatever",
                           "/_matrix/client/unstable/keys/whatever",
                           "/_matrix/client/%72%30/keys/whatever",
                           "/_matrix/client/v3/%6beys/whatever"}) {
    auto r = set.Resolve("POST", kFallback, path, true);
    EXPECT_EQ(NameOf(set, r.user), "keys-per-user") << path;
    EXPECT_EQ(r.user_bucket_route, kSharedBucketRoute) << path;
  }
  // room_keys is key backup, not /keys/: the catch-all applies.
  EXPECT_EQ(
      NameOf(set, set.Resolve("PUT", kRoomKeys,
                              "/_matrix/client/v3/room_keys/keys/!r", true)
                      .user),
      "catch-all-user");
}

TEST(PolicySetBuiltinTest, EveryRequestGetsABucketInBothScopes) {
  PolicySet set = MustCompile({}, /*builtins=*/true);
  auto r = set.Resolve("GET", kFallback, "/anything/at/all", true);
  // Unknown paths: one exact per-address counter beats the catch-all.
  EXPECT_EQ(NameOf(set, r.ip), "unknown-paths-per-ip");
  EXPECT_EQ(NameOf(set, r.user), "catch-all-user");
  EXPECT_EQ(r.ip_bucket_route, kFallbackRouteId);
  auto sync = set.Resolve("GET", kSync, "/_matrix/client/v3/sync", true);
  EXPECT_EQ(NameOf(set, sync.ip), "catch-all-ip");
  EXPECT_EQ(sync.ip_bucket_route, kSync);
  EXPECT_EQ(sync.user_bucket_route, kSync);
}

}  // namespace
}  // namespace mxlimit
