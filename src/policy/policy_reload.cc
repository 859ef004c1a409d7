// mxlimit/policy.h, "Reloads": which policy changes reset buckets. The
// engine's Install keeps buckets exactly when KeepsBuckets says so, and
// `mxlimit check-config --reload-against` reports BucketResetReason, so the
// two cannot disagree.

#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/policy.h"
#include "src/policy/bucket_fingerprint.h"
#include "src/util/siphash.h"

namespace mxlimit {
namespace {

using internal::ToAbsl;

std::string_view ScopeText(Scope scope) { return ScopeName(scope); }

std::string PrefixText(const std::optional<ClientPrefix>& prefix) {
  if (!prefix.has_value()) return "the tables'";
  return absl::StrCat("{ipv4: ", prefix->ipv4, ", ipv6: ", prefix->ipv6, "}");
}

// Whether a policy's buckets count bytes rather than requests.
bool ByteCost(const Policy& p) { return p.cost != CostKind::kRequests; }

}  // namespace

bool KeepsBuckets(const Policy& before, const Policy& after) {
  return before.scope == after.scope && before.rate == after.rate &&
         before.concurrency.has_value() == after.concurrency.has_value() &&
         before.share_threshold == after.share_threshold &&
         before.layer == after.layer &&
         before.client_prefix == after.client_prefix &&
         before.sharing == after.sharing && ByteCost(before) == ByteCost(after);
}

std::string BucketResetReason(const Policy& before, const Policy& after) {
  if (before.scope != after.scope) {
    return absl::StrCat("scope ", ToAbsl(ScopeText(before.scope)), " -> ",
                        ToAbsl(ScopeText(after.scope)));
  }
  if (before.rate != after.rate) {
    return absl::StrCat("rate ", before.rate.ToString(), " -> ",
                        after.rate.ToString());
  }
  if (before.concurrency.has_value() != after.concurrency.has_value()) {
    auto text = [](const std::optional<Concurrency>& c) {
      return c.has_value()
                 ? absl::StrCat("concurrency ", c->limit, " in flight")
                 : std::string("no concurrency");
    };
    return absl::StrCat(text(before.concurrency), " -> ",
                        text(after.concurrency));
  }
  if (before.share_threshold != after.share_threshold) {
    return absl::StrCat("share_threshold ",
                        before.share_threshold ? "true" : "false", " -> ",
                        after.share_threshold ? "true" : "false");
  }
  if (before.layer != after.layer) {
    return absl::StrCat("layer ", before.layer, " -> ", after.layer);
  }
  if (before.client_prefix != after.client_prefix) {
    return absl::StrCat("client_prefix ", PrefixText(before.client_prefix),
                        " -> ", PrefixText(after.client_prefix));
  }
  if (before.sharing != after.sharing) {
    // A shared bucket mirrors the store and a local one is the whole truth:
    // neither can stand for the other.
    return absl::StrCat("sharing ", ToAbsl(SharingName(before.sharing)), " -> ",
                        ToAbsl(SharingName(after.sharing)));
  }
  if (ByteCost(before) != ByteCost(after)) {
    // The bucket's numbers are requests on one side and bytes on the other.
    return absl::StrCat("cost ", ToAbsl(CostKindName(before.cost)), " -> ",
                        ToAbsl(CostKindName(after.cost)));
  }
  return "";
}

}  // namespace mxlimit

namespace mxlimit::internal {

uint64_t BucketFingerprint(const Policy& p) {
  // Length-prefixed fields, so no two policies serialize alike.
  std::string bytes;
  auto add = [&bytes](std::string_view field) {
    const uint32_t n = static_cast<uint32_t>(field.size());
    bytes.append(reinterpret_cast<const char*>(&n), sizeof(n));
    bytes.append(field);
  };
  add(p.name);
  add(ScopeText(p.scope));
  add(absl::StrCat(p.rate.unlimited() ? "u"
                   : p.rate.blocked() ? "b"
                                      : "r",
                   p.rate.interval_ns(), "/", p.rate.burst()));
  add(p.concurrency.has_value() ? "c" : "");
  add(p.share_threshold ? "s" : "");
  add(p.layer);
  add(p.client_prefix.has_value()
          ? absl::StrCat(p.client_prefix->ipv4, "/", p.client_prefix->ipv6)
          : "");
  add(absl::StrCat(static_cast<int>(p.sharing)));
  add(ByteCost(p) ? "bytes" : "");
  // A fixed key: the fingerprint names policies, it guards no secret.
  const SipDigest d =
      SipHash128(SipKey{0x6d786c696d6974ULL, 0x736e617073686f74ULL}, bytes);
  uint64_t out = 0;
  std::memcpy(&out, d.data(), sizeof(out));
  return out;
}

}  // namespace mxlimit::internal
