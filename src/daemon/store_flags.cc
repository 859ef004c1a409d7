#include "src/daemon/store_flags.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "src/util/secret_file.h"

namespace mxlimit::daemon {
namespace {

absl::StatusOr<std::string> ReadSecret(const std::string& path) {
  absl::StatusOr<std::string> text = internal::ReadSecretFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("--store-secret-file ", path, ": ",
                                     text.status().message()));
  }
  if (text->size() < StoreOptions::kMinKeySecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store-secret-file ", path, ": holds ", text->size(),
        " bytes, expected at least ", StoreOptions::kMinKeySecretBytes,
        " (the same random secret on every process, e.g. from openssl rand "
        "-hex 32)"));
  }
  return *std::move(text);
}

}  // namespace

absl::StatusOr<StoreOverrides> StoreOverrides::FromFlags(const Flags& flags) {
  StoreOverrides o;
  o.url_ = flags.store_url;
  o.secret_file_ = flags.store_secret_file;
  if (!flags.store_secret_file.empty()) {
    absl::StatusOr<std::string> secret = ReadSecret(flags.store_secret_file);
    if (!secret.ok()) return secret.status();
    o.key_secret_ = *std::move(secret);
  }
  return o;
}

absl::Status StoreOverrides::Apply(LimiterConfig& config) const {
  if (!url_.empty()) config.store.url = url_;
  if (!key_secret_.empty()) config.store.key_secret = key_secret_;
  if (config.store.url.empty()) {
    if (!secret_file_.empty()) {
      return absl::InvalidArgumentError(
          "--store-secret-file is given, but no store: add --store URL or a "
          "store: section to the config");
    }
    return absl::OkStatus();
  }
  if (config.store.key_secret.empty()) {
    return absl::InvalidArgumentError(
        "--store needs a key secret: store.key_secret or "
        "store.key_secret_file in the config, or --store-secret-file");
  }
  return absl::OkStatus();
}

}  // namespace mxlimit::daemon
