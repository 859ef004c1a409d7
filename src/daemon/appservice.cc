#include "src/daemon/appservice.h"

#include <yaml-cpp/yaml.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace mxlimit::daemon {

absl::StatusOr<AppserviceRegistry> AppserviceRegistry::Load(
    const std::vector<std::string>& files, const internal::SipKey& secret) {
  AppserviceRegistry registry;
  registry.secret_ = secret;
  for (const std::string& file : files) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(file);
    } catch (const YAML::BadFile&) {
      return absl::NotFoundError(
          absl::StrCat(file, ": cannot read the appservice registration"));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
    }
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": an appservice registration must be a mapping"));
    }
    Appservice service;
    std::string token;
    try {
      const YAML::Node as_token = root["as_token"];
      if (!as_token || !as_token.IsScalar() ||
          as_token.as<std::string>().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(file, ": missing or empty `as_token`"));
      }
      token = as_token.as<std::string>();
      if (const YAML::Node id = root["id"]; id && id.IsScalar()) {
        service.id = id.as<std::string>();
      }
      if (const YAML::Node limited = root["rate_limited"]; limited) {
        if (!limited.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat(file, ":", limited.Mark().line + 1,
                           ": `rate_limited` must be true or false"));
        }
        service.rate_limited = limited.as<bool>();
      }
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
    }
    const TokenDigest key = DigestOf(secret, token);
    if (registry.by_token_.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": `as_token` is already used by another registration"));
    }
    registry.by_token_.emplace(key, registry.services_.size());
    registry.services_.push_back(std::move(service));
  }
  return registry;
}

const Appservice* AppserviceRegistry::Find(std::string_view token) const {
  if (services_.empty() || token.empty()) return nullptr;
  const auto it = by_token_.find(DigestOf(secret_, token));
  return it == by_token_.end() ? nullptr : &services_[it->second];
}

}  // namespace mxlimit::daemon
