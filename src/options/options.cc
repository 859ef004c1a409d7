#include "mxlimit/options.h"

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/options/store_url.h"

namespace mxlimit {

absl::Status ValidateTableOptions(const TableOptions& t) {
  auto capacity = [](const char* field, size_t value) -> absl::Status {
    if (value >= 1 && value <= TableOptions::kMaxCapacity) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat(field, ": got ", value,
                                                   ", expected 1 to ",
                                                   TableOptions::kMaxCapacity));
  };
  absl::Status s = capacity("tables.ip.capacity", t.ip_capacity);
  if (!s.ok()) return s;
  s = capacity("tables.user.capacity", t.user_capacity);
  if (!s.ok()) return s;
  s = capacity("tables.origin.capacity", t.origin_capacity);
  if (!s.ok()) return s;
  s = capacity("tables.room.capacity", t.room_capacity);
  if (!s.ok()) return s;
  s = capacity("tables.target.capacity", t.target_capacity);
  if (!s.ok()) return s;
  s = capacity("tables.leases.capacity", t.lease_capacity);
  if (!s.ok()) return s;
  if (t.ipv4_prefix < 0 || t.ipv4_prefix > 32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tables.ip.ipv4_prefix: got ", t.ipv4_prefix, ", expected 0 to 32"));
  }
  if (t.ipv6_prefix < 0 || t.ipv6_prefix > 128) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tables.ip.ipv6_prefix: got ", t.ipv6_prefix, ", expected 0 to 128"));
  }
  return absl::OkStatus();
}

namespace {

// store.tls: only with a rediss:// URL, and a client key only beside its
// certificate. Whether the files hold what they should is the store's to
// find when it loads them.
absl::Status ValidateStoreTls(const StoreOptions& s) {
  const StoreOptions::Tls& tls = s.tls;
  if (tls == StoreOptions::Tls{}) return absl::OkStatus();
  if (!s.url.empty() && !internal::IsTlsStoreUrl(s.url)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store.tls: ", internal::ToAbsl(internal::kStoreTlsWithoutTls)));
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        tls.cert_file.empty()
            ? "store.tls.key_file: given without store.tls.cert_file; a "
              "client key needs its certificate"
            : "store.tls.cert_file: given without store.tls.key_file; a "
              "client certificate needs its key");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateStoreOptions(const StoreOptions& s) {
  if (!s.url.empty() &&
      s.key_secret.size() < StoreOptions::kMinKeySecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store.key_secret: got ", s.key_secret.size(),
        " bytes, expected at "
        "least ",
        StoreOptions::kMinKeySecretBytes,
        " (the same random secret on every process that shares buckets)"));
  }
  if (s.timeout.count() < 100 || s.timeout.count() > 10'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("store.timeout: got ", s.timeout.count(),
                     " microseconds, expected 100 microseconds to 10 seconds"));
  }
  if (s.sync_interval.count() < 1 || s.sync_interval.count() > 60'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("store.sync_interval: got ", s.sync_interval.count(),
                     " ms, expected 1 ms to 60 s"));
  }
  if (!(s.fallback_share > 0.0 && s.fallback_share <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store.fallback_share: got ", s.fallback_share,
                     ", expected a number in (0, 1], e.g. 0.25 for 4 "
                     "processes"));
  }
  if (s.connections < 1 || s.connections > StoreOptions::kMaxConnections) {
    return absl::InvalidArgumentError(
        absl::StrCat("store.connections: got ", s.connections,
                     ", expected 1 to ", StoreOptions::kMaxConnections));
  }
  if (s.max_in_flight < 1 || s.max_in_flight > 1'000'000) {
    return absl::InvalidArgumentError(absl::StrCat("store.max_in_flight: got ",
                                                   s.max_in_flight,
                                                   ", expected 1 to 1000000"));
  }
  return ValidateStoreTls(s);
}

}  // namespace mxlimit
