// Fuzz target: policy pattern matching (mxlimit/internal/policy_match.h) and
// resolution (mxlimit/policy_set.h).
//
// First byte even: PATTERN '\n' TEXT. `GlobMatch` must equal a dynamic-
// programming reference matcher; `ShapeOf` must describe the pattern (kind,
// literal byte count, prefix), and for exact and trailing-'*' patterns the
// glob must reduce to equality and prefix tests, which is what `PolicySet`'s
// hash table and trie rely on.
//
// First byte odd: up to eight fuzzer-chosen policies (pattern, scope,
// methods, sharing), compiled with or without the built-ins and with or
// without the normalizer's route forms, against the default route table or
// (15 inputs in 16) a small one, then one request
// (method, path). `Resolve` must pick, per scope, exactly the policy a naive
// scan ranks highest per layer, scope and mode (tests/testing/
// naive_resolve.h: canonical forms, exact > literal wildcard > <fallback> >
// bare '*', operator, more literal bytes outside `{name}` placeholders,
// earlier), charge the route id or
// the shared route as the policy says, and agree with `Explain`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "mxlimit/internal/policy_match.h"
#include "mxlimit/policy.h"
#include "mxlimit/policy_set.h"
#include "mxlimit/route.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/testing/naive_resolve.h"

namespace mxlimit::fuzz {
namespace {

using internal::GlobMatch;
using internal::PatternKind;
using internal::PatternShape;
using internal::ShapeOf;

// match[i][j]: pattern[0..i) matches text[0..j).
bool ReferenceGlob(std::string_view pattern, std::string_view text) {
  std::vector<std::vector<bool>> m(pattern.size() + 1,
                                   std::vector<bool>(text.size() + 1, false));
  m[0][0] = true;
  for (size_t i = 1; i <= pattern.size(); ++i) {
    const char p = pattern[i - 1];
    for (size_t j = 0; j <= text.size(); ++j) {
      if (p == '*') {
        m[i][j] = m[i - 1][j] || (j > 0 && m[i][j - 1]);
      } else {
        m[i][j] = j > 0 && m[i - 1][j - 1] && text[j - 1] == p;
      }
    }
  }
  return m[pattern.size()][text.size()];
}

void RunGlob(FuzzInput& in) {
  const std::string_view pattern = in.Until('\n').substr(0, 64);
  const std::string_view text = in.Rest().substr(0, 512);
  const bool got = GlobMatch(pattern, text);
  MXLIMIT_FUZZ_CHECK(got == ReferenceGlob(pattern, text));

  const PatternShape shape = ShapeOf(pattern);
  size_t stars = 0;
  for (char c : pattern) stars += c == '*';
  MXLIMIT_FUZZ_CHECK(shape.literal_bytes == pattern.size() - stars);
  MXLIMIT_FUZZ_CHECK(pattern.substr(0, shape.prefix.size()) == shape.prefix);
  MXLIMIT_FUZZ_CHECK(shape.prefix.find('*') == std::string_view::npos);
  switch (shape.kind) {
    case PatternKind::kExact:
      MXLIMIT_FUZZ_CHECK(stars == 0 && shape.prefix == pattern);
      MXLIMIT_FUZZ_CHECK(got == (pattern == text));
      break;
    case PatternKind::kPrefix:
      MXLIMIT_FUZZ_CHECK(stars > 0 &&
                         shape.prefix.size() + stars == pattern.size());
      MXLIMIT_FUZZ_CHECK(got ==
                         (text.substr(0, shape.prefix.size()) == shape.prefix));
      break;
    case PatternKind::kInnerStar:
      // A literal byte follows some '*'.
      MXLIMIT_FUZZ_CHECK(pattern.find_first_not_of('*', shape.prefix.size()) !=
                         std::string_view::npos);
      break;
  }
}

constexpr std::array<std::string_view, 6> kMethods = {"GET",    "PUT",  "POST",
                                                      "DELETE", "HEAD", "get"};

// A valid pattern from fuzzer bytes: bytes no pattern may hold become 'x',
// and it starts with '/' or '*'.
std::string PatternFrom(std::string_view bytes) {
  std::string p(bytes.substr(0, 96));
  for (char& c : p) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7F || c == '?' || c == '#') c = 'x';
  }
  if (p.empty() || (p[0] != '/' && p[0] != '*')) p.insert(0, "/");
  return p;
}

// Compiling a policy set costs time per route key and form, so most inputs
// compile against a small table (the push pack and a few client routes as
// extra templates, the operator's way of adding routes), and one in 16
// against the default packs, where the built-ins meet every route (such an
// input costs about five against the small table). A hash of the whole input
// draws the table, so every mutation draws it again: drawn by an input byte,
// it would stay with a seed and all it begets.
struct RouteTable {
  const RouteNormalizer* normalizer;
  const PreparedRouteForms* forms;
};

RouteTable MakeTable(const RouteOptions& options) {
  const auto* normalizer = new RouteNormalizer(options);
  return {normalizer, new PreparedRouteForms(normalizer->forms())};
}

const RouteTable& DefaultTable() {
  static const RouteTable t = MakeTable(RouteOptions{});
  return t;
}

const RouteTable& SmallTable() {
  static const RouteTable t = [] {
    RouteOptions options;
    options.packs = {"push"};
    for (const char* route : {
             "/_matrix/client/v3/login",
             "/_matrix/client/v3/register",
             "/_matrix/client/v3/sync",
             "/_matrix/client/v3/keys/query",
             "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}",
             "/_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}",
             "/_matrix/client/v3/join/{roomIdOrAlias}",
             "/_matrix/media/v3/upload",
         }) {
      options.extra.push_back({route, ""});
    }
    options.extra.push_back(
        {"/_matrix/client/r0/login", "/_matrix/client/v3/login"});
    return MakeTable(options);
  }();
  return t;
}

const PreparedRouteForms& NoForms() {
  static const PreparedRouteForms* f = new PreparedRouteForms({});
  return *f;
}

// The naive resolution the compiled set must reproduce.
void RunPolicySet(FuzzInput& in, bool default_table) {
  const uint8_t flags = in.Byte();
  const RouteTable& table = default_table ? DefaultTable() : SmallTable();
  const RouteNormalizer& normalizer = *table.normalizer;
  const size_t count = in.Byte() % 9;
  std::vector<Policy> policies;
  for (size_t i = 0; i < count; ++i) {
    Policy p;
    p.name = "p" + std::to_string(i);
    const uint8_t bits = in.Byte();
    p.scope = (bits & 1) ? Scope::kUser : Scope::kIp;
    p.rate = *Rate::Create(10, TimeUnit::kMinute);
    for (size_t m = 0; m < 5; ++m) {
      if (bits & (2u << m)) p.methods.emplace_back(kMethods[m]);
    }
    p.match = {PatternFrom(in.Until('\n'))};
    // A second pattern now and then, in another layer, or in shadow mode.
    if (in.Byte() % 4 == 0) p.match.push_back(PatternFrom(in.Until('\n')));
    const uint8_t more = in.Byte();
    if (more & 1) p.layer = (more & 2) ? "net" : "agg";
    p.shadow_mode = (more & 4) != 0;
    // Now and then an in-flight policy, or one with query conditions.
    if (more & 0x20) {
      p.rate = Rate::Unlimited();
      p.concurrency = Concurrency{3, std::chrono::seconds(1)};
    }
    if (more & 0x40) p.query_absent = {"since"};
    if (more & 0x80) p.query_present = {(more & 1) ? "timeout" : "since"};
    // Now and then one of the scopes whose subject the request may lack.
    if (const int extra = (more >> 3) & 3; extra != 0) {
      constexpr Scope kExtra[] = {Scope::kOrigin, Scope::kRoom, Scope::kTarget};
      p.scope = kExtra[extra - 1];
    }
    p.share_threshold =
        (bits & 0x80) &&
        (p.match.size() > 1 || p.match[0].find('*') != std::string::npos);
    policies.push_back(std::move(p));
  }
  const std::string_view method = kMethods[in.Byte() % kMethods.size()];
  const std::string_view target = in.Rest();
  const RequestSubjects subjects{.user = (flags & 2) != 0,
                                 .origin = (flags & 8) != 0,
                                 .target = (flags & 16) != 0,
                                 .request_target = target};
  const std::string_view path = QueryFreePath(target);

  absl::StatusOr<PolicySet> set = PolicySet::Compile(
      policies, /*include_builtins=*/flags & 1, normalizer.keys(),
      /*all_shadow=*/false,
      // With the route forms, Resolve may answer from the route alone; the
      // naive resolution below holds both ways to the same rules.
      (flags & 4) ? *table.forms : NoForms());
  if (!set.ok()) {
    MXLIMIT_FUZZ_CHECK(set.status().code() ==
                       absl::StatusCode::kInvalidArgument);
    return;
  }
  const Route route = normalizer.Normalize(method, target);
  const PolicySet::Resolution r =
      set->Resolve(method, route.id, path, subjects);
  const testing::NaiveResolution naive =
      testing::NaiveResolve(*set, method, route.key, path, subjects);
  MXLIMIT_FUZZ_CHECK(testing::AsNaive(*set, r) == naive);

  auto expected_route = [&](PolicyId id) -> RouteId {
    if (id == kNoPolicy) return kFallbackRouteId;
    return set->policy(id).share_threshold ? kSharedBucketRoute : route.id;
  };
  MXLIMIT_FUZZ_CHECK(r.ip_bucket_route == expected_route(r.ip));
  MXLIMIT_FUZZ_CHECK(r.user_bucket_route == expected_route(r.user));
  for (const ResolvedPolicy& a : r.all()) {
    MXLIMIT_FUZZ_CHECK(a.bucket_route == expected_route(a.policy));
  }

  testing::NaiveResolution explained;
  for (const PolicyMatch& m : set->Explain(method, route.id, path, subjects)) {
    if (m.verdict != MatchVerdict::kChosen) continue;
    const testing::NaiveSlot slot = testing::NaiveSlotOf(*set, m.policy);
    MXLIMIT_FUZZ_CHECK(explained.count(slot) == 0);  // One chosen per group.
    explained[slot] = m.policy;
  }
  MXLIMIT_FUZZ_CHECK(explained == naive);
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mxlimit::fuzz::FuzzInput in(data, size);
  if (in.Byte() & 1) {
    uint32_t hash = 2166136261u;  // FNV-1a
    for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 16777619u;
    mxlimit::fuzz::RunPolicySet(in, /*default_table=*/hash % 16 == 0);
  } else {
    mxlimit::fuzz::RunGlob(in);
  }
  return 0;
}
